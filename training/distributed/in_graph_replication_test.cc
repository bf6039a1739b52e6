// In-graph replication: how a batch is split over the towers, that a replicated step
// is DNNClassifier's single-device step, where the towers, the averaging and the
// updates run, and that it trains Iris on an ActorSession with 2 CPU devices and on a
// local cluster (ps=1, worker=2) to DNNClassifier's accuracy, with checkpoints that
// DNNClassifier reads.
#include "training/distributed/in_graph_replication.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/test_files.h"
#include "training/checkpoint/checkpoint.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/dnn_classifier.h"
#include "training/distributed/in_graph_classifier.h"

namespace actorflow {
namespace {

SessionFactory Sessions(const std::string& target, int cpus) {
  return [target, cpus](const Graph* graph) {
    SessionOptions options;
    options.target = target;
    if (target.empty()) options.device_count = {{"CPU", cpus}};
    return NewSession(graph, options);
  };
}

InputFn TrainInput(const CsvData& data, uint64_t seed, int64_t batch = 32) {
  return [data, seed, batch]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({data.features, data.labels}));
    return rows->Shuffle(data.features.dim(0), seed)->Batch(batch)->Repeat();
  };
}

InputFn EvalInput(const CsvData& data) {
  return [data]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({data.features, data.labels}));
    return rows->Batch(32);
  };
}

InGraphReplication LocalCpus() {
  InGraphReplication r;
  r.ps_devices = {"/cpu:0"};
  r.tower_devices = {"/cpu:0", "/cpu:1"};
  return r;
}

InGraphReplication PsWorkers(int workers) {
  InGraphReplication r;
  r.ps_devices = {"/job:ps/task:0"};
  for (int i = 0; i < workers; ++i) r.tower_devices.push_back("/job:worker/task:" + std::to_string(i));
  return r;
}

// The device each traced node of one training step ran on.
std::map<std::string, std::string> TraceTrainStep(InGraphClassifier* c, const CsvData& data) {
  auto feeds = SplitBatchOverTowers(c->model(), data.features, data.labels);
  EXPECT_TRUE(feeds.ok()) << feeds.status();
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFullTrace;
  RunMetadata metadata;
  std::vector<Tensor> out;
  Status s = c->session()->Run(options, *feeds, {}, {kInGraphTrain}, &out, &metadata);
  EXPECT_TRUE(s.ok()) << s;
  std::map<std::string, std::string> device_of;
  for (const NodeExecStats& n : metadata.step_stats) device_of[n.node_name] = n.device;
  return device_of;
}

class InGraphReplicationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto train = LoadCsv(TestDataFile("iris_training.csv"));
    ASSERT_TRUE(train.ok()) << train.status();
    train_ = *train;
    auto test = LoadCsv(TestDataFile("iris_test.csv"));
    ASSERT_TRUE(test.ok()) << test.status();
    test_ = *test;
  }

  DNNClassifierOptions IrisOptions(SessionFactory sessions) const {
    DNNClassifierOptions options;
    options.feature_columns = NumericColumns(train_.feature_names);
    options.hidden_units = {10, 10};
    options.n_classes = 3;
    options.optimizer = "adam";
    options.learning_rate = 0.03;
    options.seed = 1;
    options.session_factory = std::move(sessions);
    return options;
  }

  std::unique_ptr<InGraphClassifier> Create(DNNClassifierOptions model, InGraphReplication r) {
    auto classifier = InGraphClassifier::Create({std::move(model), std::move(r)});
    EXPECT_TRUE(classifier.ok()) << classifier.status();
    return classifier.ok() ? std::move(classifier).value() : nullptr;
  }

  // Trains 400 steps of 32 rows; expects DNNClassifier's Iris accuracy (>= 0.9).
  void TrainsIris(InGraphClassifier* c) {
    std::vector<TrainProgress> progress;
    auto trained = c->Train(TrainInput(train_, 1), 400,
                            [&](const TrainProgress& p) { progress.push_back(p); });
    ASSERT_TRUE(trained.ok()) << trained.status();
    EXPECT_EQ(trained->steps, 400);
    EXPECT_EQ(trained->global_step, 400);
    ASSERT_EQ(progress.size(), 400u);
    EXPECT_LT(progress.back().loss, progress.front().loss);
    auto eval = c->Evaluate(EvalInput(test_));
    ASSERT_TRUE(eval.ok()) << eval.status();
    EXPECT_GE(eval->accuracy, 0.9);
    EXPECT_EQ(eval->num_examples, 30);
    EXPECT_EQ(eval->global_step, 400);
    EXPECT_LT(eval->loss, 0.5);
  }

  CsvData train_;
  CsvData test_;
};

