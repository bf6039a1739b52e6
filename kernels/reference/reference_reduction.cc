// Reference reductions: Sum, Mean, Max, Min over a set of axes, and ArgMax over one.
// Each input element is folded into the accumulator of the output element it maps to
// (its index with the reduced axes dropped, or set to 0 with keep_dims).
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

const std::vector<DType> kNumeric = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                     DType::kInt64};

// The axes to reduce, normalized: attr `axis` absent = every axis, an int = that axis,
// a list = those axes (empty = none). Duplicates or out-of-range = InvalidArgument.
StatusOr<std::vector<bool>> ReducedAxes(const RefCall& call, int rank) {
  std::vector<bool> reduced(rank, false);
  auto it = call.attrs.find("axis");
  if (it == call.attrs.end()) {
    reduced.assign(rank, true);
    return reduced;
  }
  std::vector<int64_t> axes;
  if (it->second.Is<int64_t>()) {
    axes.push_back(it->second.Get<int64_t>());
  } else if (it->second.Is<std::vector<int64_t>>()) {
    axes = it->second.Get<std::vector<int64_t>>();
  } else {
    return InvalidArgument(call.op + ": attr 'axis' must be an int or a list of ints");
  }
  for (int64_t axis : axes) {
    AF_ASSIGN_OR_RETURN(int a, NormalizeAxis(call, axis, rank));
    if (reduced[a]) {
      return InvalidArgument(call.op + ": axis " + std::to_string(axis) + " appears twice");
    }
    reduced[a] = true;
  }
  return reduced;
}

// The smallest / largest value of a dtype, as the identity of Max / Min.
double Lowest(DType dtype) {
  switch (dtype) {
    case DType::kInt32: return std::numeric_limits<int32_t>::lowest();
    case DType::kInt64: return static_cast<double>(std::numeric_limits<int64_t>::lowest());
    default: return -std::numeric_limits<double>::infinity();
  }
}
int64_t LowestInt(DType dtype) {
  return dtype == DType::kInt32 ? std::numeric_limits<int32_t>::lowest()
                                : std::numeric_limits<int64_t>::lowest();
}
int64_t HighestInt(DType dtype) {
  return dtype == DType::kInt32 ? std::numeric_limits<int32_t>::max()
                                : std::numeric_limits<int64_t>::max();
}

// x [d0..dn-1] -> y: dims of the reduced axes removed (or 1 with keep_dims).
StatusOr<std::vector<Tensor>> Reduce(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kNumeric, "input x"));
  bool keep_dims = false;
  if (HasAttr(call, "keep_dims")) {
    AF_ASSIGN_OR_RETURN(keep_dims, GetAttr<bool>(call, "keep_dims"));
  }
  AF_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedAxes(call, x.rank()));

  std::vector<int64_t> out_dims;      // the output's shape
  std::vector<int64_t> kept_dims;     // the output's shape without keep_dims' 1s
  for (int i = 0; i < x.rank(); ++i) {
    if (!reduced[i]) {
      out_dims.push_back(x.dim(i));
      kept_dims.push_back(x.dim(i));
    } else if (keep_dims) {
      out_dims.push_back(1);
    }
  }
  const Shape kept_shape(kept_dims);
  const int64_t n_out = kept_shape.num_elements();
  int64_t count = 1;  // input elements per output element
  for (int i = 0; i < x.rank(); ++i) {
    if (reduced[i]) count *= x.dim(i);
  }

  const bool floating = IsFloating(x.dtype());
  const std::string& op = call.op;
  std::vector<double> acc(n_out);
  std::vector<int64_t> acc_int(n_out);
  for (int64_t o = 0; o < n_out; ++o) {
    if (op == "Max") {
      acc[o] = Lowest(x.dtype());
      acc_int[o] = LowestInt(x.dtype());
    } else if (op == "Min") {
      acc[o] = -Lowest(x.dtype());
      acc_int[o] = HighestInt(x.dtype());
    } else {
      acc[o] = 0.0;
      acc_int[o] = 0;
    }
  }
  ForEachIndex(x.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
    std::vector<int64_t> out_index;
    for (int i = 0; i < x.rank(); ++i) {
      if (!reduced[i]) out_index.push_back(index[i]);
    }
    const int64_t o = Ravel(out_index, kept_shape);
    if (floating) {
      const double v = GetDouble(x, flat);
      if (op == "Max") {
        acc[o] = v > acc[o] ? v : acc[o];
      } else if (op == "Min") {
        acc[o] = v < acc[o] ? v : acc[o];
      } else {
        acc[o] += v;
      }
    } else {
      const int64_t v = GetInt(x, flat);
      if (op == "Max") {
        acc_int[o] = v > acc_int[o] ? v : acc_int[o];
      } else if (op == "Min") {
        acc_int[o] = v < acc_int[o] ? v : acc_int[o];
      } else {
        acc_int[o] = WrapAdd(acc_int[o], v);
      }
    }
  });

  Tensor y(x.dtype(), Shape(out_dims));
  for (int64_t o = 0; o < n_out; ++o) {
    if (floating) {
      // Mean of nothing is 0/0 = NaN.
      SetDouble(&y, o, op == "Mean" ? acc[o] / static_cast<double>(count) : acc[o]);
    } else if (op == "Mean") {
      if (count == 0) {
        return InvalidArgument(op + ": integer mean of an empty reduction is undefined");
      }
      SetInt(&y, o, acc_int[o] / count);  // truncates toward zero
    } else {
      SetInt(&y, o, acc_int[o]);
    }
  }
  return std::vector<Tensor>{y};
}

// x [d0..dn-1] (rank >= 1) -> int64 with dim `axis` removed: the first index of the
// largest value along `axis`.
StatusOr<std::vector<Tensor>> ArgMax(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kNumeric, "input x"));
  if (x.rank() < 1) return InvalidArgument("ArgMax: input must have rank >= 1");
  int64_t axis_attr = 0;
  if (HasAttr(call, "axis")) {
    AF_ASSIGN_OR_RETURN(axis_attr, GetAttr<int64_t>(call, "axis"));
  }
  AF_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr, x.rank()));
  const int64_t n = x.dim(axis);
  std::vector<int64_t> out_dims;
  for (int i = 0; i < x.rank(); ++i) {
    if (i != axis) out_dims.push_back(x.dim(i));
  }
  const Shape out_shape(out_dims);
  if (n == 0 && out_shape.num_elements() > 0) {
    return InvalidArgument("ArgMax: cannot take the argmax of an empty axis");
  }
  Tensor y(DType::kInt64, out_shape);
  ForEachIndex(out_shape, [&](const std::vector<int64_t>& out_index, int64_t o) {
    std::vector<int64_t> index(out_index);
    index.insert(index.begin() + axis, 0);
    int64_t best = 0;
    for (int64_t k = 1; k < n; ++k) {
      index[axis] = k;
      const int64_t i = Ravel(index, x.shape());
      index[axis] = best;
      const int64_t b = Ravel(index, x.shape());
      const bool greater = IsFloating(x.dtype()) ? GetDouble(x, i) > GetDouble(x, b)
                                                 : GetInt(x, i) > GetInt(x, b);
      if (greater) best = k;  // strict: ties keep the first index
    }
    y.data<int64_t>()[o] = best;
  });
  return std::vector<Tensor>{y};
}

}  // namespace

void AddReductionOps(RefTable* table) {
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) (*table)[op] = Reduce;
  (*table)["ArgMax"] = ArgMax;
}

}  // namespace reference
}  // namespace actorflow
