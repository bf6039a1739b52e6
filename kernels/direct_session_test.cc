// DirectSession: the TensorFlow 1.x guide's programs, pruning, variables across
// runs, and every bad input the foundation promises a clear error for.

#include "kernels/direct_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

TEST(DirectSessionTest, AddOfThreeAndFiveIsEight) {
  Scope root = Scope::NewRootScope();
  Add(root.WithOpName("add"), Const(root, 3), Const(root, 5));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"add"}, {}, &out).ok());
  EXPECT_EQ(out[0].dtype(), DType::kInt32);
  EXPECT_EQ(out[0].data<int32_t>()[0], 8);
}

TEST(DirectSessionTest, PowOfSumAndProductRunsOnlyWhatTheFetchNeeds) {
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithOpName("x"), 2);
  auto y = Const(root.WithOpName("y"), 3);
  auto add_op = Add(root.WithOpName("add_op"), x, y);
  auto mul_op = Mul(root.WithOpName("mul_op"), x, y);
  auto useless = Mul(root.WithOpName("useless"), x, add_op);
  Pow(root.WithOpName("pow_op"), add_op, mul_op);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  RunMetadata meta;
  ASSERT_TRUE(session->Run(RunOptions(), {}, {"pow_op"}, {}, &out, &meta).ok());
  EXPECT_EQ(out[0].data<int32_t>()[0], 15625);
  std::vector<std::string> executed = meta.executed_nodes;
  std::sort(executed.begin(), executed.end());
  EXPECT_EQ(executed, (std::vector<std::string>{"add_op", "mul_op", "pow_op", "x", "y"}));
  (void)useless;
}

TEST(DirectSessionTest, PlaceholdersAddScalarsAndVectors) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32);
  auto y = Placeholder(root.WithOpName("y"), DType::kFloat32);
  Add(root.WithOpName("sum"), x, y);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar(3.0f)}, {"y", Tensor::Scalar(4.5f)}}, {"sum"},
                           {}, &out)
                  .ok());
  EXPECT_EQ(out[0].data<float>()[0], 7.5f);
  ASSERT_TRUE(session
                  ->Run({{"x", Tensor::FromVector<float>({1, 3})},
                         {"y", Tensor::FromVector<float>({2, 4})}},
                        {"sum"}, {}, &out)
                  .ok());
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({3, 7})));
}

TEST(DirectSessionTest, VariablesKeepTheirValuesAcrossRuns) {
  Scope root = Scope::NewRootScope();
  auto v = Variable(root.WithOpName("v"), Shape{2}, DType::kFloat32);
  Assign(root.WithOpName("init"), v, Tensor::FromVector<float>({1, 2}));
  AssignAdd(root.WithOpName("inc"), v, Tensor::FromVector<float>({10, 10}));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> before, after;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"v"}, {}, &before).ok());
  ASSERT_TRUE(session->Run({}, {}, {"inc"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {}, {"inc"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"v"}, {}, &after).ok());
  EXPECT_TRUE(TensorsEqual(after[0], Tensor::FromVector<float>({21, 22})));
  // A value read earlier is not changed by later in-place updates.
  EXPECT_TRUE(TensorsEqual(before[0], Tensor::FromVector<float>({1, 2})));
}

TEST(DirectSessionTest, IsVariableInitializedIsFalseUntilTheFirstAssignAndNeverFails) {
  Scope root = Scope::NewRootScope();
  auto v = Variable(root.WithOpName("v"), Shape{2}, DType::kInt64);
  auto u = Variable(root.WithOpName("u"), Shape{}, DType::kFloat32);
  Assign(root.WithOpName("init_v"), v, Tensor::FromVector<int64_t>({1, 2}));
  IsVariableInitialized(root.WithOpName("v_ready"), v);
  IsVariableInitialized(root.WithOpName("u_ready"), u);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"v_ready", "u_ready"}, {}, &out).ok());
  EXPECT_FALSE(out[0].data<bool>()[0]);
  EXPECT_FALSE(out[1].data<bool>()[0]);
  ASSERT_TRUE(session->Run({}, {}, {"init_v"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"v_ready", "u_ready"}, {}, &out).ok());
  EXPECT_TRUE(out[0].data<bool>()[0]);
  EXPECT_FALSE(out[1].data<bool>()[0]);
}

