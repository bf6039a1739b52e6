// Executor behaviour that DirectSession does not exercise: kernels that complete on
// another thread, aborting a step whose kernel never completes, and per-node records
// that are kept only when asked for.

#include "kernels/executor.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "graph/graph.h"
#include "graph/op_registry.h"

namespace actorflow {
namespace {

Status UnaryFloat(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

// Test-only ops: an identity that completes on another thread, and one that waits
// forever (until its step is aborted).
const OpRegistration kThreadIdentityOp(OpDef{"TestThreadIdentity", 1, 1, {}, 1, {}, false,
                                             UnaryFloat});
const OpRegistration kNeverOp(OpDef{"TestNever", 1, 1, {}, 1, {}, false, UnaryFloat});

class ThreadIdentityKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    std::thread([ctx, done] {
      ctx->set_output(0, ctx->input(0));
      done();
    }).detach();
  }
};

class NeverKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext*, std::function<void()> done) override {
    std::lock_guard<std::mutex> lock(mu);
    pending_done = std::move(done);
  }
  std::mutex mu;
  std::function<void()> pending_done;
};

class CountingConstKernel : public Kernel {
 public:
  explicit CountingConstKernel(const Node& node) : Kernel(node) {}
  void Compute(KernelContext* ctx) override {
    ++runs;
    ctx->set_output(0, ctx->node().attr<Tensor>("value"));
  }
  int runs = 0;
};

class AddOneKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    Tensor out(DType::kFloat32, ctx->input(0).shape());
    for (int64_t i = 0; i < out.NumElements(); ++i) {
      out.data<float>()[i] = ctx->input(0).data<float>()[i] + 1;
    }
    ctx->set_output(0, out);
  }
};

const Node* AddNode(Graph& g, const std::string& name, const std::string& op,
                    std::vector<std::string> inputs, AttrMap attrs = {}) {
  auto n = g.AddNode(NodeDef{name, op, std::move(inputs), std::move(attrs), ""});
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : nullptr;
}

struct Fixture {
  Graph graph;
  std::vector<std::unique_ptr<Kernel>> owned;
  std::map<const Node*, Kernel*> kernels;

  template <typename K>
  K* Use(const Node* node) {
    owned.push_back(std::make_unique<K>(*node));
    kernels[node] = owned.back().get();
    return static_cast<K*>(owned.back().get());
  }
  KernelLookup Lookup() {
    return [this](const Node& n) -> StatusOr<Kernel*> { return kernels.at(&n); };
  }
};

TEST(ExecutorTest, ResumesOnTheThreadOfAnAsynchronousKernelAndDeliversItsOutput) {
  Fixture f;
  const Node* c = AddNode(f.graph, "c", "Const", {}, {{"value", Tensor::Scalar(41.0f)}});
  const Node* t = AddNode(f.graph, "t", "TestThreadIdentity", {"c"});
  const Node* plus = AddNode(f.graph, "plus", "Identity", {"t"});
  f.Use<CountingConstKernel>(c);
  f.Use<ThreadIdentityKernel>(t);
  f.Use<AddOneKernel>(plus);
  ExecutorSpec spec{&f.graph, {c, t, plus}, {}, {Endpoint{plus, 0}}};
  auto ex = Executor::Create(spec, f.Lookup());
  ASSERT_TRUE(ex.ok()) << ex.status();
  StepResult r = (*ex)->Run(StepArgs{});
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.fetches[0].data<float>()[0], 42.0f);
  EXPECT_EQ(r.executed_nodes, (std::vector<std::string>{"c", "t", "plus"}));
}

