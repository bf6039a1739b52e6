// The op set's shape family for sequence models: ExpandDims, Squeeze, Pack, Unpack,
// Split, Tile, OneHot, Select, StridedSlice (and its gradient StridedSliceGrad) and
// MatrixBandPart (graph/shape_ops.h documents what each op promises; CausalMask is
// built from Fill and MatrixBandPart).
//
// Axes, multiples and slice bounds are attrs, so every check that needs only them and
// the inputs' known dims happens here, when the node is built; unknown dims and ranks
// propagate and the kernels check the rest at run time.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"
#include "graph/shape_inference.h"
#include "graph/shape_ops.h"

namespace actorflow {
namespace op_set_internal {
namespace {

// Unpack and Split make one node output per part; a cap keeps a typo in an attr from
// asking for billions of outputs.
constexpr int64_t kMaxOutputs = 65536;

std::string Str(int64_t v) { return std::to_string(v); }

// `axis` of an op that inserts a dimension into a rank-`rank` shape: [-rank-1, rank].
Status NormalizeInsertAxis(const std::string& what, int64_t axis, int rank, int* out) {
  if (axis < -rank - 1 || axis > rank) {
    return InvalidArgument(what + " " + Str(axis) + " is out of range [" + Str(-rank - 1) + ", " +
                           Str(rank) + "] for rank " + Str(rank));
  }
  *out = static_cast<int>(axis < 0 ? axis + rank + 1 : axis);
  return Status::OK();
}

// `axis` of an existing dimension: [-rank, rank).
Status NormalizeExistingAxis(const std::string& what, int64_t axis, const Shape& shape, int* out) {
  const int rank = shape.rank();
  if (axis < -rank || axis >= rank) {
    return InvalidArgument(what + " " + Str(axis) + " is out of range [" + Str(-rank) + ", " +
                           Str(rank) + ") for shape " + shape.ToString());
  }
  *out = static_cast<int>(axis < 0 ? axis + rank : axis);
  return Status::OK();
}

Shape Inserted(const Shape& shape, int at, int64_t dim) {
  std::vector<int64_t> dims = shape.dims();
  dims.insert(dims.begin() + at, dim);
  return Shape(std::move(dims));
}

Shape Removed(const Shape& shape, int at) {
  std::vector<int64_t> dims = shape.dims();
  dims.erase(dims.begin() + at);
  return Shape(std::move(dims));
}

// x -> x with a 1 at `axis`.
Status InferExpandDims(InferenceContext& ctx) {
  const Shape& x = ctx.input_shape(0);
  if (x.unknown_rank()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::UnknownRank());
    return Status::OK();
  }
  int axis = 0;
  AF_RETURN_IF_ERROR(
      NormalizeInsertAxis("attr 'axis'", ctx.attr<int64_t>("axis"), x.rank(), &axis));
  ctx.set_output(0, ctx.input_dtype(0), Inserted(x, axis, 1));
  return Status::OK();
}

// x -> x without the listed dims (each 1), or without every dim of 1 (unknown rank
// while any dim is unknown: it may or may not be 1).
Status InferSqueeze(InferenceContext& ctx) {
  const Shape& x = ctx.input_shape(0);
  const auto& listed = ctx.attr<std::vector<int64_t>>("squeeze_dims");
  if (x.unknown_rank()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::UnknownRank());
    return Status::OK();
  }
  std::vector<bool> drop(x.rank(), false);
  for (int64_t d : listed) {
    int axis = 0;
    AF_RETURN_IF_ERROR(NormalizeExistingAxis("Squeeze dimension", d, x, &axis));
    if (x.dim(axis) >= 0 && x.dim(axis) != 1) {
      return InvalidArgument("Squeeze dimension " + Str(d) + " of x " + x.ToString() +
                             " has size " + Str(x.dim(axis)) + ", not 1");
    }
    drop[axis] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i) {
    if (listed.empty() && x.dim(i) < 0) {
      ctx.set_output(0, ctx.input_dtype(0), Shape::UnknownRank());
      return Status::OK();
    }
    if (!(listed.empty() ? x.dim(i) == 1 : drop[i])) dims.push_back(x.dim(i));
  }
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(dims)));
  return Status::OK();
}

