// ConditionalAccumulators in the actor runtime: one on a ps task of a LocalCluster
// (servers over loopback), shared by name among the graphs of two workers' sessions,
// and one in process. What is asserted: a take waits for its gradients and returns
// their average; a stale gradient is dropped and counted; a timed-out or aborted take
// leaves the accumulator usable and loses nothing; bad input is a Status naming the
// accumulator or the node.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/client_session.h"
#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/accumulator_ops.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// Every wait on another thread's run has this deadline: a take that never returns
// fails the test instead of hanging it.
constexpr std::chrono::seconds kDeadline{60};

// One client's graph: the float32 [2] accumulator `shared_name` on `device` (the
// session's own without a shared_name), its ops, and feeds for a gradient and a step.
struct AccumulatorGraph {
  Scope root = Scope::NewRootScope();
  Accumulator acc;
  Output local_step, gradient, new_step;
  const Node* apply = nullptr;
  const Node* set_step = nullptr;
  Output take2, take1, take1_200ms, num_accumulated, num_dropped;

  explicit AccumulatorGraph(const std::string& device, const std::string& shared_name = "grads",
                            const Shape& gradient_shape = Shape{2}) {
    Scope on = device.empty() ? root : root.WithDevice(device);
    acc = ConditionalAccumulator(on.WithOpName("acc"), DType::kFloat32, Shape{2}, shared_name);
    local_step = Placeholder(root.WithOpName("local_step"), DType::kInt64, Shape{});
    gradient = Placeholder(root.WithOpName("gradient"), DType::kFloat32, gradient_shape);
    new_step = Placeholder(root.WithOpName("new_step"), DType::kInt64, Shape{});
    apply = AccumulatorApplyGradient(root.WithOpName("apply"), acc, local_step, gradient);
    set_step = AccumulatorSetGlobalStep(root.WithOpName("set_step"), acc, new_step);
    take2 = AccumulatorTakeGradient(root.WithOpName("take2"), acc, 2);
    take1 = AccumulatorTakeGradient(root.WithOpName("take1"), acc, 1);
    take1_200ms = AccumulatorTakeGradient(root.WithOpName("take1_200ms"), acc, 1, 200);
    num_accumulated = AccumulatorNumAccumulated(root.WithOpName("num_accumulated"), acc);
    num_dropped = AccumulatorNumDropped(root.WithOpName("num_dropped"), acc);
    EXPECT_TRUE(root.ok()) << root.status();
  }
};

std::unique_ptr<ClientSession> Open(const AccumulatorGraph& g, const std::string& target) {
  auto s = ClientSession::Create(g.root, target);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(s).value() : nullptr;
}

Status Apply(ClientSession* s, const AccumulatorGraph& g, int64_t step, std::vector<float> v) {
  return s->Run({{g.local_step, step}, {g.gradient, Tensor::FromVector(v)}}, {}, {g.apply},
                nullptr);
}

