// Every model of model_parallel.h trains on every split it has in a local actor
// session of several CPU devices: the loss falls, the named nodes run on the devices
// the split says (from a traced step), and the tensors between the parts cross
// exactly between those devices. Then the DNNClassifier round trip of a split model
// through its model directory.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/dnn_model.h"
#include "training/estimators/model_parallel.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

std::string Cpu(int i) {
  return "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i);
}

struct Digits {
  CsvData train;
  std::vector<NumericColumn> columns;  // normalized on the training rows
};

const Digits& LoadDigits() {
  static const Digits* digits = [] {
    auto* d = new Digits;
    StatusOr<CsvData> train = LoadCsv(TestDataFile("digits_training.csv"));
    EXPECT_TRUE(train.ok()) << train.status();
    if (!train.ok()) return d;
    d->train = std::move(train).value();
    StatusOr<std::vector<NumericColumn>> columns =
        NormalizedNumericColumns(d->train.feature_names, d->train.features);
    EXPECT_TRUE(columns.ok()) << columns.status();
    if (columns.ok()) d->columns = std::move(columns).value();
    return d;
  }();
  return *digits;
}

struct StepsRun {
  double first_loss = 0.0;
  double last_loss = 0.0;
  std::map<std::string, std::string> device_of;  // node -> the device it ran on
  std::vector<CrossDeviceTransfer> transfers;
  std::vector<std::string> devices_used;
};

// `steps` Adam steps on the first 128 digits, in a session of `cpus` CPU devices,
// the model's parts on CPU:0.. in order; the last step traced.
StatusOr<StepsRun> TrainSteps(const std::string& model, const std::string& split, int cpus,
                              std::vector<int64_t> hidden, int steps) {
  const Digits& digits = LoadDigits();
  DNNModelSpec spec;
  spec.feature_columns = digits.columns;
  spec.hidden_units = std::move(hidden);
  spec.n_classes = 10;
  spec.model = model;
  spec.split = split;
  std::vector<std::string> devices;
  for (int i = 0; i < cpus; ++i) devices.push_back(Cpu(i));
  spec.parts = split == "vertical" ? cpus : 1;

  Scope root = Scope::NewRootScope();
  AF_ASSIGN_OR_RETURN(DNNModel net, BuildDNNModel(root, spec, /*seed=*/3, devices, devices));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> adam, MakeOptimizer("adam", 0.01));
  AF_RETURN_IF_ERROR(adam->Minimize(root.WithOpName("train"), net.loss).status());
  GlobalVariablesInitializer(root.WithOpName("init"));
  AF_RETURN_IF_ERROR(root.status());

  SessionOptions options;
  options.device_count["CPU"] = cpus;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(root.graph(), options));
  AF_RETURN_IF_ERROR(session->Run({}, {}, {"init"}, nullptr));
  AF_ASSIGN_OR_RETURN(Tensor features, digits.train.features.Slice(0, 128));
  AF_ASSIGN_OR_RETURN(Tensor labels, digits.train.labels.Slice(0, 128));
  const FeedList feeds = {{"features", features}, {"labels", labels}};
  StepsRun run;
  run.devices_used = net.devices;
  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> out;
    RunOptions traced;
    traced.trace_level = RunOptions::TraceLevel::kFullTrace;
    RunMetadata meta;
    const bool last = step + 1 == steps;
    AF_RETURN_IF_ERROR(session->Run(last ? traced : RunOptions(), feeds, {"loss"}, {"train"},
                                    &out, last ? &meta : nullptr));
    if (step == 0) run.first_loss = out[0].ElementAsDouble(0);
    run.last_loss = out[0].ElementAsDouble(0);
    if (last) {
      for (const NodeExecStats& s : meta.step_stats) run.device_of[s.node_name] = s.device;
      run.transfers = meta.transfers;
    }
  }
  AF_RETURN_IF_ERROR(session->Close());
  return run;
}

// The (src, dst) pairs of the transfers.
std::set<std::pair<std::string, std::string>> Pairs(const std::vector<CrossDeviceTransfer>& t) {
  std::set<std::pair<std::string, std::string>> pairs;
  for (const CrossDeviceTransfer& x : t) pairs.insert({x.src_device, x.dst_device});
  return pairs;
}

