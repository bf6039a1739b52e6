// Gradient helper ops: the building blocks of the backward rules in
// graph/gradient_rules.cc. They are ordinary ops (graph JSON, kernels, placement
// treat them like any other) whose shapes are often only known at run time, which is
// why several take a `like` input whose runtime shape they adopt.
//
// Kernels: kernels/cpu/gradient_kernels.cc.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"
#include "graph/shape_inference.h"

namespace actorflow {
namespace op_set_internal {
namespace {

// ReluGrad(dy, x), SigmoidGrad(y, dy), TanhGrad(y, dy): same float dtype,
// broadcasting like Mul (in practice both operands have the same shape).
Status InferActivationGrad(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  AF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx.input_shape(0), ctx.input_shape(1)));
  ctx.set_output(0, ctx.input_dtype(0), std::move(shape));
  return Status::OK();
}

// SumToShapeOf(grad, like) -> grad's dtype, like's shape. like must broadcast to
// grad's shape (like's dtype is irrelevant: only its shape is read).
Status InferSumToShapeOf(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  const Shape& grad = ctx.input_shape(0);
  const Shape& like = ctx.input_shape(1);
  if (!grad.unknown_rank() && !like.unknown_rank() && like.rank() > grad.rank()) {
    return InvalidArgument("like " + like.ToString() + " has a higher rank than grad " +
                           grad.ToString() + ", so it cannot broadcast to it");
  }
  AF_RETURN_IF_ERROR(BroadcastShapes(grad, like).status());
  ctx.set_output(0, ctx.input_dtype(0), like);
  return Status::OK();
}

// BroadcastToShapeOf(x, like; axis, keep_dims) -> x's dtype, like's shape. x must have
// the shape of the reduction of like over `axis` with `keep_dims`.
Status InferBroadcastToShapeOf(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  const Shape& like = ctx.input_shape(1);
  AF_ASSIGN_OR_RETURN(Shape reduced,
                      ReducedShape(like, AxesAttr(ctx), ctx.attr<bool>("keep_dims")));
  if (!reduced.IsCompatibleWith(ctx.input_shape(0))) {
    return InvalidArgument("x " + ctx.input_shape(0).ToString() +
                           " is not the shape of the reduction of like " + like.ToString() +
                           " (" + reduced.ToString() + ")");
  }
  ctx.set_output(0, ctx.input_dtype(0), like);
  return Status::OK();
}

// PadToShapeOf(grad, like; begin) -> grad's dtype, like's shape: grad must fit in
// like's shape at `begin`.
Status InferPadToShapeOf(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  const Shape& grad = ctx.input_shape(0);
  const Shape& like = ctx.input_shape(1);
  const auto& begin = ctx.attr<std::vector<int64_t>>("begin");
  for (const Shape* s : {&grad, &like}) {
    if (!s->unknown_rank() && s->rank() != static_cast<int>(begin.size())) {
      return InvalidArgument("begin " + IntListToString(begin) + " does not match the rank of " +
                             s->ToString());
    }
  }
  if (!grad.unknown_rank() && !like.unknown_rank()) {
    for (int i = 0; i < grad.rank(); ++i) {
      if (begin[i] < 0 || (grad.dim(i) >= 0 && like.dim(i) >= 0 &&
                           begin[i] + grad.dim(i) > like.dim(i))) {
        return InvalidArgument("grad " + grad.ToString() + " at begin " +
                               IntListToString(begin) + " does not fit in " + like.ToString());
      }
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), like);
  return Status::OK();
}

// SliceConcatPart(grad, x_0, ..., x_{n-1}; axis, index) -> grad's dtype, x_index's
// shape. grad has the shape of ConcatV2(x_0, ..., x_{n-1}; axis).
Status InferSliceConcatPart(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  const int64_t index = ctx.attr<int64_t>("index");
  const int n = ctx.num_inputs() - 1;
  if (index < 0 || index >= n) {
    return InvalidArgument("index " + std::to_string(index) + " is out of range for " +
                           std::to_string(n) + " concatenated input(s)");
  }
  std::vector<Shape> parts;
  for (int i = 1; i <= n; ++i) parts.push_back(ctx.input_shape(i));
  AF_ASSIGN_OR_RETURN(Shape concat, ConcatShape(parts, ctx.attr<int64_t>("axis")));
  if (!concat.IsCompatibleWith(ctx.input_shape(0))) {
    return InvalidArgument("grad " + ctx.input_shape(0).ToString() +
                           " is not the shape of the concatenation " + concat.ToString());
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(1 + static_cast<int>(index)));
  return Status::OK();
}

// Size(x; out_type) -> out_type [] (int32 or int64): x's number of elements.
Status InferSize(InferenceContext& ctx) {
  const DType out_type = ctx.attr<DType>("out_type");
  AF_RETURN_IF_ERROR(CheckDType("attr 'out_type'", out_type, Allowed::kIndex));
  ctx.set_output(0, out_type, Shape{});
  return Status::OK();
}

std::vector<OpDef> GradientHelperOpSet() {
  using T = AttrType;
  std::vector<OpDef> ops;
  for (const char* name : {"ReluGrad", "SigmoidGrad", "TanhGrad"}) {
    ops.push_back(MakeOp(name, 2, 1, {}, InferActivationGrad));
  }
  ops.push_back(MakeOp("SumToShapeOf", 2, 1, {}, InferSumToShapeOf));
  ops.push_back(MakeOp("BroadcastToShapeOf", 2, 1,
                       {Optional("axis", T::kIntOrList), Default("keep_dims", T::kBool, false)},
                       InferBroadcastToShapeOf));
  ops.push_back(
      MakeOp("PadToShapeOf", 2, 1, {Required("begin", T::kIntList)}, InferPadToShapeOf));
  OpDef concat_part = MakeOp("SliceConcatPart", -1, 1,
                             {Required("axis", T::kInt), Required("index", T::kInt)},
                             InferSliceConcatPart);
  concat_part.min_inputs = 2;
  ops.push_back(std::move(concat_part));
  ops.push_back(MakeOp("Size", 1, 1, {Default("out_type", T::kType, DType::kInt32)}, InferSize));
  return ops;
}

[[maybe_unused]] const bool kGradientHelperOpsRegistered = [] {
  for (OpDef& def : GradientHelperOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