StatusOr<std::vector<float>> Take(ClientSession* s, const Output& take, RunOptions options = {}) {
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(s->Run(options, {}, {take}, {}, &out, nullptr));
  const Tensor& t = out.at(0);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

// NumAccumulated and NumDropped, or {-1, -1} after an error (reported).
std::pair<int64_t, int64_t> Counts(ClientSession* s, const AccumulatorGraph& g) {
  std::vector<Tensor> out;
  Status st = s->Run({g.num_accumulated, g.num_dropped}, &out);
  EXPECT_TRUE(st.ok()) << st;
  if (!st.ok()) return {-1, -1};
  EXPECT_EQ(out[0].dtype(), DType::kInt32);
  EXPECT_EQ(out[1].dtype(), DType::kInt64);
  return {out[0].data<int32_t>()[0], out[1].data<int64_t>()[0]};
}

class AccumulatorClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
  }
  std::string Worker(int i) const { return *cluster_->Target("worker", i); }

  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(AccumulatorClusterTest, TakeWaitsForBothWorkersGradientsThenDropsAStaleOne) {
  AccumulatorGraph g0("/job:ps/task:0"), g1("/job:ps/task:0"), chief("/job:ps/task:0");
  auto w0 = Open(g0, Worker(0));
  auto w1 = Open(g1, Worker(1));
  auto taker = Open(chief, Worker(0));
  ASSERT_TRUE(w0 && w1 && taker);

  ASSERT_TRUE(Apply(w0.get(), g0, 0, {1.f, 2.f}).ok());
  EXPECT_EQ(Counts(taker.get(), chief), std::make_pair(int64_t{1}, int64_t{0}))
      << "the chief's graph reaches the workers' accumulator by its shared_name";
  auto take = std::async(std::launch::async, [&] { return Take(taker.get(), chief.take2); });
  // One gradient of the two required: the take still waits.
  EXPECT_EQ(take.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  ASSERT_TRUE(Apply(w1.get(), g1, 0, {3.f, 6.f}).ok());
  ASSERT_EQ(take.wait_for(kDeadline), std::future_status::ready);
  StatusOr<std::vector<float>> average = take.get();
  ASSERT_TRUE(average.ok()) << average.status();
  EXPECT_THAT(*average, ::testing::ElementsAre(2.f, 4.f));
  EXPECT_EQ(Counts(taker.get(), chief), std::make_pair(int64_t{0}, int64_t{0}));

  // The take made the global step 1: a gradient computed at step 0 is stale.
  Status stale = Apply(w0.get(), g0, 0, {100.f, 100.f});
  EXPECT_TRUE(stale.ok()) << "a stale gradient is dropped, not an error: " << stale;
  EXPECT_EQ(Counts(w1.get(), g1), std::make_pair(int64_t{0}, int64_t{1}));
  ASSERT_TRUE(Apply(w1.get(), g1, 1, {5.f, 7.f}).ok());
  StatusOr<std::vector<float>> next = Take(taker.get(), chief.take1);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_THAT(*next, ::testing::ElementsAre(5.f, 7.f)) << "the stale gradient was summed";
}

TEST_F(AccumulatorClusterTest, TimedOutTakeLeavesTheAccumulatorUsable) {
  AccumulatorGraph g("/job:ps/task:0", "timeouts");
  auto s = Open(g, Worker(0));
  ASSERT_TRUE(s);
  StatusOr<std::vector<float>> empty = Take(s.get(), g.take1_200ms);
  EXPECT_EQ(empty.status().code(), Code::kDeadlineExceeded) << empty.status();
  EXPECT_THAT(empty.status().message(), HasSubstr("200 ms"));
  EXPECT_THAT(empty.status().message(), HasSubstr("timeouts"));
  ASSERT_TRUE(Apply(s.get(), g, 0, {4.f, 8.f}).ok());
  StatusOr<std::vector<float>> later = Take(s.get(), g.take1_200ms);
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_THAT(*later, ::testing::ElementsAre(4.f, 8.f));
}

TEST_F(AccumulatorClusterTest, TakeAbortedByItsRunDeadlineIsWithdrawnAndTakesNothing) {
  AccumulatorGraph g("/job:ps/task:0", "aborted");
  auto s = Open(g, Worker(1));
  ASSERT_TRUE(s);
  ASSERT_TRUE(Apply(s.get(), g, 0, {1.f, 1.f}).ok());
  RunOptions deadline;
  deadline.timeout_in_ms = 200;
  EXPECT_EQ(Take(s.get(), g.take2, deadline).status().code(), Code::kDeadlineExceeded);
  // Had the withdrawn take stayed in line, it would take the next two gradients.
  EXPECT_EQ(Counts(s.get(), g), std::make_pair(int64_t{1}, int64_t{0}));
  ASSERT_TRUE(Apply(s.get(), g, 0, {3.f, 5.f}).ok());
  StatusOr<std::vector<float>> average = Take(s.get(), g.take2, deadline);
  ASSERT_TRUE(average.ok()) << average.status();
  EXPECT_THAT(*average, ::testing::ElementsAre(2.f, 3.f));
}

TEST_F(AccumulatorClusterTest, GradientOfTheWrongShapeIsInvalidArgumentNamingTheAccumulator) {
  // The gradient's shape is unknown while building: the accumulator checks it.
  AccumulatorGraph g("/job:ps/task:0", "shaped", Shape::UnknownRank());
  auto s = Open(g, Worker(0));
  ASSERT_TRUE(s);
  Status bad = Apply(s.get(), g, 0, {1.f, 2.f, 3.f});
  EXPECT_EQ(bad.code(), Code::kInvalidArgument) << bad;
  EXPECT_THAT(bad.message(), HasSubstr("accumulator '/shaped'"));
  EXPECT_THAT(bad.message(), HasSubstr("[3]"));
  EXPECT_THAT(bad.message(), HasSubstr("'apply'")) << "the node is named too";
  EXPECT_EQ(Counts(s.get(), g), std::make_pair(int64_t{0}, int64_t{0}));
}

TEST_F(AccumulatorClusterTest, SharedNameReusedWithAnotherShapeIsRejected) {
  AccumulatorGraph first("/job:ps/task:0", "clash");
  Scope root = Scope::NewRootScope();
  Accumulator other = ConditionalAccumulator(root.WithDevice("/job:ps/task:0"), DType::kFloat32,
                                             Shape{3}, "clash");
  Output n = AccumulatorNumAccumulated(root, other);
  ASSERT_TRUE(root.ok()) << root.status();
  auto a = Open(first, Worker(0));
  auto b = ClientSession::Create(root, Worker(1));
  ASSERT_TRUE(a && b.ok());
  EXPECT_EQ(Counts(a.get(), first).first, 0);
  std::vector<Tensor> out;
  Status clash = (*b)->Run({n}, &out);
  EXPECT_EQ(clash.code(), Code::kInvalidArgument) << clash;
  EXPECT_THAT(clash.message(), HasSubstr("its shape"));
  EXPECT_THAT(clash.message(), HasSubstr("ConditionalAccumulator 'clash' (float32 [2])"));
}

TEST_F(AccumulatorClusterTest, AccumulatorsWithoutASharedNameArePrivateToTheirSession) {
  AccumulatorGraph g0("/job:ps/task:0", ""), g1("/job:ps/task:0", "");
  auto a = Open(g0, Worker(0));
  auto b = Open(g1, Worker(1));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(Apply(a.get(), g0, 0, {1.f, 1.f}).ok());
  EXPECT_EQ(Counts(a.get(), g0).first, 1);
  EXPECT_EQ(Counts(b.get(), g1).first, 0) << "the second session sees the first one's";
}

// In process (one task): SetGlobalStep, even lowering the step, decides staleness.
TEST(AccumulatorLocalTest, SetGlobalStepDecidesWhichGradientsAreStale) {
  AccumulatorGraph g("");
  auto s = Open(g, "");
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Run({{g.new_step, int64_t{10}}}, {}, {g.set_step}, nullptr).ok());
  ASSERT_TRUE(Apply(s.get(), g, 9, {1.f, 1.f}).ok());
  EXPECT_EQ(Counts(s.get(), g), std::make_pair(int64_t{0}, int64_t{1}));
  ASSERT_TRUE(s->Run({{g.new_step, int64_t{3}}}, {}, {g.set_step}, nullptr).ok());
  ASSERT_TRUE(Apply(s.get(), g, 9, {1.f, 3.f}).ok());
  EXPECT_EQ(Counts(s.get(), g), std::make_pair(int64_t{1}, int64_t{1}));
}

