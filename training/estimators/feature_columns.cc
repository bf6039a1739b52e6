#include "training/estimators/feature_columns.h"

#include <cmath>
#include <set>

#include "graph/ops.h"

namespace actorflow {

std::vector<NumericColumn> NumericColumns(const std::vector<std::string>& names) {
  std::vector<NumericColumn> columns;
  columns.reserve(names.size());
  for (const std::string& name : names) columns.push_back(NumericColumn{name, std::nullopt});
  return columns;
}

StatusOr<std::vector<Normalization>> ComputeNormalization(const Tensor& features) {
  if (features.dtype() != DType::kFloat32 || features.rank() != 2) {
    return InvalidArgument("normalization statistics need float32 features [N, F], got " +
                           features.DebugString());
  }
  const int64_t n = features.dim(0);
  const int64_t f = features.dim(1);
  if (n == 0) return InvalidArgument("normalization statistics need at least one row");
  const float* x = features.data<float>();  // [n, f]
  std::vector<Normalization> stats(static_cast<size_t>(f));
  for (int64_t j = 0; j < f; ++j) {
    // Two passes in double: the mean first, then the squared deviations from it.
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i * f + j];
      if (!std::isfinite(v)) {
        return InvalidArgument("normalization statistics: row " + std::to_string(i + 1) +
                               ", column " + std::to_string(j + 1) + " is not a finite number");
      }
      sum += v;
    }
    const double mean = sum / static_cast<double>(n);
    double squares = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = x[i * f + j] - mean;
      squares += d * d;
    }
    stats[static_cast<size_t>(j)] =
        Normalization{mean, std::sqrt(squares / static_cast<double>(n))};
  }
  return stats;
}

StatusOr<std::vector<NumericColumn>> NormalizedNumericColumns(const std::vector<std::string>& names,
                                                              const Tensor& features) {
  AF_ASSIGN_OR_RETURN(std::vector<Normalization> stats, ComputeNormalization(features));
  if (stats.size() != names.size()) {
    return InvalidArgument("normalized columns: " + std::to_string(names.size()) +
                           " names for features with " + std::to_string(stats.size()) + " columns");
  }
  std::vector<NumericColumn> columns = NumericColumns(names);
  for (size_t i = 0; i < columns.size(); ++i) columns[i].normalization = stats[i];
  return columns;
}

Status ValidateFeatureColumns(const std::vector<NumericColumn>& columns) {
  if (columns.empty()) return InvalidArgument("no feature columns: a model needs at least one");
  std::set<std::string> seen;
  for (size_t i = 0; i < columns.size(); ++i) {
    const NumericColumn& column = columns[i];
    if (column.name.empty()) {
      return InvalidArgument("feature column " + std::to_string(i) + " has an empty name");
    }
    if (!seen.insert(column.name).second) {
      return InvalidArgument("feature column '" + column.name + "' appears twice");
    }
    if (column.normalization) {
      const Normalization& n = *column.normalization;
      if (!std::isfinite(n.mean) || !std::isfinite(n.stddev) || n.stddev < 0) {
        return InvalidArgument("feature column '" + column.name +
                               "': normalization needs a finite mean and a finite stddev >= 0");
      }
    }
  }
  return Status::OK();
}

double EffectiveStddev(const Normalization& normalization) {
  return normalization.stddev > 0 ? normalization.stddev : 1.0;
}

StatusOr<Output> InputLayer(const Scope& scope, const std::vector<NumericColumn>& columns,
                            const Output& features) {
  AF_RETURN_IF_ERROR(ValidateFeatureColumns(columns));
  if (!features.valid()) return InvalidArgument("input layer: the features are not a valid output");
  if (features.dtype() != DType::kFloat32) {
    return InvalidArgument("input layer: features of " + features.node->Describe() + " are " +
                           DTypeName(features.dtype()) + ", expected float32");
  }
  const int64_t f = static_cast<int64_t>(columns.size());
  const Shape& shape = features.shape();
  if (!shape.unknown_rank() && (shape.rank() != 2 || (shape.dim(1) >= 0 && shape.dim(1) != f))) {
    return InvalidArgument("input layer: features of " + features.node->Describe() +
                           " have shape " + shape.ToString() + ", expected [?, " +
                           std::to_string(f) + "] (one column per feature column)");
  }
  bool any = false;
  std::vector<float> means(columns.size(), 0.0f);
  std::vector<float> stddevs(columns.size(), 1.0f);
  for (size_t i = 0; i < columns.size(); ++i) {
    if (!columns[i].normalization) continue;
    any = true;
    means[i] = static_cast<float>(columns[i].normalization->mean);
    stddevs[i] = static_cast<float>(EffectiveStddev(*columns[i].normalization));
  }
  if (!any) return features;
  // x [?, F] - mean [F], then / stddev [F]: broadcast along the batch.
  Scope s = scope.NewSubScope("input_layer");
  Output mean = Const(s.WithOpName("mean"), Tensor::FromVector(means));
  Output stddev = Const(s.WithOpName("stddev"), Tensor::FromVector(stddevs));
  Output centred = Sub(s.WithOpName("centred"), features, mean);
  Output scaled = Div(s.WithOpName("normalized"), centred, stddev);
  if (!scope.ok()) return scope.status();
  return scaled;
}

}  // namespace actorflow
