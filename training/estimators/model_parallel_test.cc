// model_parallel.h without a session: parsing, the splits each model has, device
// checks, and where the builders put named nodes.

#include "training/estimators/model_parallel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/ops.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kThreeCpus = {"/cpu:0", "/cpu:1", "/cpu:2"};

// The requested device of node `name` ("<missing>" when there is no such node).
std::string DeviceOf(const Graph& graph, const std::string& name) {
  const Node* node = graph.FindNode(name);
  return node == nullptr ? "<missing " + name + ">" : node->requested_device();
}

StatusOr<SplitModel> Build(const Scope& root, ModelKind kind, ModelSplit split,
                           std::vector<std::string> devices, std::vector<int64_t> hidden,
                           int64_t features = 64) {
  Output x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, features});
  ModelParallelParams params;
  params.hidden_units = std::move(hidden);
  params.n_classes = 10;
  ModelPlacement placement;
  placement.split = split;
  placement.devices = std::move(devices);
  return BuildSplitModel(root, kind, x, params, placement);
}

TEST(ModelParallelTest, NamesParseBackAndUnknownNamesListTheValidOnes) {
  for (ModelSplit split :
       {ModelSplit::kNone, ModelSplit::kLayer, ModelSplit::kVertical, ModelSplit::kTowers}) {
    ASSERT_OK_AND_ASSIGN(ModelSplit parsed, ParseModelSplit(ModelSplitName(split)));
    EXPECT_EQ(parsed, split);
  }
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kCnn, ModelKind::kRnn, ModelKind::kConvnet,
                         ModelKind::kConvnetBn}) {
    ASSERT_OK_AND_ASSIGN(ModelKind parsed, ParseModelKind(ModelKindName(kind)));
    EXPECT_EQ(parsed, kind);
  }
  Status split = ParseModelSplit("diagonal").status();
  EXPECT_EQ(split.code(), Code::kInvalidArgument);
  EXPECT_THAT(split.message(), HasSubstr("none, layer, vertical, towers"));
  EXPECT_THAT(ParseModelKind("gru").status().message(), HasSubstr("mlp, cnn, rnn"));
}

TEST(ModelParallelTest, ASplitTheModelLacksSaysWhichSplitsItHas) {
  Scope root = Scope::NewRootScope();
  Status towers = Build(root, ModelKind::kMlp, ModelSplit::kTowers, kThreeCpus, {8}).status();
  EXPECT_EQ(towers.code(), Code::kInvalidArgument);
  EXPECT_THAT(towers.message(), HasSubstr("the mlp has splits none, layer, vertical"));
  Status vertical = Build(root, ModelKind::kRnn, ModelSplit::kVertical, kThreeCpus, {8}).status();
  EXPECT_EQ(vertical.code(), Code::kInvalidArgument);
  EXPECT_THAT(vertical.message(), HasSubstr("the rnn has splits none, layer"));
  Status rnn_towers = Build(root, ModelKind::kRnn, ModelSplit::kTowers, kThreeCpus, {8}).status();
  EXPECT_THAT(rnn_towers.message(), HasSubstr("the rnn has splits none, layer"));
  Status cnn = Build(root, ModelKind::kCnn, ModelSplit::kVertical, kThreeCpus, {}).status();
  EXPECT_THAT(cnn.message(), HasSubstr("the cnn has splits none, layer, towers"));
}

TEST(ModelParallelTest, TooFewDevicesOrAMissingOneNameTheDevicesAvailable) {
  Scope root = Scope::NewRootScope();
  Status one = Build(root, ModelKind::kCnn, ModelSplit::kTowers, {"/cpu:0"}, {}).status();
  EXPECT_EQ(one.code(), Code::kInvalidArgument);
  EXPECT_THAT(one.message(), HasSubstr("needs 2 devices"));
  EXPECT_THAT(one.message(), HasSubstr("/cpu:0"));
  EXPECT_THAT(one.message(), HasSubstr("--devices cpu=2"));

  ModelPlacement placement;
  placement.split = ModelSplit::kLayer;
  placement.devices = {"/cpu:0", "/cpu:3"};
  placement.available_devices = {"/job:localhost/replica:0/task:0/device:CPU:0",
                                 "/job:localhost/replica:0/task:0/device:CPU:1"};
  Status missing = CheckModelPlacement(ModelKind::kMlp, placement);
  EXPECT_EQ(missing.code(), Code::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("device '/cpu:3' does not exist"));
  EXPECT_THAT(missing.message(), HasSubstr("device:CPU:1"));
  placement.devices = {"/cpu:1", "/job:localhost/replica:0/task:0/device:CPU:0"};
  EXPECT_OK(CheckModelPlacement(ModelKind::kMlp, placement));
}