TEST(AccumulatorLocalTest, NumRequiredBelowOneIsInvalidArgumentAtRunTime) {
  AccumulatorGraph g("");
  auto n = Placeholder(g.root.WithOpName("n"), DType::kInt32, Shape{});
  Output take = AccumulatorTakeGradient(g.root.WithOpName("take_n"), g.acc, n);
  ASSERT_TRUE(g.root.ok()) << g.root.status();
  auto s = Open(g, "");
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  Status bad = s->Run({{n, int32_t{0}}}, {take}, &out);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument) << bad;
  EXPECT_THAT(bad.message(), HasSubstr("num_required"));
  EXPECT_THAT(bad.message(), HasSubstr("'take_n'"));
}

TEST(AccumulatorLocalTest, DirectSessionHasNoAccumulators) {
  AccumulatorGraph g("");
  auto s = Open(g, "direct");
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  EXPECT_EQ(s->Run({g.num_accumulated}, &out).code(), Code::kFailedPrecondition);
}

// Bad input known while building is the scope's error, not a crash.
TEST(AccumulatorBuildTest, WrongDtypesAndShapesAreBuildErrorsNamingTheInput) {
  {
    Scope root = Scope::NewRootScope();
    Accumulator acc = ConditionalAccumulator(root, DType::kFloat32, Shape{2});
    AccumulatorApplyGradient(root.WithOpName("bad"), acc, int64_t{0}, Const(root, {1.f, 2.f, 3.f}));
    EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(root.status().message(), HasSubstr("gradient"));
    EXPECT_THAT(root.status().message(), HasSubstr("'bad'"));
  }
  {
    Scope root = Scope::NewRootScope();
    Accumulator acc = ConditionalAccumulator(root, DType::kFloat32, Shape{});
    AccumulatorApplyGradient(root, acc, 1.f, 2.f);  // a float32 local_step
    EXPECT_THAT(root.status().message(), HasSubstr("local_step"));
  }
  {
    Scope root = Scope::NewRootScope();
    ConditionalAccumulator(root, DType::kInt32, Shape{});
    EXPECT_THAT(root.status().message(), HasSubstr("float32 or float64"));
  }
  {
    Scope root = Scope::NewRootScope();
    Accumulator acc = ConditionalAccumulator(root, DType::kFloat64, Shape{-1, 3});
    AccumulatorTakeGradient(root, acc, 0);
    EXPECT_THAT(root.status().message(), HasSubstr("num_required"));
  }
  {
    // Integer literals become the int64 steps the ops take.
    Scope root = Scope::NewRootScope();
    Accumulator acc = ConditionalAccumulator(root, DType::kFloat64, Shape{-1, 3});
    Output take = AccumulatorTakeGradient(root, acc, 2);
    AccumulatorApplyGradient(root, acc, 5, Const(root, Tensor(DType::kFloat64, Shape{4, 3})));
    AccumulatorSetGlobalStep(root, acc, 7);
    ASSERT_TRUE(root.ok()) << root.status();
    EXPECT_EQ(take.dtype(), DType::kFloat64);
    EXPECT_EQ(take.shape(), (Shape{-1, 3}));
  }
}

// Like queue ops, accumulator ops run only on a CPU: a ps task with a GPU places them
// on its CPU.
TEST(AccumulatorBuildTest, AccumulatorOpsHaveCpuKernelsOnly) {
  for (const char* op : {"ConditionalAccumulator", "AccumulatorApplyGradient",
                         "AccumulatorTakeGradient", "AccumulatorSetGlobalStep",
                         "AccumulatorNumAccumulated", "AccumulatorNumDropped"}) {
    EXPECT_FALSE(KernelRegistry::Global().RegisteredDTypes(op, kDeviceCpu).empty()) << op;
    EXPECT_TRUE(KernelRegistry::Global().RegisteredDTypes(op, kDeviceGpu).empty()) << op;
  }
}

}  // namespace
}  // namespace actorflow
