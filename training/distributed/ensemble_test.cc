// Ensembles: between graphs on a simulated cluster (one task per member, the
// aggregator queue on the ps task), where a stalled or killed member costs one
// deadline and the others' combined prediction still comes back naming who was
// missing; and in one graph, each network pinned to its own device.

#include "training/distributed/ensemble.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "actors/cluster/local_cluster.h"
#include "actors/runtime/local_session.h"
#include "actors/cluster/session_factory.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/dnn_classifier.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

Tensor Probabilities(const std::vector<float>& values) {
  return Tensor::FromVector(values, Shape{static_cast<int64_t>(values.size() / 3), 3});
}

EnsembleSessionFactory OnTarget(const std::string& target) {
  return [target](const Graph* graph) {
    SessionOptions options;
    options.target = target;
    return NewSession(graph, options);
  };
}

TEST(EnsembleTest, CombinesByMeanOrByMajorityVote) {
  const std::vector<Tensor> p = {Probabilities({0.6f, 0.3f, 0.1f}),
                                 Probabilities({0.1f, 0.5f, 0.4f}),
                                 Probabilities({0.2f, 0.45f, 0.35f})};
  auto mean = CombinePredictions(p, {2, 0, 1}, EnsembleCombine::kMeanProbabilities);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_NEAR(mean->probabilities.data<float>()[0], 0.3f, 1e-6);
  EXPECT_EQ(mean->classes, (std::vector<int64_t>{1}));
  EXPECT_EQ(mean->answered, (std::vector<int>{0, 1, 2}));
  auto vote = CombinePredictions(p, {0, 1, 2}, EnsembleCombine::kMajorityVote);
  ASSERT_TRUE(vote.ok());
  EXPECT_NEAR(vote->probabilities.data<float>()[1], 2.0f / 3, 1e-6);
  EXPECT_EQ(vote->classes, (std::vector<int64_t>{1}));
  auto mismatched = CombinePredictions({p[0], Tensor(DType::kFloat32, Shape{2, 3})}, {0, 1},
                                       EnsembleCombine::kMeanProbabilities);
  EXPECT_EQ(mismatched.status().code(), Code::kInvalidArgument);
  EXPECT_NE(mismatched.status().message().find("member 1"), std::string::npos);
}

struct ClusterEnsemble {
  std::unique_ptr<LocalCluster> cluster;
  EnsembleQueueOptions queue{"/job:ps/task:0", "ensemble", 3};
  std::vector<std::unique_ptr<EnsembleMember>> members;
  std::unique_ptr<EnsembleAggregator> aggregator;

  void Start() {
    auto c = LocalCluster::Start({{"ps", 1}, {"worker", 3}});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster = std::move(c).value();
    for (int i = 0; i < 3; ++i) {
      auto m = EnsembleMember::Create(i, queue, OnTarget(*cluster->Target("worker", i)));
      ASSERT_TRUE(m.ok()) << m.status();
      members.push_back(std::move(m).value());
    }
    auto a = EnsembleAggregator::Create(3, queue, OnTarget(*cluster->Target("ps", 0)));
    ASSERT_TRUE(a.ok()) << a.status();
    aggregator = std::move(a).value();
  }
};

TEST(EnsembleTest, StalledMemberCostsOneDeadlineAndIsNamedMissing) {
  ClusterEnsemble e;
  ASSERT_NO_FATAL_FAILURE(e.Start());
  const Tensor p0 = Probabilities({0.7f, 0.2f, 0.1f, 0.1f, 0.1f, 0.8f});
  const Tensor p1 = Probabilities({0.5f, 0.4f, 0.1f, 0.3f, 0.3f, 0.4f});
  ASSERT_TRUE(e.members[0]->Push(1, p0).ok());
  ASSERT_TRUE(e.members[1]->Push(1, p1).ok());
  // Member 2 stalls: it does not answer round 1 in time.
  constexpr int64_t kTimeoutMs = 300;
  const auto start = Clock::now();
  auto r = e.aggregator->Aggregate(1, kTimeoutMs, EnsembleCombine::kMeanProbabilities);
  const int64_t elapsed = MillisSince(start);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->answered, (std::vector<int>{0, 1}));
  EXPECT_EQ(r->missing, (std::vector<int>{2}));
  EXPECT_NEAR(r->probabilities.data<float>()[0], 0.6f, 1e-6);
  EXPECT_NEAR(r->probabilities.data<float>()[5], 0.6f, 1e-6);
  EXPECT_EQ(r->classes, (std::vector<int64_t>{0, 2}));
  EXPECT_GE(elapsed, kTimeoutMs - 20);
  EXPECT_LT(elapsed, kTimeoutMs + 2000);

  // Its late answer to round 1 is dropped; round 2 has every member and does not
  // wait for the deadline.
  ASSERT_TRUE(e.members[2]->Push(1, p0).ok());
  for (auto& m : e.members) ASSERT_TRUE(m->Push(2, p1).ok());
  const auto start2 = Clock::now();
  auto r2 = e.aggregator->Aggregate(2, 10000, EnsembleCombine::kMajorityVote);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_LT(MillisSince(start2), 10000);
  EXPECT_EQ(r2->answered, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(r2->missing.empty());
  EXPECT_EQ(r2->classes, (std::vector<int64_t>{0, 2}));
}

