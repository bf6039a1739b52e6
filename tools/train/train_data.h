// The labelled CSV files that `actorflow train` (alone, with --cluster, with
// --replication in-graph) and `actorflow tune` train and evaluate on, as the
// --train, --test, --label and --classes flags select them (train_command.h), and
// the input functions that feed them to a classifier.
//
// - An empty --train or --test is the bundled Iris split (FindBundledData); any
//   other path goes through ResolveUserPath.
// - The label is the --label column (default: the training file's last one), an
//   integer class index; every other column is a float32 feature. Both files must
//   have the same feature columns, in the same order.
// - Errors name the file (with its line where there is one) or the flag.
//
// Thread safety: the functions are reentrant. An InputFn reads the CsvData it was
// made from, which must outlive it.
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_DATA_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_DATA_H_

#include <cstdint>
#include <string>

#include "graph/status.h"
#include "tools/train/train_command.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/dnn_classifier.h"

namespace actorflow {
namespace cli {

// The path of a file bundled in examples/data (e.g. "iris_training.csv"): under
// $BUILD_WORKSPACE_DIRECTORY, the binary's runfiles, or the working directory.
// NotFound listing where it looked.
StatusOr<std::string> FindBundledData(const std::string& file);

// The two files, loaded.
struct TrainingData {
  std::string train_path;    // as opened: resolved, or the bundled file's path
  std::string test_path;
  std::string label_column;  // --label, or the name of the training file's last column
  CsvData train;             // features float32 [N, F], labels int32 [N]
  CsvData test;              // features float32 [M, F], labels int32 [M]
};

// Loads options.train_path and options.test_path with options.label. Errors:
// LoadCsv's (NotFound, InvalidArgument "FILE:LINE:COLUMN: ..."), FindBundledData's,
// InvalidArgument for a training file without data rows and for a test file whose
// feature columns differ from the training file's (naming the first that differs).
// The labels are not checked here: see ResolveClasses.
StatusOr<TrainingData> LoadTrainingData(const TrainCommandOptions& options);

// The classifier's number of classes: `classes` (--classes) when > 0, else the
// training file's largest label + 1 (at least 2). InvalidArgument "FILE:LINE: label
// L is outside [0, C) (...)" for the first label of either file outside the range,
// saying where C came from.
StatusOr<int64_t> ResolveClasses(const TrainingData& data, int64_t classes);

// The training batches: `data`'s rows reshuffled with `seed` on every pass and cut
// into batches of `batch` rows (the last of a pass may be shorter), for `epochs`
// passes; epochs <= 0: passes without end (the step count ends training).
InputFn TrainingInput(const CsvData& data, int64_t batch, uint64_t seed, int64_t epochs);

// `data`'s rows in file order, in batches of 256, one pass: for Evaluate.
InputFn EvaluationInput(const CsvData& data);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_DATA_H_