TEST(DirectSessionTest, VariableShapeIsTheLiveValuesShape) {
  Scope root = Scope::NewRootScope();
  auto v = Variable(root.WithOpName("v"), Shape{2, 3}, DType::kFloat32);
  Assign(root.WithOpName("init_v"), v, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  // An unvalidated Assign gives the live value another shape than the node declares.
  Assign(root.WithOpName("reshape_v"), v, Tensor::FromVector<float>({1, 2}), false);
  VariableShape(root.WithOpName("v_shape"), v);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  Status uninitialized = session->Run({}, {"v_shape"}, {}, &out);
  EXPECT_EQ(uninitialized.code(), Code::kFailedPrecondition) << uninitialized;
  EXPECT_THAT(uninitialized.message(), HasSubstr("'v'"));
  ASSERT_TRUE(session->Run({}, {}, {"init_v"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"v_shape"}, {}, &out).ok());
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<int64_t>({2, 3})));
  ASSERT_TRUE(session->Run({}, {}, {"reshape_v"}, nullptr).ok());
  ASSERT_TRUE(session->Run({}, {"v_shape"}, {}, &out).ok());
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<int64_t>({2})));
}

TEST(DirectSessionTest, ControlDependenciesRunFirstAndFetchingAFedTensorReturnsTheFeed) {
  Scope root = Scope::NewRootScope();
  auto v = Variable(root.WithOpName("v"), Shape{}, DType::kFloat32);
  auto init = Assign(root.WithOpName("init"), v, 5.0f);
  auto read = Identity(root.WithOpName("read").WithControlDependencies({init}), v);
  Placeholder(root.WithOpName("p"), DType::kFloat32, Shape{});
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph()).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"p", Tensor::Scalar(9.0f)}}, {"read", "p"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 5.0f);
  EXPECT_EQ(out[1].data<float>()[0], 9.0f);
  (void)read;
}

// ---- Bad input: each error has the right code and names the culprit. ----

TEST(DirectSessionBadInputTest, MissingFeedNamesThePlaceholder) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("needed_x"), DType::kFloat32);
  Neg(root.WithOpName("neg"), x);
  auto session = NewDirectSession(root.graph()).value();
  Status s = session->Run({}, {"neg"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("needed_x")) << s;
}

TEST(DirectSessionBadInputTest, FeedOfWrongDtypeOrShapeNamesTheFeed) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("px"), DType::kFloat32, Shape{-1, 2});
  Neg(root.WithOpName("neg"), x);
  auto session = NewDirectSession(root.graph()).value();
  Status wrong_dtype = session->Run({{"px", Tensor(DType::kInt32, Shape{1, 2})}}, {"neg"}, {},
                                    nullptr);
  EXPECT_EQ(wrong_dtype.code(), Code::kInvalidArgument);
  EXPECT_THAT(wrong_dtype.message(), HasSubstr("px")) << wrong_dtype;
  EXPECT_THAT(wrong_dtype.message(), HasSubstr("int32")) << wrong_dtype;
  Status wrong_shape = session->Run({{"px", Tensor(DType::kFloat32, Shape{2, 3})}}, {"neg"}, {},
                                    nullptr);
  EXPECT_EQ(wrong_shape.code(), Code::kInvalidArgument);
  EXPECT_THAT(wrong_shape.message(), HasSubstr("px")) << wrong_shape;
  EXPECT_THAT(wrong_shape.message(), HasSubstr("[2,3]")) << wrong_shape;
  Status unknown = session->Run({{"nope", Tensor::Scalar(1.0f)}}, {"neg"}, {}, nullptr);
  EXPECT_EQ(unknown.code(), Code::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("nope")) << unknown;
}