// values_0..N-1 (one dtype, compatible shapes) -> [N] inserted at axis.
Status InferPack(InferenceContext& ctx) {
  Shape merged = Shape::UnknownRank();
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input_dtype(i) != ctx.input_dtype(0)) {
      return InvalidArgument("Pack value " + Str(i) + " has dtype " +
                             DTypeName(ctx.input_dtype(i)) + " but value 0 has " +
                             DTypeName(ctx.input_dtype(0)));
    }
    if (!merged.IsCompatibleWith(ctx.input_shape(i))) {
      return InvalidArgument("Pack value " + Str(i) + " has shape " +
                             ctx.input_shape(i).ToString() + " but the values before it " +
                             merged.ToString() + ": all must have one shape");
    }
    merged = merged.MergeWith(ctx.input_shape(i));
  }
  if (merged.unknown_rank()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::UnknownRank());
    return Status::OK();
  }
  int axis = 0;
  AF_RETURN_IF_ERROR(
      NormalizeInsertAxis("Pack attr 'axis'", ctx.attr<int64_t>("axis"), merged.rank(), &axis));
  ctx.set_output(0, ctx.input_dtype(0), Inserted(merged, axis, ctx.num_inputs()));
  return Status::OK();
}

// value [..., num, ...] -> num x value without axis.
Status InferUnpack(InferenceContext& ctx) {
  const int64_t num = ctx.attr<int64_t>("num");
  if (num < 0 || num > kMaxOutputs) {
    return InvalidArgument("Unpack attr 'num' " + Str(num) + " must be in [0, " + Str(kMaxOutputs) +
                           "]");
  }
  const Shape& value = ctx.input_shape(0);
  Shape part = Shape::UnknownRank();
  if (!value.unknown_rank()) {
    AF_RETURN_IF_ERROR(CheckRank("Unpack value (input 0)", value, 1, -1));
    int axis = 0;
    AF_RETURN_IF_ERROR(
        NormalizeExistingAxis("Unpack attr 'axis'", ctx.attr<int64_t>("axis"), value, &axis));
    if (value.dim(axis) >= 0 && value.dim(axis) != num) {
      return InvalidArgument("Unpack of value " + value.ToString() + " into num " + Str(num) +
                             " parts along axis " + Str(ctx.attr<int64_t>("axis")) +
                             ": the dimension there is " + Str(value.dim(axis)));
    }
    part = Removed(value, axis);
  }
  for (int64_t i = 0; i < num; ++i) ctx.set_output(static_cast<int>(i), ctx.input_dtype(0), part);
  return Status::OK();
}

// value -> num_split x value with dim(axis) / num_split at axis.
Status InferSplit(InferenceContext& ctx) {
  const int64_t parts = ctx.attr<int64_t>("num_split");
  if (parts < 1 || parts > kMaxOutputs) {
    return InvalidArgument("Split attr 'num_split' " + Str(parts) + " must be in [1, " +
                           Str(kMaxOutputs) + "]");
  }
  const Shape& value = ctx.input_shape(0);
  Shape part = Shape::UnknownRank();
  if (!value.unknown_rank()) {
    AF_RETURN_IF_ERROR(CheckRank("Split value (input 0)", value, 1, -1));
    int axis = 0;
    AF_RETURN_IF_ERROR(
        NormalizeExistingAxis("Split attr 'axis'", ctx.attr<int64_t>("axis"), value, &axis));
    std::vector<int64_t> dims = value.dims();
    if (dims[axis] >= 0) {
      if (dims[axis] % parts != 0) {
        return InvalidArgument("Split of value " + value.ToString() + " along axis " +
                               Str(ctx.attr<int64_t>("axis")) + ": dimension " + Str(dims[axis]) +
                               " is not divisible by num_split " + Str(parts));
      }
      dims[axis] /= parts;
    }
    part = Shape(std::move(dims));
  }
  for (int64_t i = 0; i < parts; ++i) ctx.set_output(static_cast<int>(i), ctx.input_dtype(0), part);
  return Status::OK();
}

// x [d...] -> [d_i * multiples_i ...].
Status InferTile(InferenceContext& ctx) {
  const auto& multiples = ctx.attr<std::vector<int64_t>>("multiples");
  for (int64_t m : multiples) {
    if (m < 0) {
      return InvalidArgument("Tile attr 'multiples' " + IntListToString(multiples) +
                             " has a negative entry");
    }
  }
  const Shape& x = ctx.input_shape(0);
  if (x.unknown_rank()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape(std::vector<int64_t>(multiples.size(), -1)));
    return Status::OK();
  }
  if (static_cast<int>(multiples.size()) != x.rank()) {
    return InvalidArgument("Tile attr 'multiples' " + IntListToString(multiples) +
                           " needs one entry per axis of x " + x.ToString());
  }
  std::vector<int64_t> dims = x.dims();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) continue;
    if (multiples[i] != 0 && dims[i] > INT64_MAX / multiples[i]) {
      return InvalidArgument("Tile of x " + x.ToString() + " by " + IntListToString(multiples) +
                             " has more elements than an int64 counts");
    }
    dims[i] *= multiples[i];
  }
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(dims)));
  return Status::OK();
}

