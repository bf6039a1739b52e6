// Feature columns: how the columns of a feature matrix become a model's input layer
// (TensorFlow's tf.feature_column.numeric_column with a normalizer). A model's
// features arrive as one float32 matrix [batch, F]; column i of the matrix is
// feature_columns[i].
//
// A numeric column may carry normalization statistics, so that the model sees the
// z-score (x - mean) / stddev. The statistics are those of the training data
// (ComputeNormalization), stored with the model and applied unchanged to every later
// input: evaluation and prediction data are scaled as the training data was. A
// column whose stddev is 0 (constant in the training data) is only centred: its
// stddev counts as 1, so that it becomes 0 rather than NaN.
//
//   AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv("iris_training.csv"));
//   AF_ASSIGN_OR_RETURN(auto columns, NormalizedNumericColumns(train.feature_names,
//                                                              train.features));
//   AF_ASSIGN_OR_RETURN(Output input, InputLayer(scope, columns, features));  // [?,4]
//
// Thread safety: the functions are reentrant; InputLayer builds in a Scope (one
// building thread per graph).
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_FEATURE_COLUMNS_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_FEATURE_COLUMNS_H_

#include <optional>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// A column's training statistics: the mean and the population standard deviation
// (divisor N).
struct Normalization {
  double mean = 0.0;
  double stddev = 1.0;

  bool operator==(const Normalization& o) const { return mean == o.mean && stddev == o.stddev; }
  bool operator!=(const Normalization& o) const { return !(*this == o); }
};

// One float32 feature per example.
struct NumericColumn {
  std::string name;
  // Absent: the raw value goes into the model.
  std::optional<Normalization> normalization;

  bool operator==(const NumericColumn& o) const {
    return name == o.name && normalization == o.normalization;
  }
  bool operator!=(const NumericColumn& o) const { return !(*this == o); }
};

// Columns that pass the raw values, one per name.
std::vector<NumericColumn> NumericColumns(const std::vector<std::string>& names);

// The statistics of each column of `features` (float32 [N, F], N >= 1), computed in
// double precision: F entries. InvalidArgument for another dtype or rank, no rows,
// or a non-finite value (naming its row and column).
StatusOr<std::vector<Normalization>> ComputeNormalization(const Tensor& features);

// Columns named `names`, each normalized with its column's statistics in `features`
// (float32 [N, F] with F == names.size()). Errors: ComputeNormalization's, and
// InvalidArgument when F differs from the number of names.
StatusOr<std::vector<NumericColumn>> NormalizedNumericColumns(const std::vector<std::string>& names,
                                                              const Tensor& features);

// OK when the columns can form an input layer: at least one, names non-empty and
// unique, statistics finite with stddev >= 0. InvalidArgument naming the column.
Status ValidateFeatureColumns(const std::vector<NumericColumn>& columns);

// The divisor a normalized column uses: its stddev, or 1 when the stddev is 0.
double EffectiveStddev(const Normalization& normalization);

// The model's input layer: `features` float32 [?, F] (F = columns.size()) with each
// normalized column z-scored; [?, F] float32. When no column is normalized the
// features pass through unchanged (no node is added). Nodes go under the scope's
// name scope. Errors: ValidateFeatureColumns', InvalidArgument for features that
// are not float32 or whose known last dim is not F; builder errors.
StatusOr<Output> InputLayer(const Scope& scope, const std::vector<NumericColumn>& columns,
                            const Output& features);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_FEATURE_COLUMNS_H_
