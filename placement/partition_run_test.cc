// Partitioned steps compute what the unpartitioned graph computes: each partition
// runs in its own Executor, and a test rendezvous (one thread, no actors) carries
// the tensors from each _Send to its _Recv.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "graph/graph.h"
#include "graph/prune.h"
#include "graph/tensor.h"
#include "kernels/executor.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"
#include "placement/partition.h"
#include "placement/placer.h"

namespace actorflow {
namespace {

const char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

// Matches each Send with its Recv by (send_device, recv_device, tensor_name). Every
// callback runs on the test's thread.
class TestRendezvous {
 public:
  static std::string Key(const Node& n) {
    return n.attr<std::string>("send_device") + ";" + n.attr<std::string>("recv_device") + ";" +
           n.attr<std::string>("tensor_name");
  }
  void Send(const std::string& key, const Tensor& value) {
    auto it = waiting_.find(key);
    if (it == waiting_.end()) {
      values_[key] = value;
      return;
    }
    auto [ctx, done] = std::move(it->second);
    waiting_.erase(it);
    ctx->set_output(0, value);
    done();
  }
  void Recv(const std::string& key, KernelContext* ctx, std::function<void()> done) {
    auto it = values_.find(key);
    if (it == values_.end()) {
      waiting_[key] = {ctx, std::move(done)};
      return;
    }
    ctx->set_output(0, it->second);
    done();
  }

 private:
  std::map<std::string, Tensor> values_;
  std::map<std::string, std::pair<KernelContext*, std::function<void()>>> waiting_;
};

class SendKernel : public Kernel {
 public:
  SendKernel(const Node& node, TestRendezvous* rendezvous) : Kernel(node), r_(rendezvous) {}
  void Compute(KernelContext* ctx) override {
    r_->Send(TestRendezvous::Key(node()), ctx->input(0));
  }

 private:
  TestRendezvous* r_;
};

class RecvKernel : public Kernel {
 public:
  RecvKernel(const Node& node, TestRendezvous* rendezvous) : Kernel(node), r_(rendezvous) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    r_->Recv(TestRendezvous::Key(node()), ctx, std::move(done));
  }

 private:
  TestRendezvous* r_;
};

// Places, partitions and runs one step; resources persist per device across steps.
class PartitionedRunner {
 public:
  explicit PartitionedRunner(const Graph& graph) : graph_(graph) {}

  // The fetched tensors by name, after every partition finished.
  std::map<std::string, Tensor> Run(const std::map<std::string, Tensor>& feeds,
                                    const std::vector<std::string>& fetches,
                                    const std::vector<std::string>& targets) {
    std::vector<std::string> feed_names;
    for (const auto& [name, value] : feeds) feed_names.push_back(name);
    auto sig = ResolveRunSignature(graph_, feed_names, fetches, targets);
    EXPECT_TRUE(sig.ok()) << sig.status();
    auto nodes = PruneForRun(graph_, *sig);
    EXPECT_TRUE(nodes.ok()) << nodes.status();
    PlacerOptions options;
    options.devices = {{kCpu0, "CPU"}, {kCpu1, "CPU"}};
    auto placement = PlaceNodes(graph_, *nodes, options);
    EXPECT_TRUE(placement.ok()) << placement.status();
    auto partitions = Partition(graph_, *nodes, *placement, sig->feeds, sig->fetches, sig->targets);
    EXPECT_TRUE(partitions.ok()) << partitions.status();
    if (!partitions.ok()) return {};
    partitions_ = std::move(partitions).value();

    TestRendezvous rendezvous;
    std::vector<std::unique_ptr<Kernel>> kernels;
    std::vector<std::unique_ptr<Executor>> executors;
    std::vector<std::optional<StepResult>> results(partitions_.size());
    for (size_t i = 0; i < partitions_.size(); ++i) {
      const DevicePartition& p = partitions_[i];
      auto psig = ResolveRunSignature(*p.graph, p.feed_inputs, p.fetches, p.targets);
      EXPECT_TRUE(psig.ok()) << psig.status();
      auto pnodes = PruneForRun(*p.graph, *psig);
      EXPECT_TRUE(pnodes.ok()) << pnodes.status();
      ExecutorSpec spec;
      spec.graph = p.graph.get();
      spec.nodes = *pnodes;
      spec.feeds = psig->feeds;
      spec.fetches = psig->fetches;
      spec.device_name = p.device;
      KernelLookup lookup = [&](const Node& node) -> StatusOr<Kernel*> {
        std::unique_ptr<Kernel> kernel;
        if (node.op() == "_Send") {
          kernel = std::make_unique<SendKernel>(node, &rendezvous);
        } else if (node.op() == "_Recv") {
          kernel = std::make_unique<RecvKernel>(node, &rendezvous);
        } else {
          AF_ASSIGN_OR_RETURN(kernel, KernelRegistry::Global().CreateKernel(node, kDeviceCpu));
        }
        kernels.push_back(std::move(kernel));
        return kernels.back().get();
      };
      auto executor = Executor::Create(std::move(spec), lookup);
      EXPECT_TRUE(executor.ok()) << executor.status();
      if (!executor.ok()) return {};
      executors.push_back(std::move(executor).value());
    }
    for (size_t i = 0; i < partitions_.size(); ++i) {
      StepArgs args;
      for (const std::string& f : partitions_[i].feeds) args.feed_values.push_back(feeds.at(f));
      args.resources = &resources_[partitions_[i].device];
      args.step_id = ++step_id_;
      executors[i]->RunAsync(std::move(args), [&results, i](StepResult r) { results[i] = r; });
    }
    std::map<std::string, Tensor> fetched;
    for (size_t i = 0; i < partitions_.size(); ++i) {
      EXPECT_TRUE(results[i].has_value()) << partitions_[i].device << " did not finish";
      if (!results[i]) continue;
      EXPECT_TRUE(results[i]->status.ok()) << results[i]->status;
      executed_[partitions_[i].device] = results[i]->executed_nodes;
      for (size_t k = 0; k < results[i]->fetches.size(); ++k) {
        fetched[partitions_[i].fetches[k]] = results[i]->fetches[k];
      }
    }
    return fetched;
  }

