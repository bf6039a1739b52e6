// Reference neural-network ops: MatMul, BiasAdd, Softmax, LogSoftmax and the two
// softmax cross-entropies. Everything is computed in double from the textbook
// formulas, with the row maximum subtracted before exp so that large logits stay
// finite.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64};

bool BoolAttr(const RefCall& call, const std::string& name) {
  auto it = call.attrs.find(name);
  return it != call.attrs.end() && it->second.Is<bool>() && it->second.Get<bool>();
}

// a [M,K] (or [K,M] with transpose_a), b [K,N] (or [N,K] with transpose_b) -> [M,N],
// c[m,n] = sum_k a[m,k] * b[k,n].
StatusOr<std::vector<Tensor>> MatMul(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckDType(call, a, kFloating, "input a"));
  if (b.dtype() != a.dtype()) return InvalidArgument("MatMul: a and b differ in dtype");
  if (a.rank() != 2 || b.rank() != 2) {
    return InvalidArgument("MatMul: a and b must be matrices, got " + a.DebugString() +
                           " and " + b.DebugString());
  }
  const bool ta = BoolAttr(call, "transpose_a");
  const bool tb = BoolAttr(call, "transpose_b");
  const int64_t m = ta ? a.dim(1) : a.dim(0);
  const int64_t k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0);
  const int64_t n = tb ? b.dim(0) : b.dim(1);
  if (k != kb) {
    return InvalidArgument("MatMul shape mismatch: inner dims " + std::to_string(k) +
                           " and " + std::to_string(kb));
  }
  Tensor c(a.dtype(), Shape{m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const int64_t ai = ta ? p * a.dim(1) + i : i * a.dim(1) + p;
        const int64_t bi = tb ? j * b.dim(1) + p : p * b.dim(1) + j;
        sum += GetDouble(a, ai) * GetDouble(b, bi);
      }
      SetDouble(&c, i * n + j, sum);
    }
  }
  return std::vector<Tensor>{c};
}

// value [..., C], bias [C] -> value[..., c] + bias[c].
StatusOr<std::vector<Tensor>> BiasAdd(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& value = call.inputs[0];
  const Tensor& bias = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckDType(
      call, value, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}, "input value"));
  if (bias.dtype() != value.dtype()) return InvalidArgument("BiasAdd: dtypes differ");
  if (value.rank() < 1 || bias.rank() != 1 || bias.dim(0) != value.dim(value.rank() - 1)) {
    return InvalidArgument("BiasAdd: bias " + bias.DebugString() +
                           " does not match the last dim of " + value.DebugString());
  }
  Tensor y(value.dtype(), value.shape());
  ForEachIndex(value.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
    if (IsFloating(value.dtype())) {
      SetDouble(&y, flat, GetDouble(value, flat) + GetDouble(bias, index.back()));
    } else {
      SetInt(&y, flat, WrapAdd(GetInt(value, flat), GetInt(bias, index.back())));
    }
  });
  return std::vector<Tensor>{y};
}

// One row of logits -> its log-softmax: x - max - log(sum exp(x - max)).
std::vector<double> LogSoftmaxRow(const std::vector<double>& x) {
  double max = -INFINITY;
  for (double v : x) max = v > max ? v : max;
  double sum = 0.0;
  for (double v : x) sum += std::exp(v - max);
  const double log_sum = std::log(sum);
  std::vector<double> out;
  for (double v : x) out.push_back(v - max - log_sum);
  return out;
}

// The rows (last-axis vectors) of a tensor of rank >= 1: rows x cols.
std::vector<std::vector<double>> Rows(const Tensor& t) {
  const int64_t cols = t.dim(t.rank() - 1);
  const int64_t rows = cols == 0 ? 0 : t.NumElements() / cols;
  std::vector<std::vector<double>> out(rows, std::vector<double>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[r][c] = GetDouble(t, r * cols + c);
  }
  return out;
}

// logits [..., C] -> softmax or log-softmax along the last axis, same shape.
StatusOr<std::vector<Tensor>> Softmax(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& logits = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, logits, kFloating, "input logits"));
  if (logits.rank() < 1) return InvalidArgument(call.op + ": logits must have rank >= 1");
  const bool log = call.op == "LogSoftmax";
  Tensor y(logits.dtype(), logits.shape());
  const auto rows = Rows(logits);
  int64_t flat = 0;
  for (const auto& row : rows) {
    for (double v : LogSoftmaxRow(row)) SetDouble(&y, flat++, log ? v : std::exp(v));
  }
  return std::vector<Tensor>{y};
}