TEST(ModelParallelTest, BadShapesAreRejectedNamingTheModel) {
  Scope root = Scope::NewRootScope();
  Status cnn = Build(root, ModelKind::kCnn, ModelSplit::kNone, {}, {}, /*features=*/10).status();
  EXPECT_THAT(cnn.message(), HasSubstr("not a square image"));
  Scope root2 = Scope::NewRootScope();
  Status rnn = Build(root2, ModelKind::kRnn, ModelSplit::kNone, {}, {4}, /*features=*/12).status();
  EXPECT_THAT(rnn.message(), HasSubstr("time steps"));
  Scope root3 = Scope::NewRootScope();
  Status empty = Build(root3, ModelKind::kRnn, ModelSplit::kNone, {}, {}).status();
  EXPECT_THAT(empty.message(), HasSubstr("at least one"));
}

TEST(ModelParallelTest, LayerSplitSpreadsTheMlpsLayersOverConsecutiveDevices) {
  Scope root = Scope::NewRootScope();
  // Four layers (3 hidden + logits) on 2 devices: two each.
  ASSERT_OK_AND_ASSIGN(SplitModel model, Build(root, ModelKind::kMlp, ModelSplit::kLayer,
                                               {"/cpu:0", "/cpu:1"}, {8, 8, 8}));
  const Graph& g = *root.graph();
  EXPECT_EQ(DeviceOf(g, "dnn/hiddenlayer_0/kernel"), "/cpu:0");
  EXPECT_EQ(DeviceOf(g, "dnn/hiddenlayer_1/kernel"), "/cpu:0");
  EXPECT_EQ(DeviceOf(g, "dnn/hiddenlayer_2/kernel"), "/cpu:1");
  EXPECT_EQ(DeviceOf(g, "dnn/logits/kernel"), "/cpu:1");
  EXPECT_EQ(model.head_device, "/cpu:1");
  EXPECT_EQ(model.devices_used, (std::vector<std::string>{"/cpu:0", "/cpu:1"}));
  EXPECT_EQ(model.variables.size(), 8u);
}

TEST(ModelParallelTest, VerticalSplitCutsEveryLayersUnitsAcrossTheDevices) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(SplitModel model, Build(root, ModelKind::kMlp, ModelSplit::kVertical,
                                               kThreeCpus, {16}));
  const Graph& g = *root.graph();
  // 16 units over 3 devices: 6, 5, 5; each part reads all 64 inputs.
  for (int p = 0; p < 3; ++p) {
    const std::string part = "dnn/hiddenlayer_0/part_" + std::to_string(p) + "/kernel";
    EXPECT_EQ(DeviceOf(g, part), kThreeCpus[static_cast<size_t>(p)]);
    EXPECT_EQ(g.FindNode(part)->output_shape(0), (Shape{64, p == 0 ? 6 : 5}));
    // The logits' parts read the whole hidden activation, assembled on their device.
    const std::string logits = "dnn/logits/part_" + std::to_string(p) + "/kernel";
    EXPECT_EQ(DeviceOf(g, logits), kThreeCpus[static_cast<size_t>(p)]);
    EXPECT_EQ(g.FindNode(logits)->output_shape(0).dim(0), 16);
    EXPECT_EQ(DeviceOf(g, "dnn/hiddenlayer_0/concat_" + std::to_string(p)),
              kThreeCpus[static_cast<size_t>(p)]);
  }
  EXPECT_EQ(DeviceOf(g, "dnn/logits/logits"), "/cpu:0");
  EXPECT_EQ(model.logits.shape(), (Shape{-1, 10}));
  EXPECT_EQ(model.devices_used, kThreeCpus);
}

TEST(ModelParallelTest, TowersSplitPutsEachTowerOnItsDeviceAndTheHeadOnTheFirst) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(SplitModel model, Build(root, ModelKind::kCnn, ModelSplit::kTowers,
                                               {"/cpu:0", "/cpu:1"}, {32}));
  const Graph& g = *root.graph();
  for (const char* node : {"image", "conv1/filter", "conv1/conv", "conv1/pool", "conv2/filter",
                           "conv2/conv", "conv2/pool", "flatten"}) {
    EXPECT_EQ(DeviceOf(g, std::string("cnn/tower_0/") + node), "/cpu:0") << node;
    EXPECT_EQ(DeviceOf(g, std::string("cnn/tower_1/") + node), "/cpu:1") << node;
  }
  EXPECT_EQ(g.FindNode("cnn/tower_1/conv2/filter")->output_shape(0), (Shape{3, 3, 8, 16}));
  EXPECT_EQ(DeviceOf(g, "cnn/head/towers"), "/cpu:0");
  // 2 towers x [2, 2, 16] flattened.
  EXPECT_EQ(g.FindNode("cnn/head/towers")->output_shape(0), (Shape{-1, 128}));
  EXPECT_EQ(DeviceOf(g, "cnn/head/logits/kernel"), "/cpu:0");
  EXPECT_EQ(model.head_device, "/cpu:0");
}

TEST(ModelParallelTest, LayerSplitPutsTheCnnsStagesAndHeadOnConsecutiveDevices) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(SplitModel model,
                       Build(root, ModelKind::kCnn, ModelSplit::kLayer, kThreeCpus, {}));
  const Graph& g = *root.graph();
  for (const char* tower : {"cnn/tower_0/", "cnn/tower_1/"}) {
    EXPECT_EQ(DeviceOf(g, std::string(tower) + "conv1/conv"), "/cpu:0");
    EXPECT_EQ(DeviceOf(g, std::string(tower) + "conv2/conv"), "/cpu:1");
  }
  EXPECT_EQ(DeviceOf(g, "cnn/head/logits/kernel"), "/cpu:2");
  EXPECT_EQ(model.devices_used, kThreeCpus);
}