// indices (int) [i...] -> T [i..., depth] (depth at axis).
Status InferOneHot(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("OneHot indices (input 0)", ctx.input_dtype(0), Allowed::kIndex));
  const DType dtype = ctx.attr<DType>("T");
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    return InvalidArgument(std::string("OneHot attr 'T' is ") + DTypeName(dtype) +
                           ": use float32 or float64");
  }
  const int64_t depth = ctx.attr<int64_t>("depth");
  if (depth < 0) return InvalidArgument("OneHot attr 'depth' " + Str(depth) + " must be >= 0");
  const int64_t axis = ctx.attr<int64_t>("axis");
  const Shape& indices = ctx.input_shape(0);
  if (axis < -1) {
    return InvalidArgument("OneHot attr 'axis' " + Str(axis) + " must be -1 or in [0, rank]");
  }
  if (indices.unknown_rank()) {
    ctx.set_output(0, dtype, Shape::UnknownRank());
    return Status::OK();
  }
  if (axis > indices.rank()) {
    return InvalidArgument("OneHot attr 'axis' " + Str(axis) + " is out of range [-1, " +
                           Str(indices.rank()) + "] for indices " + indices.ToString());
  }
  const int at = axis == -1 ? indices.rank() : static_cast<int>(axis);
  ctx.set_output(0, dtype, Inserted(indices, at, depth));
  return Status::OK();
}

// cond (bool), t, e -> t's shape; cond like t or [t.dim(0)].
Status InferSelect(InferenceContext& ctx) {
  if (ctx.input_dtype(0) != DType::kBool) {
    return InvalidArgument(std::string("Select cond (input 0) must be bool, got ") +
                           DTypeName(ctx.input_dtype(0)));
  }
  if (ctx.input_dtype(1) != ctx.input_dtype(2)) {
    return InvalidArgument(std::string("Select t (input 1) has dtype ") +
                           DTypeName(ctx.input_dtype(1)) + " but e (input 2) has " +
                           DTypeName(ctx.input_dtype(2)));
  }
  const Shape& t = ctx.input_shape(1);
  const Shape& e = ctx.input_shape(2);
  if (!t.IsCompatibleWith(e)) {
    return InvalidArgument("Select t (input 1) " + t.ToString() + " and e (input 2) " +
                           e.ToString() + " must have one shape");
  }
  const Shape out = t.MergeWith(e);
  const Shape& cond = ctx.input_shape(0);
  if (!cond.IsCompatibleWith(out)) {
    // The row form: cond [n] picks rows of t, e [n, ...].
    const bool rows =
        !cond.unknown_rank() && cond.rank() == 1 &&
        (out.unknown_rank() || (out.rank() >= 1 && Shape{out.dim(0)}.IsCompatibleWith(cond)));
    if (!rows) {
      return InvalidArgument("Select cond (input 0) " + cond.ToString() +
                             " must have the "
                             "shape of t and e " +
                             out.ToString() + " or be a vector of their first dimension");
    }
  }
  ctx.set_output(0, ctx.input_dtype(1), out);
  return Status::OK();
}

// The StridedSlice output shape of x's shape; unknown rank stays unknown.
StatusOr<Shape> StridedSliceShape(const InferenceContext& ctx, const Shape& x) {
  if (x.unknown_rank()) return Shape::UnknownRank();
  AF_ASSIGN_OR_RETURN(
      std::vector<StridedSliceDim> spec,
      ResolveStridedSlice(
          x.dims(), ctx.attr<std::vector<int64_t>>("begin"), ctx.attr<std::vector<int64_t>>("end"),
          ctx.attr<std::vector<int64_t>>("strides"), ctx.attr<int64_t>("begin_mask"),
          ctx.attr<int64_t>("end_mask"), ctx.attr<int64_t>("shrink_axis_mask")));
  std::vector<int64_t> dims;
  for (const StridedSliceDim& d : spec) {
    if (!d.shrink) dims.push_back(d.size);
  }
  return Shape(std::move(dims));
}

