#include "placement/placer.h"

#include <gtest/gtest.h>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace {

// A test-only device type with float32 kernels for a few ops. The placer only asks
// whether a kernel exists, so these compute nothing.
constexpr char kTestDev[] = "TESTDEV";

class NothingKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext*) override {}
};

[[maybe_unused]] const bool kTestDevKernelsRegistered = [] {
  for (const char* op : {"Add", "Mul", "Const", "Identity", "Variable", "Assign"}) {
    KernelRegistry::Global().Register(op, kTestDev, DType::kFloat32,
                                      MakeKernelFactory<NothingKernel>());
  }
  return true;
}();

const char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
const char kTestDev0[] = "/job:localhost/replica:0/task:0/device:TESTDEV:0";
const char kTestDev1[] = "/job:localhost/replica:0/task:0/device:TESTDEV:1";

NodeDef Def(std::string name, std::string op, std::vector<std::string> inputs = {},
            AttrMap attrs = {}, std::string device = "") {
  return NodeDef{std::move(name), std::move(op), std::move(inputs), std::move(attrs),
                 std::move(device)};
}

NodeDef FloatConst(std::string name, std::string device = "") {
  return Def(std::move(name), "Const", {}, {{"value", Tensor::Scalar<float>(1.0f)}},
             std::move(device));
}

NodeDef IntConst(std::string name, std::string device = "") {
  return Def(std::move(name), "Const", {}, {{"value", Tensor::Scalar<int32_t>(1)}},
             std::move(device));
}

NodeDef FloatVariable(std::string name, std::string device = "") {
  return Def(std::move(name), "Variable", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{}}},
             std::move(device));
}

std::unique_ptr<Graph> Build(const std::vector<NodeDef>& defs) {
  auto graph = Graph::FromNodeDefs(defs);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? std::move(graph).value() : std::make_unique<Graph>();
}

std::vector<const Node*> AllNodes(const Graph& g) {
  std::vector<const Node*> nodes;
  for (int i = 0; i < g.num_nodes(); ++i) nodes.push_back(g.node(i));
  return nodes;
}

PlacerOptions LocalOptions(bool soft = false) {
  PlacerOptions options;
  options.devices = {{kCpu0, "CPU"}, {kCpu1, "CPU"}, {kTestDev1, kTestDev}, {kTestDev0, kTestDev}};
  options.default_device = kCpu0;
  options.allow_soft_placement = soft;
  return options;
}

std::map<int, Placement> PlaceAll(const Graph& g, const PlacerOptions& options) {
  auto placed = PlaceNodes(g, AllNodes(g), options);
  EXPECT_TRUE(placed.ok()) << placed.status();
  return placed.ok() ? placed.value() : std::map<int, Placement>{};
}

const Placement& Of(const Graph& g, const std::map<int, Placement>& p, const std::string& name) {
  static const Placement kNone;
  auto it = p.find(g.FindNode(name)->id());
  return it == p.end() ? kNone : it->second;
}

// Whether placing every node of `g` fails with InvalidArgument and a message holding
// every one of `parts`; a failure says which are missing.
::testing::AssertionResult PlacementRejected(const Graph& g, const PlacerOptions& options,
                                             const std::vector<std::string>& parts) {
  auto placed = PlaceNodes(g, AllNodes(g), options);
  if (placed.ok()) return ::testing::AssertionFailure() << "every node was placed";
  const Status& s = placed.status();
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  bool failed = false;
  auto fail = [&]() -> ::testing::AssertionResult& {
    if (!failed) result = ::testing::AssertionFailure() << s << ":";
    failed = true;
    return result;
  };
  if (s.code() != Code::kInvalidArgument) fail() << " not InvalidArgument;";
  for (const std::string& part : parts) {
    if (s.message().find(part) == std::string::npos) fail() << " missing '" << part << "';";
  }
  return result;
}