TEST(DirectSessionBadInputTest, FetchingAnUnknownNodeIsNotFoundNamingIt) {
  Scope root = Scope::NewRootScope();
  Const(root.WithOpName("c"), 1.0f);
  auto session = NewDirectSession(root.graph()).value();
  Status s = session->Run({}, {"no_such_node"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("no_such_node")) << s;
  Status t = session->Run({}, {}, {"no_such_target"}, nullptr);
  EXPECT_EQ(t.code(), Code::kNotFound);
  EXPECT_THAT(t.message(), HasSubstr("no_such_target")) << t;
}

TEST(DirectSessionBadInputTest, ReadingAnUninitializedVariableIsFailedPrecondition) {
  Scope root = Scope::NewRootScope();
  auto w = Variable(root.WithOpName("weights"), Shape{2}, DType::kFloat32);
  Neg(root.WithOpName("neg"), w);
  auto session = NewDirectSession(root.graph()).value();
  Status s = session->Run({}, {"neg"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("weights")) << s;
}

TEST(DirectSessionBadInputTest, IntegerDivisionByZeroNamesTheNode) {
  Scope root = Scope::NewRootScope();
  Div(root.WithOpName("ratio"), Const(root, 7), Const(root, 0));
  auto session = NewDirectSession(root.graph()).value();
  Status s = session->Run({}, {"ratio"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ratio")) << s;
  EXPECT_THAT(s.message(), HasSubstr("division by zero")) << s;
}

TEST(DirectSessionBadInputTest, MatMulShapeMismatchIsCaughtAtBuildTime) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root.WithOpName("a"), DType::kFloat32, Shape{2, 3});
  auto b = Placeholder(root.WithOpName("b"), DType::kFloat32, Shape{4, 5});
  MatMul(root.WithOpName("product"), a, b);
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("product")) << root.status();
}

TEST(DirectSessionBadInputTest, RunAfterCloseFails) {
  Scope root = Scope::NewRootScope();
  Const(root.WithOpName("c"), 1.0f);
  auto session = NewDirectSession(root.graph()).value();
  ASSERT_TRUE(session->Close().ok());
  Status s = session->Run({}, {"c"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
}

TEST(DirectSessionTest, TraceRecordsEveryExecutedNodeWithItsDevice) {
  Scope root = Scope::NewRootScope();
  Add(root.WithOpName("sum"), Const(root.WithOpName("a"), 1.0f), Const(root.WithOpName("b"), 2.0f));
  auto session = NewDirectSession(root.graph()).value();
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFullTrace;
  RunMetadata meta;
  ASSERT_TRUE(session->Run(options, {}, {"sum"}, {}, nullptr, &meta).ok());
  ASSERT_EQ(meta.step_stats.size(), 3u);
  for (const NodeExecStats& s : meta.step_stats) {
    EXPECT_LE(s.start_micros, s.end_micros);
    EXPECT_THAT(s.device, HasSubstr("CPU:0"));
  }
}

// A test-only op whose kernel completes only when the test releases it: a step that
// waits for something that never comes.
Status PassThroughShape(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}
const OpRegistration kWaitOp(OpDef{"TestWaitForRelease", 1, 1, {}, 1, {}, true,
                                   PassThroughShape});

struct Parked {
  std::mutex mu;
  std::vector<std::function<void()>> dones;
  void ReleaseAll() {
    std::vector<std::function<void()>> pending;
    {
      std::lock_guard<std::mutex> lock(mu);
      pending.swap(dones);
    }
    for (auto& d : pending) d();
  }
};
Parked parked;

class WaitForReleaseKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    ctx->set_output(0, ctx->input(0));
    std::lock_guard<std::mutex> lock(parked.mu);
    parked.dones.push_back(std::move(done));
  }
};
const KernelRegistration kWaitKernel("TestWaitForRelease", kDeviceCpu, DType::kFloat32,
                                     MakeKernelFactory<WaitForReleaseKernel>());

TEST(DirectSessionTest, AStepPastItsDeadlineIsDeadlineExceededAndTheNextStepSucceeds) {
  Scope root = Scope::NewRootScope();
  auto c = Const(root.WithOpName("c"), 1.0f);
  root.AddNode("TestWaitForRelease", {c});
  Neg(root.WithOpName("neg"), c);
  ASSERT_TRUE(root.ok()) << root.status();
  const std::string waiting = root.graph()->node(root.graph()->num_nodes() - 2)->name();
  auto session = NewDirectSession(root.graph()).value();
  RunOptions options;
  options.timeout_in_ms = 50;
  Status s = session->Run(options, {}, {waiting}, {}, nullptr, nullptr);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(options, {}, {"neg"}, {}, &out, nullptr).ok());
  EXPECT_EQ(out[0].data<float>()[0], -1.0f);
  parked.ReleaseAll();  // the abandoned step ends; nothing is left pending
}

}  // namespace
}  // namespace actorflow
