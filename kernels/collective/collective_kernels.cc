// CPU kernels of the collective ops (graph/ops_collective.cc). Each is asynchronous:
// it runs its member's side of the algorithm (collective_algorithms.h) over the
// step's Rendezvous, so a chunk is a tensor sent to a peer device as a Send/Recv
// pair's is (by reference in-process, one raw byte block across processes), and a
// member waiting for a peer's chunk holds no thread.
//
// Keys: the members' steps have ids of their own (between-graph replicas run
// separate sessions), so a chunk's key carries an execution every member agrees on
// instead: (group, instance, the count of this member's earlier runs of it, the
// algorithm's tag), under the step id kCollectiveStepId; RendezvousKey::waiting_step
// ties a waiting Recv to the local step so that an abort fails it. The counts live
// in the device's ResourceManager, so they survive a partition registered again.
#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/types.h"
#include "kernels/collective/collective_algorithms.h"
#include "kernels/kernel.h"
#include "kernels/rendezvous.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

// The step id of every collective chunk's key (real step ids are positive).
constexpr int64_t kCollectiveStepId = -1;

// How many times this member ran one collective (group, instance).
class CollectiveExecutions : public Resource {
 public:
  int64_t Next() { return next_.fetch_add(1); }
  std::string DebugString() const override { return "CollectiveExecutions"; }

 private:
  std::atomic<int64_t> next_{0};
};

// One execution's view of the group, over the step's rendezvous.
class RendezvousCollectiveTransport : public CollectiveTransport {
 public:
  RendezvousCollectiveTransport(Rendezvous* rendezvous, const std::vector<std::string>* devices,
                                int rank, std::string prefix, int64_t local_step)
      : rendezvous_(rendezvous),
        devices_(devices),
        rank_(rank),
        prefix_(std::move(prefix)),
        local_step_(local_step) {}

  Status Send(int to_rank, const std::string& tag, const Tensor& value) override {
    return rendezvous_->Send(Key(rank_, to_rank, tag), value);
  }
  void RecvAsync(int from_rank, const std::string& tag, RecvCallback done) override {
    rendezvous_->RecvAsync(Key(from_rank, rank_, tag), std::move(done));
  }

 private:
  RendezvousKey Key(int from, int to, const std::string& tag) const {
    RendezvousKey key;
    key.step_id = kCollectiveStepId;
    key.tensor_name = prefix_ + tag;
    key.send_device = (*devices_)[from];
    key.recv_device = (*devices_)[to];
    key.waiting_step = local_step_;
    return key;
  }

  Rendezvous* rendezvous_;
  const std::vector<std::string>* devices_;
  int rank_;
  std::string prefix_;
  int64_t local_step_;
};

enum class CollectiveKind { kAllReduce, kBroadcast, kAllGather, kReduceScatter };

class CollectiveKernel : public Kernel {
 public:
  CollectiveKernel(const Node& node, CollectiveKind kind)
      : Kernel(node),
        kind_(kind),
        group_key_(node.attr<std::string>("group_key")),
        devices_(node.attr<std::vector<std::string>>("group_devices")),
        instance_key_(node.attr<int64_t>("instance_key")) {
    if (node.attrs().count("merge_op") > 0) {
      auto op = ReduceOpFromName(node.attr<std::string>("merge_op"));
      if (op.ok()) reduce_op_ = *op;
    }
    if (node.attrs().count("algorithm") > 0) {
      auto algorithm = CollectiveAlgorithmFromName(node.attr<std::string>("algorithm"));
      if (algorithm.ok()) algorithm_ = *algorithm;
    }
    if (node.attrs().count("root_rank") > 0) root_rank_ = static_cast<int>(node.attr<int64_t>("root_rank"));
  }

  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}

  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->rendezvous() == nullptr) {
      ctx->Fail(Code::kFailedPrecondition,
                "collectives run in the actor runtime only (a session without it has no "
                "rendezvous between devices)");
      return done();
    }
    auto member = std::find(devices_.begin(), devices_.end(), ctx->device_name());
    if (member == devices_.end()) {
      std::string list;
      for (const std::string& d : devices_) list += (list.empty() ? "" : ", ") + d;
      ctx->Fail(Code::kInvalidArgument,
                "it runs on device " + ctx->device_name() + ", which is not a member of group '" +
                    group_key_ + "' (" + list + "): name every member by its full device name");
      return done();
    }
    const int rank = static_cast<int>(member - devices_.begin());
    auto executions = ctx->resources()->LookupOrCreate<CollectiveExecutions>(
        "_collectives", group_key_ + "/" + std::to_string(instance_key_) + "@" + *member,
        [] { return std::make_shared<CollectiveExecutions>(); });
    if (!executions.ok()) {
      ctx->SetStatus(executions.status());
      return done();
    }
    const int64_t execution = (*executions)->Next();
    auto transport = std::make_shared<RendezvousCollectiveTransport>(
        ctx->rendezvous(), &devices_, rank,
        "collective/" + group_key_ + "/" + std::to_string(instance_key_) + "/" +
            std::to_string(execution) + "/",
        ctx->step_id());
    const CollectiveMember me{rank, static_cast<int>(devices_.size())};
    const Node* node = &this->node();
    // `transport` rides in the callback: the algorithm's state and every pending Recv
    // hold the callback until the collective ends.
    CollectiveDone finish = [ctx, node, transport, done = std::move(done)](const Status& s,
                                                                           Tensor result) {
      if (s.ok()) {
        ctx->set_output(0, std::move(result));
      } else {
        ctx->SetStatus(Status(s.code(), node->Describe() + ": " + s.message()));
      }
      done();
    };
    const Tensor& input = ctx->input(0);
    switch (kind_) {
      case CollectiveKind::kAllReduce:
        return StartAllReduce(transport.get(), me, input, reduce_op_, algorithm_, std::move(finish));
      case CollectiveKind::kBroadcast:
        return StartBroadcast(transport.get(), me, root_rank_, input, std::move(finish));
      case CollectiveKind::kAllGather:
        return StartAllGather(transport.get(), me, input, std::move(finish));
      case CollectiveKind::kReduceScatter:
        return StartReduceScatter(transport.get(), me, input, reduce_op_, std::move(finish));
    }
  }

 private:
  const CollectiveKind kind_;
  const std::string group_key_;
  const std::vector<std::string> devices_;
  const int64_t instance_key_;
  ReduceOp reduce_op_ = ReduceOp::kSum;
  CollectiveAlgorithm algorithm_ = CollectiveAlgorithm::kAuto;
  int root_rank_ = 0;
};

KernelFactory Factory(CollectiveKind kind) {
  return [kind](const Node& node) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new CollectiveKernel(node, kind));
  };
}

[[maybe_unused]] const bool kCollectiveKernelsRegistered = [] {
  const DType reducible[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64};
  for (DType t : reducible) {
    KernelRegistration("CollectiveAllReduce", kDeviceCpu, t, Factory(CollectiveKind::kAllReduce));
    KernelRegistration("CollectiveReduceScatter", kDeviceCpu, t,
                       Factory(CollectiveKind::kReduceScatter));
  }
  const DType any[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                       DType::kBool};
  for (DType t : any) {
    KernelRegistration("CollectiveBroadcast", kDeviceCpu, t, Factory(CollectiveKind::kBroadcast));
    KernelRegistration("CollectiveAllGather", kDeviceCpu, t, Factory(CollectiveKind::kAllGather));
  }
  return true;
}();

}  // namespace
}  // namespace actorflow