TEST(PlacerTest, ExplicitRequestsAreHonoured) {
  auto g = Build({FloatConst("a", "/cpu:1"), FloatConst("b", "/device:TESTDEV:1"),
                  FloatConst("c", "/job:localhost/replica:0/task:0/device:CPU:0")});
  auto p = PlaceAll(*g, LocalOptions());
  EXPECT_EQ(Of(*g, p, "a").device, kCpu1);
  EXPECT_EQ(Of(*g, p, "a").reason, "requested /cpu:1");
  EXPECT_EQ(Of(*g, p, "b").device, kTestDev1);
  EXPECT_EQ(Of(*g, p, "c").device, kCpu0);
}

TEST(PlacerTest, APartialRequestGetsTheLowestMatchingId) {
  auto g = Build({FloatConst("a", "/device:TESTDEV:*"), FloatConst("b", "/testdev:*")});
  auto p = PlaceAll(*g, LocalOptions());
  EXPECT_EQ(Of(*g, p, "a").device, kTestDev0);
  EXPECT_EQ(Of(*g, p, "b").device, kTestDev0);
}

TEST(PlacerTest, NodesWithoutARequestGoToTheDefaultDevice) {
  auto g = Build({FloatConst("a"), FloatConst("b"), Def("sum", "Add", {"a", "b"})});
  PlacerOptions options = LocalOptions();
  options.default_device = kCpu1;
  auto p = PlaceAll(*g, options);
  for (const char* name : {"a", "b", "sum"}) {
    EXPECT_EQ(Of(*g, p, name).device, kCpu1) << name;
    EXPECT_EQ(Of(*g, p, name).reason, "default") << name;
  }
}

TEST(PlacerTest, ANonCpuDefaultSendsOpsWithoutItsKernelToTheCpuAndSaysWhy) {
  // As with a GPU default and integer ops; no soft placement is needed for this.
  auto g = Build({FloatConst("a"), FloatConst("b"), Def("sum", "Add", {"a", "b"}), IntConst("x"),
                  IntConst("y"), Def("m", "Mul", {"x", "y"})});
  PlacerOptions options = LocalOptions();
  options.default_device = kTestDev0;
  auto p = PlaceAll(*g, options);
  for (const char* name : {"a", "b", "sum"}) {
    EXPECT_EQ(Of(*g, p, name).device, kTestDev0) << name;
    EXPECT_EQ(Of(*g, p, name).reason, "default") << name;
  }
  for (const char* name : {"x", "y", "m"}) EXPECT_EQ(Of(*g, p, name).device, kCpu0) << name;
  EXPECT_EQ(Of(*g, p, "m").reason,
            std::string("default, on the CPU: no TESTDEV kernel for op Mul with dtype int32 "
                        "(registered dtypes: float32) (default device ") +
                kTestDev0 + ")");
}

TEST(PlacerTest, WithoutADeviceListTheDefaultDeviceIsTheOnlyCpu) {
  auto g = Build({FloatConst("a"), FloatConst("b", "/cpu:0")});
  auto p = PlaceAll(*g, PlacerOptions{});
  EXPECT_EQ(Of(*g, p, "a").device, kCpu0);
  EXPECT_EQ(Of(*g, p, "b").device, kCpu0);
}

TEST(PlacerTest, ARequestWithoutTaskPrefersTheDefaultTask) {
  const std::string w0 = "/job:worker/replica:0/task:0/device:CPU:0";
  const std::string w1 = "/job:worker/replica:0/task:1/device:CPU:0";
  const std::string ps0 = "/job:ps/replica:0/task:0/device:CPU:0";
  const std::string ps0_test = "/job:ps/replica:0/task:0/device:TESTDEV:0";
  const std::string ps1 = "/job:ps/replica:0/task:1/device:CPU:0";
  PlacerOptions options;
  options.devices = {{ps1, "CPU"}, {ps0_test, kTestDev}, {ps0, "CPU"}, {w0, "CPU"}, {w1, "CPU"}};
  options.default_device = w1;
  auto g = Build({FloatConst("local", "/cpu:0"), FloatConst("pinned", "/job:worker/task:0"),
                  FloatConst("ps", "/job:ps"), FloatConst("ps_test", "/job:ps/device:TESTDEV:*")});
  auto p = PlaceAll(*g, options);
  EXPECT_EQ(Of(*g, p, "local").device, w1);
  EXPECT_EQ(Of(*g, p, "pinned").device, w0);
  // No task named: the lowest task; no type named: the default device's type (CPU).
  EXPECT_EQ(Of(*g, p, "ps").device, ps0);
  EXPECT_EQ(Of(*g, p, "ps_test").device, ps0_test);
}