int64_t BytesFrom(const std::vector<CrossDeviceTransfer>& t, const std::string& src,
                  const std::string& dst) {
  for (const CrossDeviceTransfer& x : t) {
    if (x.src_device == src && x.dst_device == dst) return x.bytes;
  }
  return 0;
}

TEST(ModelParallelTrainTest, MlpTrainsOnEverySplitWithItsLayersWhereTheSplitPutsThem) {
  ASSERT_OK_AND_ASSIGN(StepsRun none, TrainSteps("mlp", "none", 2, {32, 32}, 15));
  EXPECT_LT(none.last_loss, 0.5 * none.first_loss);
  EXPECT_EQ(none.device_of["dnn/hiddenlayer_1/MatMul"], Cpu(0));
  EXPECT_TRUE(none.transfers.empty());

  ASSERT_OK_AND_ASSIGN(StepsRun layer, TrainSteps("mlp", "layer", 3, {32, 32}, 15));
  EXPECT_LT(layer.last_loss, 0.5 * layer.first_loss);
  EXPECT_EQ(layer.device_of["dnn/hiddenlayer_0/MatMul"], Cpu(0));
  EXPECT_EQ(layer.device_of["dnn/hiddenlayer_1/MatMul"], Cpu(1));
  EXPECT_EQ(layer.device_of["dnn/logits/MatMul"], Cpu(2));
  EXPECT_EQ(layer.device_of["loss"], Cpu(2));
  // Forward: [128, 32] float activations 0 -> 1 -> 2; backward: their gradients back.
  EXPECT_GE(BytesFrom(layer.transfers, Cpu(0), Cpu(1)), 128 * 32 * 4);
  EXPECT_GE(BytesFrom(layer.transfers, Cpu(1), Cpu(2)), 128 * 32 * 4);
  EXPECT_GE(BytesFrom(layer.transfers, Cpu(2), Cpu(1)), 128 * 32 * 4);
  // The labels are fed straight to the loss's device; only scalars skip a device.
  EXPECT_LT(BytesFrom(layer.transfers, Cpu(0), Cpu(2)), 128 * 4);

  ASSERT_OK_AND_ASSIGN(StepsRun vertical, TrainSteps("mlp", "vertical", 2, {32, 32}, 15));
  EXPECT_LT(vertical.last_loss, 0.5 * vertical.first_loss);
  for (int p = 0; p < 2; ++p) {
    for (const char* layer_name : {"hiddenlayer_0", "hiddenlayer_1", "logits"}) {
      const std::string node =
          std::string("dnn/") + layer_name + "/part_" + std::to_string(p) + "/MatMul";
      EXPECT_EQ(vertical.device_of[node], Cpu(p)) << node;
    }
  }
  EXPECT_EQ(Pairs(vertical.transfers),
            (std::set<std::pair<std::string, std::string>>{{Cpu(0), Cpu(1)}, {Cpu(1), Cpu(0)}}));
}

TEST(ModelParallelTrainTest, CnnTrainsOnEverySplitWithItsTowersAndStagesPlaced) {
  ASSERT_OK_AND_ASSIGN(StepsRun towers, TrainSteps("cnn", "towers", 2, {32}, 12));
  EXPECT_LT(towers.last_loss, 0.5 * towers.first_loss);
  EXPECT_EQ(towers.device_of["cnn/tower_0/conv2/conv"], Cpu(0));
  EXPECT_EQ(towers.device_of["cnn/tower_1/conv1/conv"], Cpu(1));
  EXPECT_EQ(towers.device_of["cnn/tower_1/conv2/conv"], Cpu(1));
  EXPECT_EQ(towers.device_of["cnn/head/towers"], Cpu(0));
  // Tower 1's flattened [128, 2*2*16] features go to the head once; the normalized
  // input [128, 64] and the features' gradient [128, 64] come back. Beyond those only
  // scalars cross (the optimizer's step constants, control signals): tower 1's
  // weights and their gradients stay on its device.
  const int64_t activations = 128 * 64 * 4;
  EXPECT_GE(BytesFrom(towers.transfers, Cpu(1), Cpu(0)), activations);
  EXPECT_LT(BytesFrom(towers.transfers, Cpu(1), Cpu(0)), activations + 256);
  EXPECT_GE(BytesFrom(towers.transfers, Cpu(0), Cpu(1)), 2 * activations);
  EXPECT_LT(BytesFrom(towers.transfers, Cpu(0), Cpu(1)), 2 * activations + 256);

  ASSERT_OK_AND_ASSIGN(StepsRun layer, TrainSteps("cnn", "layer", 3, {32}, 12));
  EXPECT_LT(layer.last_loss, 0.5 * layer.first_loss);
  EXPECT_EQ(layer.device_of["cnn/tower_1/conv1/conv"], Cpu(0));
  EXPECT_EQ(layer.device_of["cnn/tower_1/conv2/conv"], Cpu(1));
  EXPECT_EQ(layer.device_of["cnn/head/logits/MatMul"], Cpu(2));

  ASSERT_OK_AND_ASSIGN(StepsRun none, TrainSteps("cnn", "none", 1, {32}, 12));
  EXPECT_LT(none.last_loss, 0.5 * none.first_loss);
  EXPECT_TRUE(none.transfers.empty());
}

