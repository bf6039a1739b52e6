// DNNClassifier: training and evaluation on Iris, determinism from the seed, the
// model directory (checkpoint + model.json, Load), and errors on bad input. Runs on
// DirectSession; the actor runtime is exercised end to end by tests/train_cli_test.
#include "training/estimators/dnn_classifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "graph/test_files.h"
#include "kernels/direct_session.h"
#include "training/data/csv_dataset.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

SessionFactory DirectSessions() {
  return [](const Graph* graph) -> StatusOr<std::unique_ptr<Session>> {
    return NewDirectSession(graph);
  };
}

// Shuffled batches of a whole file, `epochs` passes (-1: forever).
InputFn TrainInput(const CsvData& data, uint64_t seed, int64_t epochs = -1) {
  return [data, seed, epochs]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({data.features, data.labels}));
    return rows->Shuffle(data.features.dim(0), seed)->Batch(32)->Repeat(epochs);
  };
}

// One pass in file order.
InputFn EvalInput(const CsvData& data) {
  return [data]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({data.features, data.labels}));
    return rows->Batch(32);
  };
}

class DNNClassifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto train = LoadCsv(TestDataFile("iris_training.csv"));
    ASSERT_TRUE(train.ok()) << train.status();
    train_ = *train;
    auto test = LoadCsv(TestDataFile("iris_test.csv"));
    ASSERT_TRUE(test.ok()) << test.status();
    test_ = *test;
  }

  DNNClassifierOptions IrisOptions(uint64_t seed = 1) const {
    DNNClassifierOptions options;
    options.feature_columns = NumericColumns(train_.feature_names);
    options.hidden_units = {10, 10};
    options.n_classes = 3;
    options.optimizer = "adam";
    options.learning_rate = 0.03;
    options.seed = seed;
    options.session_factory = DirectSessions();
    return options;
  }

  // Trains `steps` steps with options (seed for the shuffle too) and predicts the
  // test set.
  std::vector<Prediction> TrainAndPredict(const DNNClassifierOptions& options, int steps) {
    auto classifier = DNNClassifier::Create(options);
    EXPECT_TRUE(classifier.ok()) << classifier.status();
    if (!classifier.ok()) return {};
    auto trained = (*classifier)->Train(TrainInput(train_, options.seed), steps);
    EXPECT_TRUE(trained.ok()) << trained.status();
    auto predictions = (*classifier)->Predict(EvalInput(test_));
    EXPECT_TRUE(predictions.ok()) << predictions.status();
    return predictions.ok() ? *predictions : std::vector<Prediction>();
  }

  CsvData train_;
  CsvData test_;
};

TEST_F(DNNClassifierTest, TrainsIrisToAtLeastNinetyPercentTestAccuracy) {
  auto classifier = DNNClassifier::Create(IrisOptions());
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  std::vector<TrainProgress> progress;
  auto trained = (*classifier)->Train(TrainInput(train_, 1), 400, [&](const TrainProgress& p) {
    progress.push_back(p);
  });
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_EQ(trained->steps, 400);
  EXPECT_EQ(trained->global_step, 400);
  ASSERT_EQ(progress.size(), 400u);
  EXPECT_EQ(progress.back().global_step, 400);
  EXPECT_LT(progress.back().loss, progress.front().loss);

  auto eval = (*classifier)->Evaluate(EvalInput(test_));
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_GE(eval->accuracy, 0.9);
  EXPECT_EQ(eval->num_examples, 30);
  EXPECT_EQ(eval->global_step, 400);
  EXPECT_GT(eval->loss, 0.0);
  EXPECT_LT(eval->loss, 0.5);
}

TEST_F(DNNClassifierTest, TrainingStopsWhenTheDatasetEnds) {
  auto classifier = DNNClassifier::Create(IrisOptions());
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  // 2 epochs of 120 rows in batches of 32: 4 batches each (the last one of 24).
  auto trained = (*classifier)->Train(TrainInput(train_, 1, /*epochs=*/2), /*steps=*/-1);
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_EQ(trained->steps, 8);
}

TEST_F(DNNClassifierTest, PredictionsAreProbabilitiesWithTheirArgmaxAsClass) {
  std::vector<Prediction> predictions = TrainAndPredict(IrisOptions(), 50);
  ASSERT_EQ(predictions.size(), 30u);
  for (const Prediction& p : predictions) {
    ASSERT_EQ(p.probabilities.size(), 3u);
    double sum = 0;
    int64_t best = 0;
    for (int c = 0; c < 3; ++c) {
      sum += p.probabilities[c];
      if (p.probabilities[c] > p.probabilities[best]) best = c;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_EQ(p.class_id, best);
  }
}

TEST_F(DNNClassifierTest, SameSeedGivesBitIdenticalPredictions) {
  std::vector<Prediction> a = TrainAndPredict(IrisOptions(7), 60);
  std::vector<Prediction> b = TrainAndPredict(IrisOptions(7), 60);
  std::vector<Prediction> other = TrainAndPredict(IrisOptions(8), 60);
  ASSERT_EQ(a.size(), 30u);
  ASSERT_EQ(b.size(), 30u);
  ASSERT_EQ(other.size(), 30u);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].class_id, b[i].class_id);
    EXPECT_EQ(std::memcmp(a[i].probabilities.data(), b[i].probabilities.data(), 3 * sizeof(float)),
              0)
        << "example " << i;
    differs |= a[i].probabilities != other[i].probabilities;
  }
  EXPECT_TRUE(differs) << "another seed should start from other weights";
}