TEST(PlacerTest, AssignIsColocatedWithItsVariable) {
  auto g = Build({FloatVariable("v", "/device:TESTDEV:1"), FloatConst("init"),
                  Def("assign", "Assign", {"v", "init"})});
  auto p = PlaceAll(*g, LocalOptions());
  EXPECT_EQ(Of(*g, p, "v").device, kTestDev1);
  EXPECT_EQ(Of(*g, p, "assign").device, kTestDev1);
  EXPECT_EQ(Of(*g, p, "assign").reason, "colocated with v");
  EXPECT_EQ(Of(*g, p, "init").device, kCpu0);
}

TEST(PlacerTest, AVariableOutsideTheStepStillDecidesWhereItsAssignGoes) {
  auto g = Build({FloatVariable("v", "/device:TESTDEV:1"), FloatConst("init"),
                  Def("assign", "Assign", {"v", "init"})});
  // The pruned step of target "assign": the ref input does not pull in v.
  auto placed = PlaceNodes(*g, {g->FindNode("init"), g->FindNode("assign")}, LocalOptions());
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(placed->size(), 2u);
  EXPECT_EQ(placed->count(g->FindNode("v")->id()), 0u);
  EXPECT_EQ(Of(*g, *placed, "assign").device, kTestDev1);
}

TEST(PlacerTest, ClassAttrColocatesWithTheNamedNode) {
  auto g = Build({FloatConst("a", "/cpu:1"),
                  Def("b", "Identity", {"a"}, {{"_class", std::vector<std::string>{"loc:@a"}}}),
                  Def("c", "Identity", {"b"}, {{"_class", std::vector<std::string>{"loc:@b"}}})});
  auto p = PlaceAll(*g, LocalOptions());
  EXPECT_EQ(Of(*g, p, "b").device, kCpu1);
  EXPECT_EQ(Of(*g, p, "b").reason, "colocated with a");
  // Groups are unions: c is with b, hence with a.
  EXPECT_EQ(Of(*g, p, "c").device, kCpu1);
}

TEST(PlacerTest, ConflictingColocatedRequestsNameBothNodesAndDevices) {
  auto g = Build(
      {FloatConst("a", "/cpu:0"),
       Def("b", "Identity", {"a"}, {{"_class", std::vector<std::string>{"loc:@a"}}}, "/cpu:1")});
  EXPECT_TRUE(
      PlacementRejected(*g, LocalOptions(), {"'a'", "'b'", "/cpu:0", "/cpu:1", "colocate"}));
}

TEST(PlacerTest, ClassAttrNamingNoNodeIsAnError) {
  auto g = Build({FloatConst("a"),
                  Def("b", "Identity", {"a"}, {{"_class", std::vector<std::string>{"loc:@zz"}}})});
  EXPECT_TRUE(PlacementRejected(*g, LocalOptions(), {"'b'", "loc:@zz", "no node 'zz'"}));
}

TEST(PlacerTest, MissingKernelWithoutSoftPlacementNamesKernelAndSuggestsSoftPlacement) {
  auto g =
      Build({IntConst("x"), IntConst("y"), Def("m", "Mul", {"x", "y"}, {}, "/device:TESTDEV:0")});
  EXPECT_TRUE(PlacementRejected(
      *g, LocalOptions(),
      {"node 'm' (Mul)", "/device:TESTDEV:0", "no TESTDEV kernel for op Mul with dtype int32",
       "registered dtypes: float32", "allow_soft_placement"}));
}

TEST(PlacerTest, SoftPlacementMovesAnOpWithoutKernelToTheCpuAndSaysWhy) {
  auto g =
      Build({IntConst("x"), IntConst("y"), Def("m", "Mul", {"x", "y"}, {}, "/device:TESTDEV:0")});
  auto p = PlaceAll(*g, LocalOptions(/*soft=*/true));
  EXPECT_EQ(Of(*g, p, "m").device, kCpu0);
  EXPECT_EQ(Of(*g, p, "m").reason,
            "soft placement: no TESTDEV kernel for op Mul with dtype int32 (registered dtypes: "
            "float32) (requested /device:TESTDEV:0)");
}

