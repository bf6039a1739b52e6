// The actor runtime against its oracle: every foundation graph gives bit-identical
// results through DirectSession, the actor session on one device, and the actor
// session with the graph's nodes spread over two devices (Send/Recv everywhere).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {

struct Case {
  std::string name;
  std::function<void(const Scope&)> build;
  FeedList feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> before;  // targets run first, in order
};

std::vector<Case> FoundationCases() {
  std::vector<Case> cases;
  cases.push_back({"add", [](const Scope& s) {
                     Add(s.WithOpName("add"), Const(s, 3), Const(s, 5));
                   }, {}, {"add"}, {}});
  cases.push_back({"pow", [](const Scope& s) {
                     auto x = Const(s.WithOpName("x"), 2);
                     auto y = Const(s.WithOpName("y"), 3);
                     auto add_op = Add(s.WithOpName("add_op"), x, y);
                     auto mul_op = Mul(s.WithOpName("mul_op"), x, y);
                     Mul(s.WithOpName("useless"), x, add_op);
                     Pow(s.WithOpName("pow_op"), add_op, mul_op);
                   }, {}, {"pow_op"}, {}});
  cases.push_back({"placeholders", [](const Scope& s) {
                     auto x = Placeholder(s.WithOpName("x"), DType::kFloat32);
                     auto y = Placeholder(s.WithOpName("y"), DType::kFloat32);
                     Add(s.WithOpName("sum"), x, y);
                   },
                   {{"x", Tensor::FromVector<float>({1, 3})}, {"y", Tensor::FromVector<float>({2, 4})}},
                   {"sum", "x"}, {}});
  cases.push_back({"mlp_forward_and_loss", [](const Scope& s) {
                     auto x = Placeholder(s.WithOpName("x"), DType::kFloat32, Shape{-1, 4});
                     auto labels = Placeholder(s.WithOpName("labels"), DType::kInt32, Shape{-1});
                     auto w1 = Variable(s.WithOpName("w1"), Shape{4, 8}, DType::kFloat32);
                     auto b1 = Variable(s.WithOpName("b1"), Shape{8}, DType::kFloat32);
                     auto w2 = Variable(s.WithOpName("w2"), Shape{8, 3}, DType::kFloat32);
                     auto i1 = Assign(s.WithOpName("i1"), w1,
                                      TruncatedNormal(s, Shape{4, 8}, DType::kFloat32, 7, 0, 0.5));
                     auto i2 = Assign(s.WithOpName("i2"), b1, Fill(s, Shape{8}, Tensor::Scalar(0.1f)));
                     auto i3 = Assign(s.WithOpName("i3"), w2,
                                      RandomNormal(s, Shape{8, 3}, DType::kFloat32, 9, 0, 0.5));
                     NoOp(s.WithOpName("init").WithControlDependencies({i1, i2, i3}));
                     auto h = Relu(s.WithOpName("h"), BiasAdd(s, MatMul(s, x, w1), b1));
                     auto logits = MatMul(s.WithOpName("logits"), h, w2);
                     auto xent = SparseSoftmaxCrossEntropyWithLogits(s.WithOpName("xent"), logits, labels);
                     Mean(s.WithOpName("loss"), xent.loss);
                     ArgMax(s.WithOpName("predicted"), logits, 1);
                     Softmax(s.WithOpName("probs"), logits);
                     Sum(s.WithOpName("col_sums"), Tanh(s, logits), {0}, true);
                   },
                   {{"x", Tensor::FromVector<float>({5.1f, 3.5f, 1.4f, 0.2f, 6.2f, 2.9f, 4.3f, 1.3f,
                                                     7.7f, 3.0f, 6.1f, 2.3f}, Shape{3, 4})},
                    {"labels", Tensor::FromVector<int32_t>({0, 1, 2})}},
                   {"loss", "predicted", "probs", "col_sums", "w1"}, {"init"}});
  cases.push_back({"variables_and_updates", [](const Scope& s) {
                     auto v = Variable(s.WithOpName("v"), Shape{2, 2}, DType::kFloat64);
                     Assign(s.WithOpName("init"), v,
                            Tensor::FromVector<double>({1, 2, 3, 4}, Shape{2, 2}));
                     auto inc = AssignAdd(s.WithOpName("inc"), v,
                                          Tensor::FromVector<double>({0.5, 0.5, 0.5, 0.5}, Shape{2, 2}));
                     Transpose(s.WithOpName("t"), Identity(s.WithControlDependencies({inc}), v));
                     ConcatV2(s.WithOpName("cat"), {v, v}, 1);
                     Slice(s.WithOpName("slice"), v, {0, 1}, {-1, 1});
                     Reshape(s.WithOpName("flat"), v, Const(s, Tensor::FromVector<int32_t>({-1})));
                   }, {}, {"t", "cat", "slice", "flat"}, {"init"}});
  cases.push_back({"comparisons_and_casts", [](const Scope& s) {
                     auto a = Const(s.WithOpName("a"), Tensor::FromVector<int64_t>({-7, 7, 3}));
                     auto b = Const(s.WithOpName("b"), Tensor::FromVector<int64_t>({2, -2, 3}));
                     Div(s.WithOpName("q"), a, b);
                     Equal(s.WithOpName("eq"), a, b);
                     Less(s.WithOpName("lt"), a, b);
                     Cast(s.WithOpName("f"), Maximum(s, a, b), DType::kFloat32);
                     ShapeOf(s.WithOpName("shape"), a);
                   }, {}, {"q", "eq", "lt", "f", "shape"}, {}});
  return cases;
}