Status InferStridedSlice(InferenceContext& ctx) {
  AF_ASSIGN_OR_RETURN(Shape out, StridedSliceShape(ctx, ctx.input_shape(0)));
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

// like, dy (StridedSlice(like)'s shape, like's dtype) -> like's shape.
Status InferStridedSliceGrad(InferenceContext& ctx) {
  if (ctx.input_dtype(1) != ctx.input_dtype(0)) {
    return InvalidArgument(std::string("StridedSliceGrad dy (input 1) has dtype ") +
                           DTypeName(ctx.input_dtype(1)) + " but like (input 0) has " +
                           DTypeName(ctx.input_dtype(0)));
  }
  AF_ASSIGN_OR_RETURN(Shape sliced, StridedSliceShape(ctx, ctx.input_shape(0)));
  if (!sliced.IsCompatibleWith(ctx.input_shape(1))) {
    return InvalidArgument("StridedSliceGrad dy (input 1) " + ctx.input_shape(1).ToString() +
                           " is not the slice's shape " + sliced.ToString() + " of like " +
                           ctx.input_shape(0).ToString());
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status InferMatrixBandPart(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckRank("MatrixBandPart input", ctx.input_shape(0), 2, -1));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

std::function<int(const AttrMap&)> OutputsFromAttr(const std::string& attr) {
  return [attr](const AttrMap& attrs) {
    auto it = attrs.find(attr);
    if (it == attrs.end() || !it->second.Is<int64_t>()) return 0;
    return static_cast<int>(std::clamp<int64_t>(it->second.Get<int64_t>(), 0, kMaxOutputs));
  };
}

std::vector<AttrDef> StridedSliceAttrDefs() {
  using T = AttrType;
  return {
      Required("begin", T::kIntList),           Required("end", T::kIntList),
      Required("strides", T::kIntList),         Default("begin_mask", T::kInt, int64_t{0}),
      Default("end_mask", T::kInt, int64_t{0}), Default("shrink_axis_mask", T::kInt, int64_t{0})};
}

std::vector<OpDef> ShapeOpSet() {
  using T = AttrType;
  std::vector<OpDef> ops;
  ops.push_back(MakeOp("ExpandDims", 1, 1, {Required("axis", T::kInt)}, InferExpandDims));
  ops.push_back(MakeOp("Squeeze", 1, 1,
                       {Default("squeeze_dims", T::kIntList, std::vector<int64_t>{})},
                       InferSqueeze));
  OpDef pack = MakeOp("Pack", -1, 1, {Default("axis", T::kInt, int64_t{0})}, InferPack);
  pack.min_inputs = 1;
  ops.push_back(std::move(pack));
  OpDef unpack =
      MakeOp("Unpack", 1, 0, {Required("num", T::kInt), Default("axis", T::kInt, int64_t{0})},
             InferUnpack);
  unpack.num_outputs_fn = OutputsFromAttr("num");
  ops.push_back(std::move(unpack));
  OpDef split = MakeOp("Split", 1, 0, {Required("num_split", T::kInt), Required("axis", T::kInt)},
                       InferSplit);
  split.num_outputs_fn = OutputsFromAttr("num_split");
  ops.push_back(std::move(split));
  ops.push_back(MakeOp("Tile", 1, 1, {Required("multiples", T::kIntList)}, InferTile));
  ops.push_back(MakeOp("OneHot", 1, 1,
                       {Required("depth", T::kInt), Default("on_value", T::kFloat, 1.0),
                        Default("off_value", T::kFloat, 0.0), Default("axis", T::kInt, int64_t{-1}),
                        Default("T", T::kType, DType::kFloat32)},
                       InferOneHot));
  ops.push_back(MakeOp("Select", 3, 1, {}, InferSelect));
  ops.push_back(MakeOp("StridedSlice", 1, 1, StridedSliceAttrDefs(), InferStridedSlice));
  ops.push_back(MakeOp("StridedSliceGrad", 2, 1, StridedSliceAttrDefs(), InferStridedSliceGrad));
  ops.push_back(MakeOp("MatrixBandPart", 1, 1,
                       {Required("num_lower", T::kInt), Required("num_upper", T::kInt)},
                       InferMatrixBandPart));
  return ops;
}

[[maybe_unused]] const bool kShapeOpsRegistered = [] {
  for (OpDef& def : ShapeOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