TEST(ExecutorTest, AbortEndsAStepWhoseKernelNeverCompletesAndLaterStepsRun) {
  Fixture f;
  const Node* c = AddNode(f.graph, "c", "Const", {}, {{"value", Tensor::Scalar(1.0f)}});
  const Node* never = AddNode(f.graph, "never", "TestNever", {"c"});
  auto* const_kernel = f.Use<CountingConstKernel>(c);
  auto* never_kernel = f.Use<NeverKernel>(never);
  ExecutorSpec spec{&f.graph, {c, never}, {}, {Endpoint{never, 0}}};
  auto ex = Executor::Create(spec, f.Lookup());
  ASSERT_TRUE(ex.ok()) << ex.status();

  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  Status status;
  StepHandle handle = (*ex)->RunAsync(StepArgs{}, [&](StepResult r) {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
    status = r.status;
    cv.notify_all();
  });
  handle.Abort(Cancelled("test abort"));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_FALSE(finished) << "the step must wait for its running kernel";
  }
  // The aborted step's kernel completes (as a released Recv would); the step ends.
  std::function<void()> done;
  {
    std::lock_guard<std::mutex> lock(never_kernel->mu);
    done = std::move(never_kernel->pending_done);
  }
  ASSERT_TRUE(done);
  done();
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return finished; }));
  EXPECT_EQ(status.code(), Code::kCancelled);
  EXPECT_EQ(const_kernel->runs, 1);
}

// A step of synchronous kernels only ends inside RunAsync (it keeps its lock from
// start to end, which is safe only because nothing else can reach it meanwhile); an
// Abort through its handle afterwards changes nothing and calls `done` no second time.
TEST(ExecutorTest, AStepOfSynchronousKernelsEndsInsideRunAsync) {
  Fixture f;
  const Node* c = AddNode(f.graph, "c", "Const", {}, {{"value", Tensor::Scalar(1.0f)}});
  const Node* plus = AddNode(f.graph, "plus", "Identity", {"c"});
  const Node* again = AddNode(f.graph, "again", "Identity", {"plus"});
  f.Use<CountingConstKernel>(c);
  f.Use<AddOneKernel>(plus);
  f.Use<AddOneKernel>(again);
  ExecutorSpec spec{&f.graph, {c, plus, again}, {}, {Endpoint{again, 0}}};
  auto ex = Executor::Create(spec, f.Lookup());
  ASSERT_TRUE(ex.ok()) << ex.status();
  EXPECT_FALSE((*ex)->has_async_kernels());
  int calls = 0;
  Status status;
  float value = 0;
  StepHandle handle = (*ex)->RunAsync(StepArgs{}, [&](StepResult r) {
    ++calls;
    status = r.status;
    if (r.status.ok()) value = r.fetches[0].data<float>()[0];
  });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(value, 3.0f);
  handle.Abort(Cancelled("too late"));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(status.ok()) << status;

  Fixture g;
  const Node* gc = AddNode(g.graph, "c", "Const", {}, {{"value", Tensor::Scalar(1.0f)}});
  const Node* gt = AddNode(g.graph, "t", "TestThreadIdentity", {"c"});
  g.Use<CountingConstKernel>(gc);
  g.Use<ThreadIdentityKernel>(gt);
  auto with_async = Executor::Create(ExecutorSpec{&g.graph, {gc, gt}, {}, {Endpoint{gt, 0}}},
                                     g.Lookup());
  ASSERT_TRUE(with_async.ok()) << with_async.status();
  EXPECT_TRUE((*with_async)->has_async_kernels());
}

TEST(ExecutorTest, FeedsReplaceOutputsAndAFetchedFeedReturnsItsValue) {
  Fixture f;
  const Node* c = AddNode(f.graph, "c", "Const", {}, {{"value", Tensor::Scalar(1.0f)}});
  const Node* plus = AddNode(f.graph, "plus", "Identity", {"c"});
  f.Use<CountingConstKernel>(c);
  f.Use<AddOneKernel>(plus);
  ExecutorSpec spec{&f.graph, {plus}, {Endpoint{c, 0}}, {Endpoint{plus, 0}, Endpoint{c, 0}}};
  auto ex = Executor::Create(spec, f.Lookup());
  ASSERT_TRUE(ex.ok()) << ex.status();
  StepArgs args;
  args.feed_values = {Tensor::Scalar(10.0f)};
  StepResult r = (*ex)->Run(args);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.fetches[0].data<float>()[0], 11.0f);
  EXPECT_EQ(r.fetches[1].data<float>()[0], 10.0f);
  EXPECT_EQ(r.executed_nodes, (std::vector<std::string>{"plus"}));
}

