// Labelled numeric CSV files (the Iris and digits data sets) as datasets or as whole
// tensors. A file is one optional header line of column names, then one row per
// example: comma-separated numbers, no quoting, "\n" or "\r\n" line ends; blank lines
// are skipped and spaces around a value are ignored. One column is the label (an
// integer class index); every other column is a float32 feature, in file order.
//
//   CsvOptions options;                 // header on, label = the last column
//   AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv("iris_training.csv", options));
//   // train.features float32 [120,4], train.labels int32 [120]
//   AF_ASSIGN_OR_RETURN(auto rows, CsvDataset("iris_training.csv", options));
//   // elements (float32 [4], int32 [])
//
// Errors are InvalidArgument "FILE:LINE:COLUMN: ..." where LINE is the 1-based line
// and COLUMN the 1-based character position in that line where the offending field
// starts (or where a missing field should start); the message also gives the 1-based
// field number and the column's name. A file that cannot be opened is NotFound naming
// it.
//
// Thread safety: the functions are reentrant; see Dataset for the datasets.
#ifndef ACTORFLOW_TRAINING_DATA_CSV_DATASET_H_
#define ACTORFLOW_TRAINING_DATA_CSV_DATASET_H_

#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "training/data/dataset.h"

namespace actorflow {

struct CsvOptions {
  // The label column's name: one from the header line, or "column_K" (K from 1, in
  // file order) when there is none. Empty: the last column.
  std::string label_column;
  // Whether the first line names the columns. Without it, the first row fixes the
  // number of columns.
  bool has_header = true;
};

// A whole file.
struct CsvData {
  Tensor features;                         // float32 [N, F]
  Tensor labels;                           // int32 [N]
  std::vector<std::string> feature_names;  // [F]: the feature columns' names, in order
};

// Reads every row. Errors: NotFound (the file cannot be opened); InvalidArgument for
// an empty file, fewer than two columns, an unknown label column (the message lists
// the header), a row with missing or extra fields, a value that is not a number, or a
// label that is not an int32 integer ("2" and "2.0" are; "2.5" is not).
StatusOr<CsvData> LoadCsv(const std::string& path, const CsvOptions& options = CsvOptions());

// A dataset of the file's rows, (features float32 [F], label int32 []), read lazily
// as it is iterated: each iterator opens the file again. The header (or the first row)
// is checked now, so a missing file, an empty one and an unknown label column are
// errors here; a bad row is an error from the GetNext that reaches it, and iterating
// on goes on with the next row. A file whose column count changed since this call is
// an InvalidArgument from the first GetNext.
StatusOr<std::shared_ptr<const Dataset>> CsvDataset(const std::string& path,
                                                    const CsvOptions& options = CsvOptions());

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_CSV_DATASET_H_