TEST(EnsembleTest, KilledMemberTaskStillLeavesACombinedIrisPrediction) {
  ClusterEnsemble e;
  ASSERT_NO_FATAL_FAILURE(e.Start());
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string data = std::string(srcdir ? srcdir : ".") + "/actorflow/examples/data/";
  auto train = LoadCsv(data + "iris_training.csv");
  auto test = LoadCsv(data + "iris_test.csv");
  ASSERT_TRUE(train.ok() && test.ok());

  // Each member is a DNN trained on its own worker task, with its own seed.
  std::vector<Tensor> predictions;
  for (int i = 0; i < 3; ++i) {
    DNNClassifierOptions options;
    options.feature_columns = NumericColumns(train->feature_names);
    options.hidden_units = {10, 10};
    options.n_classes = 3;
    options.seed = 100 + i;
    options.session_factory = OnTarget(*e.cluster->Target("worker", i));
    auto classifier = DNNClassifier::Create(options);
    ASSERT_TRUE(classifier.ok()) << classifier.status();
    const CsvData& t = *train;
    auto trained = (*classifier)->Train(
        [&t, i]() -> StatusOr<std::shared_ptr<const Dataset>> {
          AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({t.features, t.labels}));
          return rows->Shuffle(120, i + 1)->Batch(16)->Repeat(-1);
        },
        300);
    ASSERT_TRUE(trained.ok()) << trained.status();
    const CsvData& q = *test;
    auto predicted = (*classifier)->Predict([&q]() -> StatusOr<std::shared_ptr<const Dataset>> {
      AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({q.features}));
      return rows->Batch(64);
    });
    ASSERT_TRUE(predicted.ok()) << predicted.status();
    std::vector<float> flat;
    for (const Prediction& p : *predicted) flat.insert(flat.end(), p.probabilities.begin(), p.probabilities.end());
    predictions.push_back(Probabilities(flat));
  }
  // Member 2's task dies before it answers; the others push.
  ASSERT_TRUE(e.cluster->StopTask("worker", 2).ok());
  ASSERT_TRUE(e.members[0]->Push(7, predictions[0]).ok());
  ASSERT_TRUE(e.members[1]->Push(7, predictions[1]).ok());

  constexpr int64_t kTimeoutMs = 500;
  const auto start = Clock::now();
  auto r = e.aggregator->Aggregate(7, kTimeoutMs, EnsembleCombine::kMeanProbabilities);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(MillisSince(start), kTimeoutMs + 2000);
  EXPECT_EQ(r->answered, (std::vector<int>{0, 1}));
  EXPECT_EQ(r->missing, (std::vector<int>{2}));
  int correct = 0;
  for (size_t k = 0; k < r->classes.size(); ++k) {
    correct += r->classes[k] == test->labels.data<int32_t>()[k];
  }
  EXPECT_GE(correct, 27) << "of " << r->classes.size();
}

TEST(EnsembleTest, InGraphEnsemblePinsEachNetworkToItsDevice) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 4});
  auto labels = Placeholder(root.WithOpName("labels"), DType::kInt32, Shape{-1});
  std::vector<Output> probabilities;
  std::vector<Output> trains;
  for (int i = 0; i < 3; ++i) {
    Scope m = root.NewSubScope("m" + std::to_string(i)).WithDevice("/device:CPU:" + std::to_string(i));
    auto w0 = CreateVariable(m, "w0", TruncatedNormal(m, Shape{4, 10}, DType::kFloat32, 10 + i, 0, 0.5));
    auto w1 = CreateVariable(m, "w1", TruncatedNormal(m, Shape{10, 3}, DType::kFloat32, 20 + i, 0, 0.5));
    ASSERT_TRUE(w0.ok() && w1.ok()) << root.status();
    auto logits = MatMul(m, Relu(m, MatMul(m, x, *w0)), *w1);
    auto loss = Mean(m, SparseSoftmaxCrossEntropyWithLogits(m, logits, labels).loss);
    auto adam = MakeOptimizer("adam", 0.05);
    ASSERT_TRUE(adam.ok());
    auto train = (*adam)->Minimize(m, loss, Output(), {*w0, *w1});
    ASSERT_TRUE(train.ok()) << train.status();
    trains.push_back(*train);
    probabilities.push_back(Softmax(m, logits));
  }
  InGraphCombination combined = CombineInGraph(root.WithDevice("/device:CPU:0"), probabilities);
  ASSERT_TRUE(combined.mean.valid() && combined.vote.valid()) << root.status();
  NoOp(root.WithOpName("train").WithControlDependencies(trains));
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();

  SessionOptions options;
  options.device_count = {{"CPU", 3}};
  auto session = NewActorSession(root.graph(), options);
  ASSERT_TRUE(session.ok()) << session.status();
  auto placement = (*session)->ExplainPlacement();
  ASSERT_TRUE(placement.ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(placement->find("m" + std::to_string(i) + "/w0 (Variable): " + kLocalTask +
                              "/device:CPU:" + std::to_string(i)),
              std::string::npos)
        << *placement;
  }
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string data = std::string(srcdir ? srcdir : ".") + "/actorflow/examples/data/";
  auto train = LoadCsv(data + "iris_training.csv");
  auto test = LoadCsv(data + "iris_test.csv");
  ASSERT_TRUE(train.ok() && test.ok());
  ASSERT_TRUE((*session)->Run({}, {}, {"init"}, nullptr).ok());
  for (int step = 0; step < 300; ++step) {
    ASSERT_TRUE((*session)->Run({{"x", train->features}, {"labels", train->labels}}, {}, {"train"},
                                nullptr).ok());
  }
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({{"x", test->features}}, {combined.vote.name(), combined.mean.name()}, {}, &out).ok());
  int correct = 0;
  for (int64_t k = 0; k < test->labels.NumElements(); ++k) {
    correct += out[0].data<int64_t>()[k] == test->labels.data<int32_t>()[k];
  }
  EXPECT_GE(correct, 27);
  EXPECT_EQ(out[1].shape(), (Shape{30, 3}));
}

}  // namespace
}  // namespace actorflow