// Rebuilds the case with its nodes pinned alternately to CPU:0 and CPU:1, except
// variables and their assignments, which follow colocation, and nodes ordered after
// an update by a control dependency: a variable read across devices is taken when
// its Send runs (as in TensorFlow 1.x), so such a read stays on the variable's device.
std::unique_ptr<Graph> SpreadOverTwoDevices(const Graph& graph) {
  std::vector<NodeDef> defs = graph.ToNodeDefs();
  for (size_t i = 0; i < defs.size(); ++i) {
    const std::string& op = defs[i].op;
    if (op == "Variable" || op.rfind("Assign", 0) == 0) continue;
    if (!graph.node(static_cast<int>(i))->control_inputs().empty()) continue;
    defs[i].device = i % 2 == 0 ? "/cpu:0" : "/cpu:1";
  }
  auto spread = Graph::FromNodeDefs(defs);
  EXPECT_TRUE(spread.ok()) << spread.status();
  return spread.ok() ? std::move(spread).value() : nullptr;
}

std::vector<Tensor> RunCase(const Case& c, const Graph* graph, SessionOptions options) {
  auto session = NewSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  for (const std::string& target : c.before) {
    Status s = (*session)->Run({}, {}, {target}, nullptr);
    EXPECT_TRUE(s.ok()) << c.name << " / " << target << ": " << s;
  }
  std::vector<Tensor> out;
  Status s = (*session)->Run(c.feeds, c.fetches, {}, &out);
  EXPECT_TRUE(s.ok()) << c.name << ": " << s;
  return out;
}

TEST(OracleTest, EveryFoundationGraphGivesIdenticalResultsThroughTheActorRuntime) {
  for (const Case& c : FoundationCases()) {
    SCOPED_TRACE(c.name);
    Scope root = Scope::NewRootScope();
    c.build(root);
    ASSERT_TRUE(root.ok()) << root.status();
    SessionOptions direct;
    direct.target = "direct";
    std::vector<Tensor> expected = RunCase(c, root.graph(), direct);
    ASSERT_EQ(expected.size(), c.fetches.size());

    std::vector<Tensor> one_device = RunCase(c, root.graph(), SessionOptions());
    std::unique_ptr<Graph> spread = SpreadOverTwoDevices(*root.graph());
    ASSERT_NE(spread, nullptr);
    SessionOptions two;
    two.device_count["CPU"] = 2;
    std::vector<Tensor> two_devices = RunCase(c, spread.get(), two);
    ASSERT_EQ(one_device.size(), expected.size());
    ASSERT_EQ(two_devices.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(TensorsEqual(expected[i], one_device[i])) << c.fetches[i];
      EXPECT_TRUE(TensorsEqual(expected[i], two_devices[i])) << c.fetches[i];
    }
  }
}

TEST(OracleTest, FactoryRejectsAnUnknownTarget) {
  Scope root = Scope::NewRootScope();
  SessionOptions options;
  options.target = "nowhere://x";
  auto session = NewSession(root.graph(), options);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), Code::kInvalidArgument);
  EXPECT_NE(session.status().message().find("nowhere://x"), std::string::npos);
}

// A malformed actorflow:// target is refused before any connection is tried, with
// the reason ParseHostPort gives for cluster specs.
TEST(OracleTest, FactoryNamesWhatIsWrongWithARemoteTarget) {
  Scope root = Scope::NewRootScope();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"actorflow://localhost", "missing \":port\""},
      {"actorflow://localhost:99999", "out of range"},
      {"actorflow://::1:2222", "in brackets"},
  };
  for (const auto& [target, why] : cases) {
    SessionOptions options;
    options.target = target;
    auto session = NewSession(root.graph(), options);
    ASSERT_FALSE(session.ok()) << target;
    EXPECT_EQ(session.status().code(), Code::kInvalidArgument) << target;
    EXPECT_THAT(session.status().message(), ::testing::HasSubstr("bad target '" + target + "'"));
    EXPECT_THAT(session.status().message(), ::testing::HasSubstr(why)) << target;
  }
}

}  // namespace
}  // namespace actorflow