TEST(SplitBatchOverTowersTest, GivesEachTowerConsecutiveRowsWeightedByItsShare) {
  Scope root = Scope::NewRootScope();
  DNNModelSpec spec;
  spec.feature_columns = NumericColumns({"a", "b"});
  spec.hidden_units = {3};
  GradientDescentOptimizer sgd(0.1);
  auto model = BuildInGraphModel(root, spec, 1, LocalCpus(), &sgd);
  ASSERT_TRUE(model.ok()) << model.status();
  Tensor x = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {5, 2});
  Tensor y = Tensor::FromVector<int32_t>({0, 1, 0, 1, 1});
  auto feeds = SplitBatchOverTowers(*model, x, y);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  ASSERT_EQ(feeds->size(), 6u);
  EXPECT_EQ((*feeds)[0].first, "tower_0/features");
  EXPECT_TRUE(TensorsEqual((*feeds)[0].second, Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, {3, 2})));
  EXPECT_TRUE(TensorsEqual((*feeds)[1].second, Tensor::FromVector<int32_t>({0, 1, 0})));
  EXPECT_FLOAT_EQ((*feeds)[2].second.data<float>()[0], 1.2f);  // 2 towers * 3 / 5 rows
  EXPECT_EQ((*feeds)[3].first, "tower_1/features");
  EXPECT_TRUE(TensorsEqual((*feeds)[3].second, Tensor::FromVector<float>({6, 7, 8, 9}, {2, 2})));
  EXPECT_FLOAT_EQ((*feeds)[5].second.data<float>()[0], 0.8f);

  // One row for two towers: the second tower repeats it with weight 0.
  auto one = SplitBatchOverTowers(*model, Tensor::FromVector<float>({4, 5}, {1, 2}),
                                  Tensor::FromVector<int32_t>({1}));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FLOAT_EQ((*one)[2].second.data<float>()[0], 2.0f);
  EXPECT_TRUE(TensorsEqual((*one)[3].second, Tensor::FromVector<float>({4, 5}, {1, 2})));
  EXPECT_FLOAT_EQ((*one)[5].second.data<float>()[0], 0.0f);

  EXPECT_EQ(SplitBatchOverTowers(*model, Tensor(DType::kFloat32, Shape{0, 2}),
                                 Tensor(DType::kInt32, Shape{0}))
                .status()
                .code(),
            Code::kInvalidArgument);
}

TEST(BuildInGraphModelTest, RejectsNoTowerNoPsDeviceAndABadSpec) {
  DNNModelSpec spec;
  spec.feature_columns = NumericColumns({"a"});
  spec.hidden_units = {3};
  GradientDescentOptimizer sgd(0.1);
  InGraphReplication no_towers = LocalCpus();
  no_towers.tower_devices.clear();
  EXPECT_EQ(BuildInGraphModel(Scope::NewRootScope(), spec, 1, no_towers, &sgd).status().code(),
            Code::kInvalidArgument);
  InGraphReplication no_ps = LocalCpus();
  no_ps.ps_devices.clear();
  EXPECT_EQ(BuildInGraphModel(Scope::NewRootScope(), spec, 1, no_ps, &sgd).status().code(),
            Code::kInvalidArgument);
  spec.hidden_units = {};
  EXPECT_EQ(BuildInGraphModel(Scope::NewRootScope(), spec, 1, LocalCpus(), &sgd).status().code(),
            Code::kInvalidArgument);
}

