// DNNClassifier with pipeline_micro_batches: the mlp's layer split over two CPUs
// trains through the pipelined graph (training/estimators/pipeline.h) to the weights of the
// unpipelined split, short last batches included, and its checkpoint is the
// unpipelined model's (Load predicts from it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/session_factory.h"
#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/dnn_classifier.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// As pipeline_test: float summation order is all that differs.
constexpr double kTolerance = 1e-5;

std::vector<std::string> TwoCpus() {
  return {"/job:localhost/replica:0/task:0/device:CPU:0",
          "/job:localhost/replica:0/task:0/device:CPU:1"};
}

SessionFactory TwoCpuSessions() {
  return [](const Graph* graph) -> StatusOr<std::unique_ptr<Session>> {
    SessionOptions options;
    options.device_count["CPU"] = 2;
    return NewSession(graph, options);
  };
}

// Batches of 32 in file order, `epochs` passes: Iris's 120 rows end each pass with a
// batch of 24.
InputFn Batches(const CsvData& data, int64_t epochs) {
  return [data, epochs]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({data.features, data.labels}));
    return rows->Batch(32)->Repeat(epochs);
  };
}

class PipelinedClassifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(train_, LoadCsv(TestDataFile("iris_training.csv")));
    ASSERT_OK_AND_ASSIGN(test_, LoadCsv(TestDataFile("iris_test.csv")));
  }

  DNNClassifierOptions LayerSplit(int micro_batches) const {
    DNNClassifierOptions options;
    options.feature_columns = NumericColumns(train_.feature_names);
    options.hidden_units = {16, 16};
    options.n_classes = 3;
    options.optimizer = "sgd";
    options.learning_rate = 0.05;
    options.seed = 3;
    options.split = "layer";
    options.devices = TwoCpus();
    options.session_factory = TwoCpuSessions();
    options.pipeline_micro_batches = micro_batches;
    return options;
  }

  // Trains two epochs (8 steps, two of them of 24 rows) and predicts the test set.
  StatusOr<std::vector<Prediction>> TrainAndPredict(const DNNClassifierOptions& options) {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<DNNClassifier> classifier,
                        DNNClassifier::Create(options));
    AF_ASSIGN_OR_RETURN(TrainResult trained, classifier->Train(Batches(train_, 2), -1));
    EXPECT_EQ(trained.steps, 8);
    return classifier->Predict(Batches(test_, 1));
  }

  CsvData train_;
  CsvData test_;
};

TEST_F(PipelinedClassifierTest, TrainsLikeTheUnpipelinedLayerSplitUnderBothSchedules) {
  ASSERT_OK_AND_ASSIGN(std::vector<Prediction> reference, TrainAndPredict(LayerSplit(0)));
  for (const char* schedule : {"gpipe", "1f1b"}) {
    SCOPED_TRACE(schedule);
    DNNClassifierOptions options = LayerSplit(4);
    options.pipeline_schedule = schedule;
    ASSERT_OK_AND_ASSIGN(std::vector<Prediction> pipelined, TrainAndPredict(options));
    ASSERT_EQ(pipelined.size(), reference.size());
    double worst = 0.0;
    for (size_t i = 0; i < reference.size(); ++i) {
      EXPECT_EQ(pipelined[i].class_id, reference[i].class_id) << "example " << i;
      for (size_t c = 0; c < reference[i].probabilities.size(); ++c) {
        worst = std::max<double>(
            worst, std::abs(pipelined[i].probabilities[c] - reference[i].probabilities[c]));
      }
    }
    EXPECT_LE(worst, kTolerance);
  }
}

TEST_F(PipelinedClassifierTest, ItsCheckpointIsTheUnpipelinedModels) {
  ScopedTempDir dir("pipelined_classifier");
  DNNClassifierOptions options = LayerSplit(4);
  options.model_dir = dir.path();
  ASSERT_OK_AND_ASSIGN(std::vector<Prediction> trained, TrainAndPredict(options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DNNClassifier> loaded,
                       DNNClassifier::Load(dir.path(), TwoCpuSessions()));
  ASSERT_OK_AND_ASSIGN(std::vector<Prediction> predicted, loaded->Predict(Batches(test_, 1)));
  ASSERT_EQ(predicted.size(), trained.size());
  for (size_t i = 0; i < trained.size(); ++i) {
    EXPECT_EQ(predicted[i].class_id, trained[i].class_id) << "example " << i;
  }
}

TEST_F(PipelinedClassifierTest, OtherModelsAndSplitsAreRefused) {
  DNNClassifierOptions options = LayerSplit(4);
  options.split = "vertical";
  StatusOr<std::unique_ptr<DNNClassifier>> vertical = DNNClassifier::Create(options);
  EXPECT_EQ(vertical.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(vertical.status().message(), HasSubstr("needs model mlp with split layer"));
  options = LayerSplit(4);
  options.pipeline_schedule = "zigzag";
  EXPECT_EQ(DNNClassifier::Create(options).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
