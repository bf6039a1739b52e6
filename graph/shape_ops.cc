#include "graph/shape_ops.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"
#include "graph/shape_inference.h"

namespace actorflow {
namespace {

using ops_internal::Single;

// Every output of a node with `n` outputs; empty when the node was not built.
std::vector<Output> AllOutputs(const Node* node, int64_t n) {
  std::vector<Output> outputs;
  if (node == nullptr) return outputs;
  for (int64_t i = 0; i < n; ++i) outputs.emplace_back(node, static_cast<int>(i));
  return outputs;
}

AttrMap StridedSliceAttrs(const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                          const std::vector<int64_t>& strides, int64_t begin_mask, int64_t end_mask,
                          int64_t shrink_axis_mask) {
  return {{"begin", begin},       {"end", end},
          {"strides", strides},   {"begin_mask", begin_mask},
          {"end_mask", end_mask}, {"shrink_axis_mask", shrink_axis_mask}};
}

}  // namespace

Output ExpandDims(const Scope& scope, const Input& x, int64_t axis) {
  return Single(scope, "ExpandDims", {x}, {{"axis", axis}});
}

Output Squeeze(const Scope& scope, const Input& x, const std::vector<int64_t>& squeeze_dims) {
  return Single(scope, "Squeeze", {x}, {{"squeeze_dims", squeeze_dims}});
}

Output Pack(const Scope& scope, const std::vector<Output>& values, int64_t axis) {
  std::vector<Input> inputs(values.begin(), values.end());
  return Single(scope, "Pack", inputs, {{"axis", axis}});
}

std::vector<Output> Unpack(const Scope& scope, const Input& value, int64_t num, int64_t axis) {
  return AllOutputs(scope.AddNode("Unpack", {value}, {{"num", num}, {"axis", axis}}), num);
}

std::vector<Output> Split(const Scope& scope, const Input& value, int64_t num_split, int64_t axis) {
  return AllOutputs(scope.AddNode("Split", {value}, {{"num_split", num_split}, {"axis", axis}}),
                    num_split);
}

Output Tile(const Scope& scope, const Input& x, const std::vector<int64_t>& multiples) {
  return Single(scope, "Tile", {x}, {{"multiples", multiples}});
}

Output OneHot(const Scope& scope, const Input& indices, int64_t depth, double on_value,
              double off_value, int64_t axis, DType dtype) {
  return Single(scope, "OneHot", {indices},
                {{"depth", depth},
                 {"on_value", on_value},
                 {"off_value", off_value},
                 {"axis", axis},
                 {"T", dtype}});
}

Output Select(const Scope& scope, const Input& cond, const Input& t, const Input& e) {
  return Single(scope, "Select", {cond, t, e}, {});
}

Output StridedSlice(const Scope& scope, const Input& x, const std::vector<int64_t>& begin,
                    const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                    int64_t begin_mask, int64_t end_mask, int64_t shrink_axis_mask) {
  return Single(scope, "StridedSlice", {x},
                StridedSliceAttrs(begin, end, strides, begin_mask, end_mask, shrink_axis_mask));
}

Output StridedSliceGrad(const Scope& scope, const Input& like, const Input& dy,
                        const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                        const std::vector<int64_t>& strides, int64_t begin_mask, int64_t end_mask,
                        int64_t shrink_axis_mask) {
  return Single(scope, "StridedSliceGrad", {like, dy},
                StridedSliceAttrs(begin, end, strides, begin_mask, end_mask, shrink_axis_mask));
}

Output MatrixBandPart(const Scope& scope, const Input& x, int64_t num_lower, int64_t num_upper) {
  return Single(scope, "MatrixBandPart", {x}, {{"num_lower", num_lower}, {"num_upper", num_upper}});
}

Output CausalMask(const Scope& scope, int64_t length) {
  if (!scope.ok()) return Output();
  if (length < 0) {
    scope.UpdateStatus(
        InvalidArgument("CausalMask: length " + std::to_string(length) + " must be >= 0"));
    return Output();
  }
  const Scope s = scope.NewSubScope("causal_mask");
  // 1 on and below the diagonal, 0 above; (band - 1) * 1e9 maps them to 0 and -1e9.
  const Output band = MatrixBandPart(s, Fill(s, Shape{length, length}, 1.0f), -1, 0);
  return Mul(s, Sub(s, band, 1.0f), 1e9f);
}

StatusOr<std::vector<StridedSliceDim>> ResolveStridedSlice(const std::vector<int64_t>& dims,
                                                           const std::vector<int64_t>& begin,
                                                           const std::vector<int64_t>& end,
                                                           const std::vector<int64_t>& strides,
                                                           int64_t begin_mask, int64_t end_mask,
                                                           int64_t shrink_axis_mask) {
  const size_t rank = dims.size();
  if (begin.size() != end.size() || begin.size() != strides.size() || begin.size() > rank) {
    return InvalidArgument("StridedSlice begin " + IntListToString(begin) + ", end " +
                           IntListToString(end) + " and strides " + IntListToString(strides) +
                           " must have equal lengths, at most the rank " + std::to_string(rank));
  }
  std::vector<StridedSliceDim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t n = dims[i];
    StridedSliceDim& d = out[i];
    if (i >= begin.size()) {  // an axis past the spec: taken whole
      d.size = n;
      continue;
    }
    const int64_t stride = strides[i];
    if (stride == 0) {
      return InvalidArgument("StridedSlice strides " + IntListToString(strides) + ": stride " +
                             std::to_string(i) + " is 0");
    }
    const bool masked_begin = (begin_mask >> i) & 1;
    const bool masked_end = (end_mask >> i) & 1;
    if ((shrink_axis_mask >> i) & 1) {
      d.shrink = true;
      d.size = 1;
      if (n < 0) continue;  // checked by the kernel
      const int64_t b = begin[i] < 0 ? begin[i] + n : begin[i];
      if (b < 0 || b >= n) {
        return InvalidArgument("StridedSlice shrinks axis " + std::to_string(i) + " to index " +
                               std::to_string(begin[i]) + ", outside its dimension " +
                               std::to_string(n));
      }
      d.begin = b;
      continue;
    }
    d.stride = stride;
    if (n < 0) {
      d.size = -1;
      continue;
    }
    // Valid positions run over [0, n) forwards and [-1, n - 1] (as "before 0")
    // backwards: a masked bound is the end of that range, a given one counts from
    // the end when negative and is clamped into it.
    const int64_t lo = stride > 0 ? 0 : -1;
    const int64_t hi = stride > 0 ? n : n - 1;
    auto resolve = [&](int64_t v) {
      if (v < 0) v += n;  // n >= 0: cannot overflow
      return std::clamp<int64_t>(v, lo, hi);
    };
    const int64_t b = masked_begin ? (stride > 0 ? lo : hi) : resolve(begin[i]);
    const int64_t e = masked_end ? (stride > 0 ? hi : lo) : resolve(end[i]);
    d.begin = b;
    const int64_t span = stride > 0 ? e - b : b - e;
    // -INT64_MIN would overflow; any step >= n takes one element anyway.
    const int64_t step = stride > 0 ? stride : stride == INT64_MIN ? INT64_MAX : -stride;
    d.size = span <= 0 ? 0 : (span - 1) / step + 1;
  }
  return out;
}

}  // namespace actorflow