  const std::vector<std::string>& Executed(const std::string& device) { return executed_[device]; }

 private:
  const Graph& graph_;
  std::vector<DevicePartition> partitions_;
  std::map<std::string, ResourceManager> resources_;
  std::map<std::string, std::vector<std::string>> executed_;
  int64_t step_id_ = 0;
};

NodeDef Def(std::string name, std::string op, std::vector<std::string> inputs = {},
            AttrMap attrs = {}, std::string device = "") {
  return NodeDef{std::move(name), std::move(op), std::move(inputs), std::move(attrs),
                 std::move(device)};
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

TEST(PartitionRunTest, ATwoDeviceStepComputesWhatTheGraphMeans) {
  auto graph = Graph::FromNodeDefs({
      Def("x", "Placeholder", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{2}}}),
      Def("a", "Const", {}, {{"value", Tensor::FromVector<float>({10, 20})}}),
      Def("b", "Add", {"x", "a"}),
      Def("c", "Mul", {"b", "b"}, {}, "/cpu:1"),
      Def("e", "Add", {"x", "c"}, {}, "/cpu:1"),
      Def("back", "Identity", {"e"}),
      Def("n", "NoOp", {"^c"}),
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  PartitionedRunner runner(**graph);
  auto fetched = runner.Run({{"x", Tensor::FromVector<float>({1, 2})}}, {"b", "e", "back"}, {"n"});
  ASSERT_EQ(fetched.size(), 3u);
  EXPECT_EQ(Values(fetched["b"]), (std::vector<float>{11, 22}));
  EXPECT_EQ(Values(fetched["e"]), (std::vector<float>{122, 486}));
  EXPECT_EQ(Values(fetched["back"]), (std::vector<float>{122, 486}));
  // n waited for c on the other device and then ran.
  const auto& executed = runner.Executed(kCpu0);
  EXPECT_NE(std::find(executed.begin(), executed.end(), "n"), executed.end());
}

TEST(PartitionRunTest, AVariableAssignedOnOneDeviceIsReadFromAnother) {
  auto graph = Graph::FromNodeDefs({
      Def("v", "Variable", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{2}}}, "/cpu:1"),
      Def("init", "Const", {}, {{"value", Tensor::FromVector<float>({3, 4})}}),
      Def("assign", "Assign", {"v", "init"}),
      Def("read", "Identity", {"v"}),
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  PartitionedRunner runner(**graph);
  runner.Run({}, {}, {"assign"});
  auto fetched = runner.Run({}, {"read"}, {});
  ASSERT_EQ(fetched.count("read"), 1u);
  EXPECT_EQ(Values(fetched["read"]), (std::vector<float>{3, 4}));
}

}  // namespace
}  // namespace actorflow