TEST(ModelParallelTest, RnnNodesNameTheirLayerAndTimeStepAndLayersGoToTheirDevices) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(SplitModel model,
                       Build(root, ModelKind::kRnn, ModelSplit::kLayer, kThreeCpus, {8, 8, 8}));
  const Graph& g = *root.graph();
  for (int l = 0; l < 3; ++l) {
    const std::string layer = "rnn/layer" + std::to_string(l);
    EXPECT_EQ(DeviceOf(g, layer + "/kernel"), kThreeCpus[static_cast<size_t>(l)]);
    EXPECT_EQ(DeviceOf(g, layer + "/recurrent_kernel"), kThreeCpus[static_cast<size_t>(l)]);
    for (int t = 0; t < kRnnTimeSteps; ++t) {
      EXPECT_EQ(DeviceOf(g, layer + "/t" + std::to_string(t) + "/h"),
                kThreeCpus[static_cast<size_t>(l)]);
    }
  }
  // Step 0 has no state to read; step 3 does.
  EXPECT_EQ(g.FindNode("rnn/layer1/t0/state_matmul"), nullptr);
  EXPECT_NE(g.FindNode("rnn/layer1/t3/state_matmul"), nullptr);
  EXPECT_EQ(g.FindNode("rnn/input/t7")->output_shape(0), (Shape{-1, 8}));
  EXPECT_EQ(DeviceOf(g, "rnn/logits/kernel"), "/cpu:2");
  EXPECT_EQ(model.head_device, "/cpu:2");
  EXPECT_EQ(model.variables.size(), 3u * 3u + 2u);
}

TEST(ModelParallelTest, NoSplitPutsEverythingOnTheFirstDevice) {
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kCnn, ModelKind::kRnn}) {
    Scope root = Scope::NewRootScope();
    ASSERT_OK_AND_ASSIGN(SplitModel model,
                         Build(root, kind, ModelSplit::kNone, kThreeCpus, {8, 8}));
    EXPECT_EQ(model.devices_used, (std::vector<std::string>{"/cpu:0"})) << ModelKindName(kind);
    const Graph& g = *root.graph();
    for (int id = 0; id < g.num_nodes(); ++id) {
      const Node* node = g.node(id);
      if (node->name() == "x") continue;
      EXPECT_EQ(node->requested_device(), "/cpu:0") << node->name();
    }
  }
}

// The tutorial CNN: its variables (trainable only: the moving averages are not
// trained), a training path apart from the inference path, and the layer split.
TEST(ModelParallelTest, ConvnetsHaveATrainingPathBesideTheInferenceOne) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(SplitModel plain,
                       Build(root, ModelKind::kConvnet, ModelSplit::kNone, {}, {1024}, 784));
  EXPECT_NE(plain.train_logits.node, plain.logits.node);
  EXPECT_EQ(plain.logits.shape(), (Shape{-1, 10}));
  // conv1, conv2, dense1, logits: kernel and bias each.
  ASSERT_EQ(plain.variables.size(), 8u);
  EXPECT_EQ(plain.variables[0].node->name(), "convnet/conv1/kernel");
  EXPECT_EQ(plain.variables[0].shape(), (Shape{5, 5, 1, 32}));
  EXPECT_EQ(plain.variables[4].shape(), (Shape{7 * 7 * 64, 1024}));

  Scope bn_root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(SplitModel bn, Build(bn_root, ModelKind::kConvnetBn, ModelSplit::kLayer,
                                            kThreeCpus, {16}, 784));
  EXPECT_EQ(bn.variables.size(), 8u + 4u);  // + gamma and beta of each batch norm
  EXPECT_EQ(bn_root.graph()->GetCollection("update_ops").size(), 4u);
  EXPECT_EQ(DeviceOf(*bn_root.graph(), "convnet/conv1/kernel"), "/cpu:0");
  EXPECT_EQ(DeviceOf(*bn_root.graph(), "convnet/batch_norm2/moving_mean"), "/cpu:1");
  EXPECT_EQ(DeviceOf(*bn_root.graph(), "convnet/logits/kernel"), "/cpu:2");
  EXPECT_EQ(bn.head_device, "/cpu:2");

  Scope bad = Scope::NewRootScope();
  EXPECT_THAT(Build(bad, ModelKind::kConvnet, ModelSplit::kNone, {}, {8}, 10).status().message(),
              HasSubstr("convnet: 10 features are not a square image"));
  Scope towers = Scope::NewRootScope();
  EXPECT_THAT(Build(towers, ModelKind::kConvnet, ModelSplit::kTowers, kThreeCpus, {8}, 784)
                  .status()
                  .message(),
              HasSubstr("the convnet has splits none, layer"));
}

}  // namespace
}  // namespace actorflow