TEST(ExecutorTest, RecordsExecutedNodesAndStatsOnlyWhenAsked) {
  Fixture f;
  const Node* c = AddNode(f.graph, "c", "Const", {}, {{"value", Tensor::Scalar(1.0f)}});
  const Node* plus = AddNode(f.graph, "plus", "Identity", {"c"});
  f.Use<CountingConstKernel>(c);
  f.Use<AddOneKernel>(plus);
  ExecutorSpec spec{&f.graph, {c, plus}, {}, {Endpoint{plus, 0}}};
  spec.device_name = "/job:localhost/replica:0/task:0/device:CPU:3";
  auto ex = Executor::Create(spec, f.Lookup());
  ASSERT_TRUE(ex.ok()) << ex.status();

  StepArgs quiet;
  quiet.record_executed = false;
  StepResult r = (*ex)->Run(quiet);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.fetches[0].data<float>()[0], 2.0f);
  EXPECT_TRUE(r.executed_nodes.empty());
  EXPECT_TRUE(r.executed_start_micros.empty());
  EXPECT_TRUE(r.step_stats.empty());

  StepArgs traced;
  traced.collect_stats = true;
  r = (*ex)->Run(traced);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.executed_nodes, (std::vector<std::string>{"c", "plus"}));
  ASSERT_EQ(r.executed_start_micros.size(), 2u);
  EXPECT_LE(r.executed_start_micros[0], r.executed_start_micros[1]);
  ASSERT_EQ(r.step_stats.size(), 2u);
  EXPECT_EQ(r.step_stats[1].node_name, "plus");
  EXPECT_EQ(r.step_stats[1].op, "Identity");
  EXPECT_EQ(r.step_stats[1].device, spec.device_name);
  EXPECT_LE(r.step_stats[1].start_micros, r.step_stats[1].end_micros);
}

TEST(ExecutorTest, RejectsANodeSetMissingAnInput) {
  Fixture f;
  const Node* c = AddNode(f.graph, "c", "Const", {}, {{"value", Tensor::Scalar(1.0f)}});
  const Node* plus = AddNode(f.graph, "plus", "Identity", {"c"});
  f.Use<AddOneKernel>(plus);
  ExecutorSpec spec{&f.graph, {plus}, {}, {Endpoint{plus, 0}}};
  auto ex = Executor::Create(spec, f.Lookup());
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().code(), Code::kInvalidArgument);
  EXPECT_NE(ex.status().message().find("plus"), std::string::npos);
  (void)c;
}

}  // namespace
}  // namespace actorflow

namespace actorflow {
namespace {

TEST(ExecutorVariableCacheTest, KeepsAVariableUntilItsManagerIsClearedAndTellsManagersApart) {
  Fixture f;
  const Node* v = AddNode(f.graph, "v", "Variable", {},
                          {{"dtype", DType::kFloat32}, {"shape", Shape({2})},
                           {"container", std::string()}, {"shared_name", std::string()}});
  ASSERT_NE(v, nullptr);
  f.Use<CountingConstKernel>(v);  // never run: the cache only looks the variable up
  ExecutorSpec spec{&f.graph, {v}, {}, {}};
  auto ex = Executor::Create(spec, f.Lookup());
  ASSERT_TRUE(ex.ok()) << ex.status();
  ResourceManager first, second;
  auto a = (*ex)->VariableOfNode(&first, 0);
  ASSERT_TRUE(a.ok()) << a.status();
  auto again = (*ex)->VariableOfNode(&first, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), a->get());
  // Another manager has its own variable.
  auto other = (*ex)->VariableOfNode(&second, 0);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->get(), a->get());
  // After Clear the old variable is gone: the executor finds the manager's new one.
  first.Clear();
  auto fresh = (*ex)->VariableOfNode(&first, 0);
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->get(), a->get());
  auto looked_up = first.LookupVariable("", "v");
  ASSERT_TRUE(looked_up.ok());
  EXPECT_EQ(fresh->get(), looked_up->get());
}

}  // namespace
}  // namespace actorflow