Status CheckLogits(const RefCall& call, const Tensor& logits) {
  AF_RETURN_IF_ERROR(CheckDType(call, logits, kFloating, "input logits"));
  if (logits.rank() != 2) {
    return InvalidArgument(call.op + ": logits must be [N,C], got " + logits.DebugString());
  }
  return Status::OK();
}

// logits [N,C], labels [N,C] -> loss [N] = -sum_c labels * log_softmax(logits),
// backprop [N,C] = softmax(logits) - labels.
StatusOr<std::vector<Tensor>> SoftmaxCrossEntropy(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& logits = call.inputs[0];
  const Tensor& labels = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckLogits(call, logits));
  if (labels.dtype() != logits.dtype() || labels.shape() != logits.shape()) {
    return InvalidArgument(call.op + ": labels " + labels.DebugString() +
                           " do not match logits " + logits.DebugString());
  }
  const int64_t n = logits.dim(0);
  const int64_t c = logits.dim(1);
  Tensor loss(logits.dtype(), Shape{n});
  Tensor backprop(logits.dtype(), logits.shape());
  for (int64_t r = 0; r < n; ++r) {
    std::vector<double> row(c);
    for (int64_t j = 0; j < c; ++j) row[j] = GetDouble(logits, r * c + j);
    const std::vector<double> log_p = LogSoftmaxRow(row);
    double total = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      const double label = GetDouble(labels, r * c + j);
      total -= label * log_p[j];
      SetDouble(&backprop, r * c + j, std::exp(log_p[j]) - label);
    }
    SetDouble(&loss, r, total);
  }
  return std::vector<Tensor>{loss, backprop};
}

// logits [N,C], labels [N] int32/int64 in [0,C) -> loss [N] = -log_softmax[label],
// backprop [N,C] = softmax(logits) - onehot(labels).
StatusOr<std::vector<Tensor>> SparseSoftmaxCrossEntropy(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& logits = call.inputs[0];
  const Tensor& labels = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckLogits(call, logits));
  AF_RETURN_IF_ERROR(CheckDType(call, labels, {DType::kInt32, DType::kInt64}, "input labels"));
  if (labels.rank() != 1 || labels.dim(0) != logits.dim(0)) {
    return InvalidArgument(call.op + ": labels " + labels.DebugString() +
                           " do not match logits " + logits.DebugString());
  }
  const int64_t n = logits.dim(0);
  const int64_t c = logits.dim(1);
  Tensor loss(logits.dtype(), Shape{n});
  Tensor backprop(logits.dtype(), logits.shape());
  for (int64_t r = 0; r < n; ++r) {
    const int64_t label = GetInt(labels, r);
    if (label < 0 || label >= c) {
      return InvalidArgument(call.op + ": label " + std::to_string(label) + " at row " +
                             std::to_string(r) + " is outside [0, " + std::to_string(c) + ")");
    }
    std::vector<double> row(c);
    for (int64_t j = 0; j < c; ++j) row[j] = GetDouble(logits, r * c + j);
    const std::vector<double> log_p = LogSoftmaxRow(row);
    SetDouble(&loss, r, -log_p[label]);
    for (int64_t j = 0; j < c; ++j) {
      SetDouble(&backprop, r * c + j, std::exp(log_p[j]) - (j == label ? 1.0 : 0.0));
    }
  }
  return std::vector<Tensor>{loss, backprop};
}

}  // namespace

void AddNnOps(RefTable* table) {
  (*table)["MatMul"] = MatMul;
  (*table)["BiasAdd"] = BiasAdd;
  (*table)["Softmax"] = Softmax;
  (*table)["LogSoftmax"] = Softmax;
  (*table)["SoftmaxCrossEntropyWithLogits"] = SoftmaxCrossEntropy;
  (*table)["SparseSoftmaxCrossEntropyWithLogits"] = SparseSoftmaxCrossEntropy;
}

}  // namespace reference
}  // namespace actorflow
