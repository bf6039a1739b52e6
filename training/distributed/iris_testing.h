// Iris for training tests: the bundled split (examples/data/iris_{training,test}.csv)
// loaded once per call, its feature columns normalized on the training rows, and
// the data-parallel options the tests of the drivers share (a DNN [10, 10] trained
// by plain SGD on the shards). A test target that uses it needs
// `data = ["//examples/data:data"]`.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_IRIS_TESTING_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_IRIS_TESTING_H_

#include <vector>

#include "graph/status.h"
#include "training/data/csv_dataset.h"
#include "training/distributed/data_parallel.h"
#include "training/estimators/feature_columns.h"

namespace actorflow {

struct IrisData {
  CsvData train_csv;                    // 120 rows: features float32 [120, 4], labels int32 [120]
  CsvData test_csv;                     // 30 rows
  LabeledData train;                    // the same tensors as train_csv
  LabeledData test;                     // the same tensors as test_csv
  std::vector<NumericColumn> columns;   // the 4 features, normalized on the training rows
};

// NotFound naming the file when the data is not in the runfiles.
StatusOr<IrisData> LoadIris();

// Iris, normalized, hidden units [10, 10], 3 classes, seed 3, batch 16, 30 epochs,
// SGD with learning rate 0.2 on the shards; `workers` replicas of which
// `aggregate` (0: all) make an update in sync mode. No session factory and the
// default timeout: the caller picks the runtime.
DataParallelOptions IrisDataParallelOptions(const IrisData& iris, UpdateMode mode, int workers,
                                            int aggregate = 0);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_IRIS_TESTING_H_