TEST_F(InGraphReplicationTest, AReplicatedStepOfAnUnevenBatchIsDNNClassifiersSingleDeviceStep) {
  // 33 rows: towers of 17 and 16. Plain SGD, so the variables show the gradient.
  const std::string single_dir = NewTestTempDir("single");
  const std::string replicated_dir = NewTestTempDir("replicated");
  DNNClassifierOptions single = IrisOptions(Sessions("direct", 1));
  single.optimizer = "sgd";
  single.learning_rate = 0.1;
  single.model_dir = single_dir;
  DNNClassifierOptions replicated = single;
  replicated.session_factory = Sessions("", 2);
  replicated.model_dir = replicated_dir;

  auto reference = DNNClassifier::Create(single);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_TRUE((*reference)->Train(TrainInput(train_, 5, 33), 3).ok());
  auto towers = Create(replicated, LocalCpus());
  ASSERT_NE(towers, nullptr);
  auto trained = towers->Train(TrainInput(train_, 5, 33), 3);
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_EQ(trained->global_step, 3);

  auto expected = ReadCheckpoint(single_dir);
  auto actual = ReadCheckpoint(replicated_dir);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(actual->size(), expected->size());
  for (const auto& [name, want] : *expected) {
    ASSERT_EQ(actual->count(name), 1u) << "the replicated checkpoint lacks " << name;
    const Tensor& got = actual->at(name);
    ASSERT_EQ(got.shape(), want.shape()) << name;
    for (int64_t i = 0; i < want.NumElements(); ++i) {
      ASSERT_NEAR(got.ElementAsDouble(i), want.ElementAsDouble(i), 1e-5) << name << "[" << i << "]";
    }
  }
}

TEST_F(InGraphReplicationTest, OnAnActorSessionWithTwoCpusTowersRunOnEachDeviceAndTrainIris) {
  auto c = Create(IrisOptions(Sessions("", 2)), LocalCpus());
  ASSERT_NE(c, nullptr);
  TrainsIris(c.get());
  const std::string cpu = "/job:localhost/replica:0/task:0/device:CPU:";
  auto device_of = TraceTrainStep(c.get(), train_);
  EXPECT_EQ(device_of["tower_0/dnn/hiddenlayer_0/MatMul"], cpu + "0");
  EXPECT_EQ(device_of["tower_1/dnn/hiddenlayer_0/MatMul"], cpu + "1");
  EXPECT_EQ(device_of["tower_1/example_loss"], cpu + "1");
  EXPECT_EQ(device_of["average_gradients/Mul"], cpu + "0");
}

TEST_F(InGraphReplicationTest, OnALocalClusterTowersRunOnTheWorkersAndUpdatesOnThePs) {
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto c = Create(IrisOptions(Sessions(*(*cluster)->Target("worker", 0), 1)), PsWorkers(2));
  ASSERT_NE(c, nullptr);
  TrainsIris(c.get());
  auto device_of = TraceTrainStep(c.get(), train_);
  EXPECT_EQ(device_of["tower_0/dnn/logits/MatMul"], "/job:worker/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(device_of["tower_1/dnn/logits/MatMul"], "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(device_of["average_gradients/Mul"], "/job:ps/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(device_of["Adam/update_dnn/logits/kernel/ApplyAdam"],
            "/job:ps/replica:0/task:0/device:CPU:0");
}

TEST_F(InGraphReplicationTest, ItsModelDirectoryIsOneDNNClassifierLoadsAndEvaluatesAlike) {
  const std::string dir = NewTestTempDir("in_graph_model");
  DNNClassifierOptions options = IrisOptions(Sessions("", 2));
  options.model_dir = dir;
  auto c = Create(options, LocalCpus());
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Train(TrainInput(train_, 1), 200).ok());
  auto eval = c->Evaluate(EvalInput(test_));
  ASSERT_TRUE(eval.ok()) << eval.status();

  auto loaded = DNNClassifier::Load(dir, Sessions("direct", 1));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto loaded_eval = (*loaded)->Evaluate(EvalInput(test_));
  ASSERT_TRUE(loaded_eval.ok()) << loaded_eval.status();
  EXPECT_EQ(loaded_eval->accuracy, eval->accuracy);
  EXPECT_NEAR(loaded_eval->loss, eval->loss, 1e-6);
  EXPECT_EQ(loaded_eval->global_step, 200);

  // A second in-graph classifier resumes from the checkpoint.
  auto resumed = Create(options, LocalCpus());
  ASSERT_NE(resumed, nullptr);
  auto step = resumed->GlobalStep();
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(*step, 200);
}

}  // namespace
}  // namespace actorflow
