// The Iris classification example of TensorFlow's "Get started" guide, step by step,
// with actorflow's DNNClassifier in the actor runtime:
//   1. import and parse the data sets; 2. describe the features; 3. pick a model
//   (a DNN with hidden layers [10, 10], 3 classes); 4. train it; 5. evaluate it on the
//   test set; 6. predict the species of new flowers, with probabilities.
//
//   bazel run //examples/iris [-- TRAIN.csv TEST.csv]
//
// Without arguments the bundled examples/data/iris_{training,test}.csv are used
// (found under `bazel run`, in the runfiles, or from the repository root). Prints
// "Test set accuracy: 0.967" and one line per new flower:
//   Prediction 1: class 0 "Setosa" (99.8%), expected "Setosa"
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/session_factory.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/dnn_classifier.h"

namespace actorflow {
namespace {

const char* const kSpecies[] = {"Setosa", "Versicolor", "Virginica"};

// examples/data/<file> under `bazel run`'s workspace, the runfiles, or the working
// directory.
std::string BundledData(const std::string& file) {
  std::vector<std::string> candidates;
  if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    candidates.push_back(std::string(workspace) + "/examples/data/" + file);
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    candidates.push_back(std::string(exe, n) + ".runfiles/actorflow/examples/data/" + file);
  }
  candidates.push_back("examples/data/" + file);
  for (const std::string& path : candidates) {
    if (std::ifstream(path).is_open()) return path;
  }
  return candidates.back();  // LoadCsv then names it in its error
}

// Shuffled batches of 32, reshuffled on every pass, forever.
InputFn TrainInputFn(const CsvData& data, uint64_t seed) {
  return [data, seed]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({data.features, data.labels}));
    return rows->Shuffle(data.features.dim(0), seed)->Batch(32)->Repeat();
  };
}

// The rows in order, in batches.
InputFn EvalInputFn(const std::vector<Tensor>& components) {
  return [components]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices(components));
    return rows->Batch(32);
  };
}

Status Run(int argc, char** argv) {
  // 1. Import and parse the data sets: float32 features [N, 4], int32 labels [N].
  const std::string train_path = argc > 1 ? argv[1] : BundledData("iris_training.csv");
  const std::string test_path = argc > 2 ? argv[2] : BundledData("iris_test.csv");
  AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv(train_path));
  AF_ASSIGN_OR_RETURN(CsvData test, LoadCsv(test_path));

  // 2. Describe the features: four numeric columns (sepal and petal sizes in cm).
  DNNClassifierOptions options;
  options.feature_columns = NumericColumns(train.feature_names);

  // 3. Select the model: two hidden layers of 10 units, three species.
  options.hidden_units = {10, 10};
  options.n_classes = 3;
  options.optimizer = "adam";
  options.learning_rate = 0.01;
  options.seed = 1;
  options.session_factory = [](const Graph* graph) {
    return NewSession(graph, SessionOptions());  // the actor runtime
  };
  AF_ASSIGN_OR_RETURN(std::unique_ptr<DNNClassifier> classifier, DNNClassifier::Create(options));

  // 4. Train.
  AF_ASSIGN_OR_RETURN(TrainResult trained, classifier->Train(TrainInputFn(train, 1), 1000));
  std::printf("Trained %lld steps, last batch loss %.4f\n", static_cast<long long>(trained.steps),
              trained.last_loss);

  // 5. Evaluate on the test set.
  AF_ASSIGN_OR_RETURN(EvalResult eval,
                      classifier->Evaluate(EvalInputFn({test.features, test.labels})));
  std::printf("Test set accuracy: %.3f\n", eval.accuracy);

  // 6. Predict new flowers, each given as its four measurements.
  const Tensor samples = Tensor::FromVector<float>({5.1f, 3.3f, 1.7f, 0.5f,  //
                                                    5.9f, 3.0f, 4.2f, 1.5f,  //
                                                    6.9f, 3.1f, 5.4f, 2.1f},
                                                   Shape{3, 4});
  const int expected[] = {0, 1, 2};
  AF_ASSIGN_OR_RETURN(std::vector<Prediction> predictions,
                      classifier->Predict(EvalInputFn({samples})));
  for (size_t i = 0; i < predictions.size(); ++i) {
    const Prediction& p = predictions[i];
    std::printf("Prediction %zu: class %lld \"%s\" (%.1f%%), expected \"%s\"\n", i + 1,
                static_cast<long long>(p.class_id), kSpecies[p.class_id],
                100.0 * p.probabilities[p.class_id], kSpecies[expected[i]]);
  }
  return Status::OK();
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) {
  actorflow::Status status = actorflow::Run(argc, argv);
  if (!status.ok()) {
    std::cerr << "iris: " << status << "\n";
    return 1;
  }
  return 0;
}