TEST(PlacerTest, AColocatedMemberWithoutKernelMovesTheWholeGroup) {
  auto g = Build({FloatVariable("v", "/device:TESTDEV:0"), FloatConst("d"),
                  Def("add_to_v", "AssignAdd", {"v", "d"})});
  EXPECT_TRUE(PlacementRejected(*g, LocalOptions(),
                                {"'add_to_v' (AssignAdd)", "colocated with node 'v'",
                                 "no TESTDEV kernel for op AssignAdd", "allow_soft_placement"}));
  auto p = PlaceAll(*g, LocalOptions(/*soft=*/true));
  EXPECT_EQ(Of(*g, p, "v").device, kCpu0);
  EXPECT_EQ(Of(*g, p, "add_to_v").device, kCpu0);
  EXPECT_NE(Of(*g, p, "add_to_v").reason.find("soft placement"), std::string::npos);
}

TEST(PlacerTest, AnUnknownDeviceErrorListsTheAvailableDevices) {
  auto g = Build({FloatConst("a", "/gpu:0")});
  EXPECT_TRUE(PlacementRejected(*g, LocalOptions(),
                                {"node 'a' (Const)", "'/gpu:0'", "no available device matches",
                                 kCpu0, kCpu1, kTestDev0, kTestDev1, "allow_soft_placement"}));
}

TEST(PlacerTest, SoftPlacementOfAMissingDeviceUsesTheCpuOfTheRequestedTask) {
  const std::string w0 = "/job:worker/replica:0/task:0/device:CPU:0";
  const std::string w1 = "/job:worker/replica:0/task:1/device:CPU:0";
  PlacerOptions options;
  options.devices = {{w0, "CPU"}, {w1, "CPU"}};
  options.default_device = w0;
  options.allow_soft_placement = true;
  auto g = Build({FloatConst("a", "/job:worker/task:1/device:GPU:0"), FloatConst("b", "/gpu:0")});
  auto p = PlaceAll(*g, options);
  EXPECT_EQ(Of(*g, p, "a").device, w1);
  EXPECT_EQ(Of(*g, p, "a").reason,
            "soft placement: no available device matches it (requested "
            "/job:worker/task:1/device:GPU:0)");
  EXPECT_EQ(Of(*g, p, "b").device, w0);
}

TEST(PlacerTest, AMalformedRequestNamesTheNode) {
  auto g = Build({FloatConst("a", "/job:ps/task:x")});
  EXPECT_TRUE(PlacementRejected(*g, LocalOptions(), {"node 'a'", "/job:ps/task:x"}));
}

TEST(PlacerTest, BadDeviceListsAreErrors) {
  auto g = Build({FloatConst("a")});
  PlacerOptions partial = LocalOptions();
  partial.devices.push_back({"/cpu:3", "CPU"});
  EXPECT_TRUE(PlacementRejected(*g, partial, {"/cpu:3", "not a full device name"}));

  PlacerOptions missing_default = LocalOptions();
  missing_default.default_device = "/job:localhost/replica:0/task:0/device:CPU:7";
  EXPECT_TRUE(PlacementRejected(*g, missing_default, {"default device", "CPU:7", kCpu0}));
}

TEST(PlacerTest, ExplainPlacementWritesOneLinePerNode) {
  auto g = Build({FloatConst("a", "/cpu:1"), FloatConst("b"), Def("sum", "Add", {"a", "b"})});
  auto p = PlaceAll(*g, LocalOptions());
  EXPECT_EQ(ExplainPlacement(*g, p),
            "a (Const): /job:localhost/replica:0/task:0/device:CPU:1 \u2014 requested /cpu:1\n"
            "b (Const): /job:localhost/replica:0/task:0/device:CPU:0 \u2014 default\n"
            "sum (Add): /job:localhost/replica:0/task:0/device:CPU:0 \u2014 default\n");
}

}  // namespace
}  // namespace actorflow
