// ConditionalAccumulator ops: TensorFlow 1's tf.ConditionalAccumulator (dense), the
// gradient aggregation of synchronous replicas. Kernels:
// kernels/cpu/accumulator_kernels.cc, through the task's QueueService
// (kernels/queue_service.h); the rules are kernels/accumulator_state.h's. Builder
// functions: graph/accumulator_ops.h.
//
// An accumulator is named like a queue by (container, shared_name) within the task
// that runs its ops (the builders colocate them with its node); without a
// shared_name it is the session's own, named by its node's name.
//
// ConditionalAccumulator() -> (nothing): creates the accumulator on first run, or
//   checks that the existing one has the same dtype and shape. dtype: float32 or
//   float64; shape: optional (absent = unknown rank; -1 dims unknown until the first
//   gradient); container, shared_name: strings ("").
// AccumulatorApplyGradient(local_step int64 [], gradient dtype shape): adds the
//   gradient, or drops it as stale when local_step < the global step. dtype and
//   shape: the accumulator's, to check the gradient while building.
// AccumulatorTakeGradient(num_required int32 []) -> dtype shape: waits until
//   num_required gradients are summed, then their average (the global step + 1).
//   dtype, shape as the accumulator's; timeout_ms: int (0 = the session's
//   operation_timeout_in_ms).
// AccumulatorSetGlobalStep(new_global_step int64 []).
// AccumulatorNumAccumulated() -> int32 []; AccumulatorNumDropped() -> int64 [].
// All are stateful; all but ConditionalAccumulator need a non-empty shared_name.
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"

namespace actorflow {
namespace op_set_internal {
namespace {

Status CheckAccumulatorName(const InferenceContext& ctx) {
  if (ctx.attr<std::string>("shared_name").empty()) {
    return InvalidArgument("attr 'shared_name' is empty: an accumulator op needs its name");
  }
  return Status::OK();
}

Status CheckGradientDType(DType dtype) {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) return Status::OK();
  return InvalidArgument("attr 'dtype' is " + std::string(DTypeName(dtype)) +
                         ": an accumulator's gradients are float32 or float64");
}

// The accumulator's shape from the optional "shape" attr.
Shape AccumulatorShape(const InferenceContext& ctx) {
  return ctx.has_attr("shape") ? ctx.attr<Shape>("shape") : Shape::UnknownRank();
}

// Input i is a scalar of `dtype` (`what` names it: "local_step").
Status CheckScalarInput(const InferenceContext& ctx, int i, DType dtype, const std::string& what) {
  if (ctx.input_dtype(i) != dtype) {
    return InvalidArgument("input " + std::to_string(i) + " (" + what + ") has dtype " +
                           DTypeName(ctx.input_dtype(i)) + ": it must be " + DTypeName(dtype));
  }
  return CheckRank("input " + std::to_string(i) + " (" + what + ")", ctx.input_shape(i), 0, 0);
}

Status InferAccumulator(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckGradientDType(ctx.attr<DType>("dtype")));
  return AccumulatorShape(ctx).CheckRankLimit();
}

Status InferApplyGradient(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckAccumulatorName(ctx));
  AF_RETURN_IF_ERROR(CheckScalarInput(ctx, 0, DType::kInt64, "local_step"));
  const DType dtype = ctx.attr<DType>("dtype");
  if (ctx.input_dtype(1) != dtype) {
    return InvalidArgument("input 1 (gradient) has dtype " +
                           std::string(DTypeName(ctx.input_dtype(1))) +
                           " but the accumulator's is " + DTypeName(dtype));
  }
  const Shape shape = AccumulatorShape(ctx);
  if (!shape.IsCompatibleWith(ctx.input_shape(1))) {
    return InvalidArgument("input 1 (gradient) has shape " + ctx.input_shape(1).ToString() +
                           " but the accumulator's is " + shape.ToString());
  }
  return Status::OK();
}

Status InferTakeGradient(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckAccumulatorName(ctx));
  AF_RETURN_IF_ERROR(CheckScalarInput(ctx, 0, DType::kInt32, "num_required"));
  if (const Tensor* n = ctx.input_constant(0); n != nullptr && n->NumElements() == 1 &&
                                               n->data<int32_t>()[0] < 1) {
    return InvalidArgument("input 0 (num_required) is " +
                           std::to_string(n->data<int32_t>()[0]) + ": it must be >= 1");
  }
  const DType dtype = ctx.attr<DType>("dtype");
  AF_RETURN_IF_ERROR(CheckGradientDType(dtype));
  ctx.set_output(0, dtype, AccumulatorShape(ctx));
  return Status::OK();
}

std::vector<OpDef> AccumulatorOpSet() {
  using T = AttrType;
  const std::vector<AttrDef> name = {Default("container", T::kString, AttrValue("")),
                                     Required("shared_name", T::kString)};
  auto with = [&name](std::vector<AttrDef> more) {
    std::vector<AttrDef> all = name;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const AttrDef dtype = Required("dtype", T::kType);
  const AttrDef shape = Optional("shape", T::kShape);

  std::vector<OpDef> ops;
  // The accumulator node's shared_name may be empty: the node's own name.
  ops.push_back(Stateful(MakeOp("ConditionalAccumulator", 0, 0,
                                {Default("container", T::kString, AttrValue("")),
                                 Default("shared_name", T::kString, AttrValue("")), dtype,
                                 shape},
                                InferAccumulator)));
  ops.push_back(Stateful(
      MakeOp("AccumulatorApplyGradient", 2, 0, with({dtype, shape}), InferApplyGradient)));
  ops.push_back(Stateful(MakeOp(
      "AccumulatorTakeGradient", 1, 1,
      with({dtype, shape, Default("timeout_ms", T::kInt, AttrValue(int64_t{0}))}),
      InferTakeGradient)));
  ops.push_back(Stateful(
      MakeOp("AccumulatorSetGlobalStep", 1, 0, name, [](InferenceContext& c) {
        AF_RETURN_IF_ERROR(CheckAccumulatorName(c));
        return CheckScalarInput(c, 0, DType::kInt64, "new_global_step");
      })));
  ops.push_back(Stateful(
      MakeOp("AccumulatorNumAccumulated", 0, 1, name, [](InferenceContext& c) {
        AF_RETURN_IF_ERROR(CheckAccumulatorName(c));
        c.set_output(0, DType::kInt32, Shape{});
        return Status::OK();
      })));
  ops.push_back(Stateful(MakeOp("AccumulatorNumDropped", 0, 1, name, [](InferenceContext& c) {
    AF_RETURN_IF_ERROR(CheckAccumulatorName(c));
    c.set_output(0, DType::kInt64, Shape{});
    return Status::OK();
  })));
  return ops;
}

[[maybe_unused]] const bool kAccumulatorOpsRegistered = [] {
  for (OpDef& def : AccumulatorOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