TEST(ModelParallelTrainTest, RnnTrainsOnEverySplitWithLayerIOnDeviceI) {
  ASSERT_OK_AND_ASSIGN(StepsRun layer, TrainSteps("rnn", "layer", 3, {32, 32, 32}, 20));
  EXPECT_LT(layer.last_loss, 0.6 * layer.first_loss);
  for (int l = 0; l < 3; ++l) {
    for (int t : {0, 3, 7}) {
      const std::string node =
          "rnn/layer" + std::to_string(l) + "/t" + std::to_string(t) + "/h";
      EXPECT_EQ(layer.device_of[node], Cpu(l)) << node;
    }
  }
  EXPECT_EQ(layer.devices_used, (std::vector<std::string>{Cpu(0), Cpu(1), Cpu(2)}));
  // Each layer's 8 states [128, 32] go up once, and their gradients come back.
  EXPECT_GE(BytesFrom(layer.transfers, Cpu(0), Cpu(1)), 8 * 128 * 32 * 4);
  EXPECT_GE(BytesFrom(layer.transfers, Cpu(2), Cpu(1)), 8 * 128 * 32 * 4);

  ASSERT_OK_AND_ASSIGN(StepsRun none, TrainSteps("rnn", "none", 1, {32, 32, 32}, 20));
  EXPECT_LT(none.last_loss, 0.6 * none.first_loss);
}

TEST(ModelParallelTrainTest, ASplitClassifierSavesAModelThatLoadsForPredictionOnOneDevice) {
  const Digits& digits = LoadDigits();
  ScopedTempDir dir("split_model");
  DNNClassifierOptions options;
  options.feature_columns = digits.columns;
  options.hidden_units = {16, 16};
  options.n_classes = 10;
  options.model = "mlp";
  options.split = "vertical";
  options.devices = {Cpu(0), Cpu(1)};
  options.model_dir = dir.path();
  SessionOptions two;
  two.device_count["CPU"] = 2;
  options.session_factory = [two](const Graph* g) { return NewSession(g, two); };
  ASSERT_OK_AND_ASSIGN(auto classifier, DNNClassifier::Create(options));
  auto input = [&digits]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows,
                        Dataset::FromTensorSlices({digits.train.features, digits.train.labels}));
    return rows->Batch(64);
  };
  ASSERT_OK_AND_ASSIGN(TrainResult trained, classifier->Train(input, 10));
  EXPECT_EQ(trained.steps, 10);
  EXPECT_EQ(Pairs(trained.step_transfers),
            (std::set<std::pair<std::string, std::string>>{{Cpu(0), Cpu(1)}, {Cpu(1), Cpu(0)}}));
  EXPECT_EQ(classifier->devices(), options.devices);
  ASSERT_OK_AND_ASSIGN(EvalResult trained_eval, classifier->Evaluate(input));

  ASSERT_OK_AND_ASSIGN(DNNModelSpec saved, ReadModelSpec(dir.path()));
  EXPECT_EQ(saved.split, "vertical");
  EXPECT_EQ(saved.parts, 2);
  SessionOptions one;
  auto loaded = DNNClassifier::Load(dir.path(), [one](const Graph* g) {
    return NewSession(g, one);
  });
  ASSERT_OK(loaded.status());
  ASSERT_OK_AND_ASSIGN(EvalResult loaded_eval, (*loaded)->Evaluate(input));
  EXPECT_EQ(loaded_eval.accuracy, trained_eval.accuracy);
  EXPECT_EQ(loaded_eval.global_step, 10);
}

}  // namespace
}  // namespace actorflow
