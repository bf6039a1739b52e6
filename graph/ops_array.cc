// The op set's shape manipulation: Reshape, Transpose, ConcatV2, Slice, Fill and
// Shape, registered with their inputs, outputs, attrs and shape inference
// (graph/ops.h documents what each op promises). They move or describe data without
// arithmetic, so their kernels exist for every dtype. The rest of the core op set is
// in ops_core.cc; the shape arithmetic in graph/shape_inference.h.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"
#include "graph/shape_inference.h"

namespace actorflow {
namespace op_set_internal {
namespace {

// An int-list attr, or nullopt when the node does not write it.
std::optional<std::vector<int64_t>> OptionalIntList(const InferenceContext& ctx,
                                                   const std::string& attr) {
  if (!ctx.has_attr(attr)) return std::nullopt;
  return ctx.attr<std::vector<int64_t>>(attr);
}

// x, shape (int32/int64 [n]) -> x's dtype with the requested shape; known only when
// the shape input is a Const.
Status InferReshape(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("shape input", ctx.input_dtype(1), Allowed::kIndex));
  AF_RETURN_IF_ERROR(CheckRank("shape input", ctx.input_shape(1), 1, 1));
  const DType dtype = ctx.input_dtype(0);
  if (const Tensor* requested = ctx.input_constant(1)) {
    std::vector<int64_t> dims(requested->NumElements());
    for (int64_t i = 0; i < requested->NumElements(); ++i) {
      dims[i] = requested->dtype() == DType::kInt32 ? requested->data<int32_t>()[i]
                                                    : requested->data<int64_t>()[i];
    }
    AF_ASSIGN_OR_RETURN(Shape shape, ReshapedShape(ctx.input_shape(0), dims));
    ctx.set_output(0, dtype, std::move(shape));
    return Status::OK();
  }
  const Shape& shape_of_shape = ctx.input_shape(1);
  if (!shape_of_shape.unknown_rank() && shape_of_shape.dim(0) >= 0) {
    ctx.set_output(0, dtype, Shape(std::vector<int64_t>(shape_of_shape.dim(0), -1)));
  } else {
    ctx.set_output(0, dtype, Shape::UnknownRank());
  }
  return Status::OK();
}

Status InferTranspose(InferenceContext& ctx) {
  AF_ASSIGN_OR_RETURN(Shape shape,
                      TransposedShape(ctx.input_shape(0), OptionalIntList(ctx, "perm")));
  ctx.set_output(0, ctx.input_dtype(0), std::move(shape));
  return Status::OK();
}

Status InferConcatV2(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.input_shape(i));
  AF_ASSIGN_OR_RETURN(Shape shape, ConcatShape(shapes, ctx.attr<int64_t>("axis")));
  ctx.set_output(0, ctx.input_dtype(0), std::move(shape));
  return Status::OK();
}

Status InferSlice(InferenceContext& ctx) {
  AF_ASSIGN_OR_RETURN(Shape shape,
                      SlicedShape(ctx.input_shape(0), ctx.attr<std::vector<int64_t>>("begin"),
                                  ctx.attr<std::vector<int64_t>>("size")));
  ctx.set_output(0, ctx.input_dtype(0), std::move(shape));
  return Status::OK();
}

// x [n, ...] -> part `index` of `parts`: [n / parts + (index < n % parts), ...], the
// first dimension unknown while n is.
Status InferEvenSplitPart(InferenceContext& ctx) {
  const int64_t index = ctx.attr<int64_t>("index");
  const int64_t parts = ctx.attr<int64_t>("parts");
  if (parts < 1 || index < 0 || index >= parts) {
    return InvalidArgument("EvenSplitPart index " + std::to_string(index) + " of " +
                           std::to_string(parts) +
                           " parts: use at least 1 part and 0 <= index < parts");
  }
  const Shape& x = ctx.input_shape(0);
  if (x.unknown_rank()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::UnknownRank());
    return Status::OK();
  }
  AF_RETURN_IF_ERROR(CheckRank("EvenSplitPart input", x, 1, -1));
  std::vector<int64_t> dims = x.dims();
  if (dims[0] >= 0) dims[0] = dims[0] / parts + (index < dims[0] % parts ? 1 : 0);
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(dims)));
  return Status::OK();
}

Status InferFill(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckFullyDefinedAttr(ctx, "shape"));
  const Tensor& value = ctx.attr<Tensor>("value");
  if (!value.IsInitialized() || value.rank() != 0) {
    return InvalidArgument("attr 'value' must be a scalar tensor, got " + value.DebugString());
  }
  ctx.set_output(0, value.dtype(), ctx.attr<Shape>("shape"));
  return Status::OK();
}

// x -> out_type [rank(x)].
Status InferShape(InferenceContext& ctx) {
  const DType out_type = ctx.attr<DType>("out_type");
  AF_RETURN_IF_ERROR(CheckDType("attr 'out_type'", out_type, Allowed::kIndex));
  const Shape& x = ctx.input_shape(0);
  ctx.set_output(0, out_type, Shape{x.unknown_rank() ? Shape::kUnknownDim : x.rank()});
  return Status::OK();
}

// ---------------------------------------------------------------------------
// The shape-manipulation op set.

std::vector<OpDef> ArrayOpSet() {
  using T = AttrType;
  std::vector<OpDef> ops;
  auto add = [&ops](OpDef def) { ops.push_back(std::move(def)); };
  add(MakeOp("Reshape", 2, 1, {}, InferReshape));
  add(MakeOp("Transpose", 1, 1, {Optional("perm", T::kIntList)}, InferTranspose));
  OpDef concat = MakeOp("ConcatV2", -1, 1, {Required("axis", T::kInt)}, InferConcatV2);
  concat.min_inputs = 1;
  add(std::move(concat));
  add(MakeOp("Slice", 1, 1, {Required("begin", T::kIntList), Required("size", T::kIntList)},
             InferSlice));
  add(MakeOp("EvenSplitPart", 1, 1, {Required("index", T::kInt), Required("parts", T::kInt)},
             InferEvenSplitPart));
  add(MakeOp("Fill", 0, 1, {Required("shape", T::kShape), Required("value", T::kTensor)},
             InferFill));
  add(MakeOp("Shape", 1, 1, {Default("out_type", T::kType, DType::kInt32)}, InferShape));
  return ops;
}

[[maybe_unused]] const bool kArrayOpsRegistered = [] {
  for (OpDef& def : ArrayOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
