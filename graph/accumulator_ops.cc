// The builder functions of the ConditionalAccumulator ops (graph/accumulator_ops.h).
#include "graph/accumulator_ops.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace actorflow {
namespace {

// The scope of an op on `accumulator`: its node's device, colocated with it, after it.
StatusOr<Scope> OnAccumulator(const Scope& scope, const Accumulator& accumulator,
                              const char* op) {
  if (!scope.ok()) return scope.status();
  if (!accumulator.valid()) {
    return InvalidArgument(std::string(op) +
                           ": the accumulator is invalid (its creation failed?)");
  }
  Output a(accumulator.node, 0);
  return scope.WithDevice(accumulator.node->requested_device())
      .ColocateWith(a)
      .WithControlDependencies({a});
}

AttrMap AccumulatorNameAttrs(const Accumulator& accumulator) {
  return {{"container", accumulator.container}, {"shared_name", accumulator.shared_name}};
}

// The dtype and (when known) shape attrs that ops checking gradients carry.
AttrMap GradientAttrs(const Accumulator& accumulator) {
  AttrMap attrs = AccumulatorNameAttrs(accumulator);
  attrs["dtype"] = accumulator.dtype;
  if (!accumulator.shape.unknown_rank()) attrs["shape"] = accumulator.shape;
  return attrs;
}

// An integer literal as the scalar dtype the op takes (integer literals are int32, a
// step is int64); anything else as given, for inference to judge.
Input AsIntegerScalar(const Input& input, DType dtype) {
  const std::optional<Tensor>& literal = input.literal();
  if (!literal.has_value() || !literal->IsInitialized() || literal->NumElements() != 1 ||
      literal->rank() != 0 || literal->dtype() == dtype) {
    return input;
  }
  if (literal->dtype() == DType::kInt32 && dtype == DType::kInt64) {
    return Input(static_cast<int64_t>(literal->data<int32_t>()[0]));
  }
  if (literal->dtype() == DType::kInt64 && dtype == DType::kInt32) {
    const int64_t v = literal->data<int64_t>()[0];
    if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
      return Input(static_cast<int32_t>(v));
    }
  }
  return input;
}

const Node* AddOn(const Scope& scope, const Accumulator& accumulator, const char* op,
                  const std::vector<Input>& inputs, AttrMap attrs) {
  StatusOr<Scope> on = OnAccumulator(scope, accumulator, op);
  if (!on.ok()) {
    scope.UpdateStatus(on.status());
    return nullptr;
  }
  return on->AddNode(op, inputs, std::move(attrs));
}

}  // namespace

Accumulator ConditionalAccumulator(const Scope& scope, DType dtype, const Shape& shape,
                                   const std::string& shared_name, const std::string& container) {
  AttrMap attrs;
  attrs["dtype"] = dtype;
  if (!shape.unknown_rank()) attrs["shape"] = shape;
  attrs["shared_name"] = shared_name;  // "": the session's own, as in TensorFlow 1
  attrs["container"] = container;
  const Node* node = scope.AddNode("ConditionalAccumulator", {}, std::move(attrs));
  if (node == nullptr) return {};
  return Accumulator{node, container, shared_name.empty() ? node->name() : shared_name, dtype,
                     shape};
}

const Node* AccumulatorApplyGradient(const Scope& scope, const Accumulator& accumulator,
                                     const Input& local_step, const Input& gradient) {
  return AddOn(scope, accumulator, "AccumulatorApplyGradient",
               {AsIntegerScalar(local_step, DType::kInt64), gradient},
               GradientAttrs(accumulator));
}

Output AccumulatorTakeGradient(const Scope& scope, const Accumulator& accumulator,
                               const Input& num_required, int64_t timeout_ms) {
  AttrMap attrs = GradientAttrs(accumulator);
  attrs["timeout_ms"] = timeout_ms;
  return Output(AddOn(scope, accumulator, "AccumulatorTakeGradient",
                      {AsIntegerScalar(num_required, DType::kInt32)}, std::move(attrs)),
                0);
}

const Node* AccumulatorSetGlobalStep(const Scope& scope, const Accumulator& accumulator,
                                     const Input& new_global_step) {
  return AddOn(scope, accumulator, "AccumulatorSetGlobalStep",
               {AsIntegerScalar(new_global_step, DType::kInt64)},
               AccumulatorNameAttrs(accumulator));
}

Output AccumulatorNumAccumulated(const Scope& scope, const Accumulator& accumulator) {
  return Output(
      AddOn(scope, accumulator, "AccumulatorNumAccumulated", {}, AccumulatorNameAttrs(accumulator)),
      0);
}

Output AccumulatorNumDropped(const Scope& scope, const Accumulator& accumulator) {
  return Output(
      AddOn(scope, accumulator, "AccumulatorNumDropped", {}, AccumulatorNameAttrs(accumulator)), 0);
}

}  // namespace actorflow