TEST_F(DNNClassifierTest, NormalizedColumnsTrainToo) {
  DNNClassifierOptions options = IrisOptions();
  auto columns = NormalizedNumericColumns(train_.feature_names, train_.features);
  ASSERT_TRUE(columns.ok()) << columns.status();
  options.feature_columns = *columns;
  auto classifier = DNNClassifier::Create(options);
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  ASSERT_TRUE((*classifier)->Train(TrainInput(train_, 1), 200).ok());
  auto eval = (*classifier)->Evaluate(EvalInput(test_));
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_GE(eval->accuracy, 0.9);
}

TEST_F(DNNClassifierTest, ModelDirHoldsWhatPredictionNeeds) {
  const std::string dir = NewTestTempDir("iris_model");
  DNNClassifierOptions options = IrisOptions();
  options.model_dir = dir;
  options.label_column = "label";
  std::vector<Prediction> trained_predictions;
  {
    auto classifier = DNNClassifier::Create(options);
    ASSERT_TRUE(classifier.ok()) << classifier.status();
    ASSERT_TRUE((*classifier)->Train(TrainInput(train_, 1), 30).ok());
    auto predictions = (*classifier)->Predict(EvalInput(test_));
    ASSERT_TRUE(predictions.ok()) << predictions.status();
    trained_predictions = *predictions;
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt-30.json"));

  auto loaded = DNNClassifier::Load(dir, DirectSessions());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->spec().hidden_units, (std::vector<int64_t>{10, 10}));
  EXPECT_EQ((*loaded)->spec().label_column, "label");
  auto predictions = (*loaded)->Predict(EvalInput(test_));
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  ASSERT_EQ(predictions->size(), trained_predictions.size());
  for (size_t i = 0; i < predictions->size(); ++i) {
    EXPECT_EQ((*predictions)[i].probabilities, trained_predictions[i].probabilities);
  }
  EXPECT_EQ((*loaded)->Train(TrainInput(train_, 1), 1).status().code(), Code::kFailedPrecondition);

  // A new classifier on the directory resumes from the checkpoint's global step.
  auto resumed = DNNClassifier::Create(options);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  auto step = (*resumed)->GlobalStep();
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(*step, 30);
  auto more = (*resumed)->Train(TrainInput(train_, 1), 5);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(more->global_step, 35);
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt-35.json"));
}

TEST_F(DNNClassifierTest, ModelDirOfAnotherModelIsRefused) {
  const std::string dir = NewTestTempDir("other_model");
  DNNClassifierOptions options = IrisOptions();
  options.model_dir = dir;
  {
    auto classifier = DNNClassifier::Create(options);
    ASSERT_TRUE(classifier.ok()) << classifier.status();
    ASSERT_TRUE((*classifier)->Train(TrainInput(train_, 1), 2).ok());
  }
  options.hidden_units = {20};
  Status s = DNNClassifier::Create(options).status();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("hidden units [10, 10] there, [20] here")) << s;
}

TEST_F(DNNClassifierTest, ModelDirThatCannotBeCreatedIsAnError) {
  const std::string file = TestTempPath("plain_file");
  std::ofstream(file) << "not a directory";
  DNNClassifierOptions options = IrisOptions();
  options.model_dir = file + "/model";
  Status s = DNNClassifier::Create(options).status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(file + "/model")) << s;
}

TEST_F(DNNClassifierTest, LoadWithoutCheckpointIsNotFound) {
  EXPECT_EQ(DNNClassifier::Load(NewTestTempDir("empty_model"), DirectSessions()).status().code(),
            Code::kNotFound);
}

TEST_F(DNNClassifierTest, RejectsBadModels) {
  DNNClassifierOptions options = IrisOptions();
  options.hidden_units = {};
  EXPECT_EQ(DNNClassifier::Create(options).status().code(), Code::kInvalidArgument);
  options.hidden_units = {10, 0};
  Status zero = DNNClassifier::Create(options).status();
  EXPECT_THAT(zero.message(), HasSubstr("layer 2 has 0 units")) << zero;
  options = IrisOptions();
  options.n_classes = 1;
  EXPECT_EQ(DNNClassifier::Create(options).status().code(), Code::kInvalidArgument);
  options = IrisOptions();
  options.optimizer = "rmsprop";
  Status unknown = DNNClassifier::Create(options).status();
  EXPECT_EQ(unknown.code(), Code::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("rmsprop")) << unknown;
  options = IrisOptions();
  options.activation = "elu";
  EXPECT_THAT(DNNClassifier::Create(options).status().message(), HasSubstr("elu"));
  options = IrisOptions();
  options.session_factory = nullptr;
  EXPECT_EQ(DNNClassifier::Create(options).status().code(), Code::kInvalidArgument);
}

TEST_F(DNNClassifierTest, LabelOutOfRangeNamesTheLabelAndTheBatch) {
  DNNClassifierOptions options = IrisOptions();
  options.n_classes = 2;  // Iris has labels 0..2
  auto classifier = DNNClassifier::Create(options);
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  Status s = (*classifier)->Train(EvalInput(train_), 10).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("label 2")) << s;
  EXPECT_THAT(s.message(), HasSubstr("batch 0")) << s;
  EXPECT_THAT(s.message(), HasSubstr("[0, 2)")) << s;
  EXPECT_EQ((*classifier)->Evaluate(EvalInput(test_)).status().code(), Code::kInvalidArgument);
}

TEST_F(DNNClassifierTest, FeaturesOfTheWrongWidthAreAnError) {
  DNNClassifierOptions options = IrisOptions();
  options.feature_columns = NumericColumns({"a", "b", "c"});
  auto classifier = DNNClassifier::Create(options);
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  Status s = (*classifier)->Predict(EvalInput(test_)).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("float32 [batch, 3]")) << s;
}

}  // namespace
}  // namespace actorflow
