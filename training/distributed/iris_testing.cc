#include "training/distributed/iris_testing.h"

#include "graph/test_files.h"

namespace actorflow {

StatusOr<IrisData> LoadIris() {
  IrisData iris;
  AF_ASSIGN_OR_RETURN(iris.train_csv, LoadCsv(TestDataFile("iris_training.csv")));
  AF_ASSIGN_OR_RETURN(iris.test_csv, LoadCsv(TestDataFile("iris_test.csv")));
  iris.train = {iris.train_csv.features, iris.train_csv.labels};
  iris.test = {iris.test_csv.features, iris.test_csv.labels};
  AF_ASSIGN_OR_RETURN(iris.columns, NormalizedNumericColumns(iris.train_csv.feature_names,
                                                             iris.train_csv.features));
  return iris;
}

DataParallelOptions IrisDataParallelOptions(const IrisData& iris, UpdateMode mode, int workers,
                                            int aggregate) {
  DataParallelOptions options;
  options.spec.feature_columns = iris.columns;
  options.spec.hidden_units = {10, 10};
  options.spec.n_classes = 3;
  options.seed = 3;
  options.batch_size = 16;
  options.epochs = 30;
  options.ps.mode = mode;
  options.ps.total_replicas = workers;
  options.ps.replicas_to_aggregate = aggregate > 0 ? aggregate : workers;
  options.ps.optimizer = "sgd";
  options.ps.learning_rate = 0.2;
  return options;
}

}  // namespace actorflow
