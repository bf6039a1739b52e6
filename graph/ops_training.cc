// Training ops: in-place optimizer updates (TensorFlow's Apply* ops).
//
// Each takes its variable and slot variables as ref inputs (they must come from
// Variable nodes), then scalar hyper-parameters and the gradient, all of the
// variable's float dtype. Output 0 is the variable's new value [var shape].
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"

namespace actorflow {
namespace op_set_internal {
namespace {

// Where the inputs of one Apply op sit: refs come first (input 0 is the variable
// being trained, the others its slots), then scalars, and one gradient.
struct ApplyOpLayout {
  std::vector<std::string> input_names;  // for error messages, one per input
  int num_refs = 1;
  std::vector<int> scalar_inputs;
  int grad_input = 0;
};

// Every input has the variable's float dtype; slots and the gradient are compatible
// with the variable's shape; hyper-parameters are scalars.
InferenceFn InferApply(ApplyOpLayout layout) {
  return [layout](InferenceContext& ctx) -> Status {
    AF_RETURN_IF_ERROR(CheckDType(layout.input_names[0] + " (input 0)",
                                  ctx.input_dtype(0), Allowed::kFloating));
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      if (ctx.input_dtype(i) != ctx.input_dtype(0)) {
        return InvalidArgument(layout.input_names[i] + " (input " + std::to_string(i) +
                               ") has dtype " + DTypeName(ctx.input_dtype(i)) +
                               " but var has dtype " + DTypeName(ctx.input_dtype(0)) +
                               ": every input must have the variable's dtype (use Cast)");
      }
    }
    Shape var_shape = ctx.input_shape(0);
    auto check_like_var = [&](int i) -> Status {
      if (!var_shape.IsCompatibleWith(ctx.input_shape(i))) {
        return InvalidArgument(layout.input_names[i] + " (input " + std::to_string(i) +
                               ") has shape " + ctx.input_shape(i).ToString() +
                               " but var has shape " + var_shape.ToString());
      }
      var_shape = var_shape.MergeWith(ctx.input_shape(i));
      return Status::OK();
    };
    for (int i = 1; i < layout.num_refs; ++i) AF_RETURN_IF_ERROR(check_like_var(i));
    AF_RETURN_IF_ERROR(check_like_var(layout.grad_input));
    for (int i : layout.scalar_inputs) {
      AF_RETURN_IF_ERROR(CheckRank(layout.input_names[i] + " (input " + std::to_string(i) + ")",
                                   ctx.input_shape(i), 0, 0));
    }
    ctx.set_output(0, ctx.input_dtype(0), var_shape);
    return Status::OK();
  };
}

OpDef MakeApplyOp(std::string name, ApplyOpLayout layout, std::vector<AttrDef> attrs) {
  const int num_inputs = static_cast<int>(layout.input_names.size());
  std::vector<int> refs;
  for (int i = 0; i < layout.num_refs; ++i) refs.push_back(i);
  OpDef def = Stateful(MakeOp(std::move(name), num_inputs, 1, std::move(attrs),
                              InferApply(std::move(layout))));
  def.ref_inputs = std::move(refs);
  return def;
}

std::vector<OpDef> TrainingOpSet() {
  using T = AttrType;
  std::vector<OpDef> ops;
  // var -= alpha * delta
  ops.push_back(MakeApplyOp("ApplyGradientDescent",
                            {{"var", "alpha", "delta"}, 1, {1}, 2}, {}));
  // accum = accum * momentum + grad; var -= lr * accum
  // (nesterov: var -= lr * grad + lr * momentum * accum)
  ops.push_back(MakeApplyOp("ApplyMomentum",
                            {{"var", "accum", "lr", "grad", "momentum"}, 2, {2, 4}, 3},
                            {Default("use_nesterov", T::kBool, false)}));
  // lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
  // m = beta1 * m + (1 - beta1) * grad; v = beta2 * v + (1 - beta2) * grad^2
  // var -= lr_t * m / (sqrt(v) + epsilon)
  ops.push_back(MakeApplyOp("ApplyAdam",
                            {{"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1",
                              "beta2", "epsilon", "grad"},
                             3,
                             {3, 4, 5, 6, 7, 8},
                             9},
                            {}));
  // accum += grad^2; var -= lr * grad / sqrt(accum)
  ops.push_back(MakeApplyOp("ApplyAdagrad", {{"var", "accum", "lr", "grad"}, 2, {2}, 3}, {}));
  // FTRL-proximal (kernels/optimizer_rules.h, FtrlUpdate); TensorFlow's input order.
  ops.push_back(MakeApplyOp(
      "ApplyFtrl",
      {{"var", "accum", "linear", "grad", "lr", "l1", "l2", "lr_power"}, 3, {4, 5, 6, 7}, 3},
      {}));
  return ops;
}

[[maybe_unused]] const bool kTrainingOpsRegistered = [] {
  for (OpDef& def : TrainingOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
