#include "graph/ops.h"

#include <string>
#include <utility>

namespace actorflow {

namespace ops_internal {

Output Single(const Scope& scope, const std::string& op, const std::vector<Input>& inputs,
              AttrMap attrs) {
  return Output(scope.AddNode(op, inputs, std::move(attrs)), 0);
}

}  // namespace ops_internal

namespace {

using ops_internal::Single;

// A literal's tensor, or the value of the Const node an Output comes from.
const Tensor* LiteralValue(const Input& input) {
  if (input.literal()) return &*input.literal();
  const Node* node = input.output().node;
  if (node != nullptr && node->op() == "Const") return &node->attr<Tensor>("value");
  return nullptr;
}

Output Reduction(const Scope& scope, const std::string& op, const Input& x,
                 std::vector<int64_t> axis, bool keep_dims) {
  return Single(scope, op, {x}, {{"axis", std::move(axis)}, {"keep_dims", keep_dims}});
}

Output FullReduction(const Scope& scope, const std::string& op, const Input& x) {
  return Single(scope, op, {x});
}

SoftmaxCrossEntropyResult CrossEntropy(const Scope& scope, const std::string& op,
                                       const Input& logits, const Input& labels) {
  const Node* node = scope.AddNode(op, {logits, labels});
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1)};
}

AttrMap RandomAttrs(const Shape& shape, DType dtype, int64_t seed) {
  return {{"shape", shape}, {"dtype", dtype}, {"seed", seed}};
}

}  // namespace

// --- Sources and variables -----------------------------------------------------

Output Const(const Scope& scope, const Input& value) {
  if (!scope.ok()) return Output();
  if (!value.literal()) {
    scope.UpdateStatus(InvalidArgument(
        "Const takes a literal or Tensor value, got the output '" +
        (value.output().valid() ? value.output().name() : std::string("<invalid>")) +
        "' (use Identity to copy an output)"));
    return Output();
  }
  return Single(scope, "Const", {}, {{"value", *value.literal()}});
}

Output Const(const Scope& scope, const Input& value, const Shape& shape) {
  if (!scope.ok()) return Output();
  if (!value.literal()) return Const(scope, value);  // records the error
  auto reshaped = value.literal()->Reshaped(shape);
  if (!reshaped.ok()) {
    scope.UpdateStatus(reshaped.status().WithContext("Const"));
    return Output();
  }
  return Const(scope, *reshaped);
}

Output Placeholder(const Scope& scope, DType dtype, const Shape& shape) {
  AttrMap attrs = {{"dtype", dtype}};
  if (!shape.unknown_rank()) attrs["shape"] = shape;
  return Single(scope, "Placeholder", {}, std::move(attrs));
}

Output Variable(const Scope& scope, const Shape& shape, DType dtype) {
  return Single(scope, "Variable", {}, {{"shape", shape}, {"dtype", dtype}});
}

Output Assign(const Scope& scope, const Input& ref, const Input& value, bool validate_shape) {
  return Single(scope, "Assign", {ref, value}, {{"validate_shape", validate_shape}});
}
Output AssignAdd(const Scope& scope, const Input& ref, const Input& value) {
  return Single(scope, "AssignAdd", {ref, value});
}
Output AssignSub(const Scope& scope, const Input& ref, const Input& value) {
  return Single(scope, "AssignSub", {ref, value});
}
Output IsVariableInitialized(const Scope& scope, const Input& ref) {
  return Single(scope, "IsVariableInitialized", {ref});
}
Output VariableShape(const Scope& scope, const Input& ref) {
  return Single(scope, "VariableShape", {ref});
}
Output Identity(const Scope& scope, const Input& x) { return Single(scope, "Identity", {x}); }
const Node* NoOp(const Scope& scope) { return scope.AddNode("NoOp", {}); }

// --- Element-wise --------------------------------------------------------------

#define AF_BINARY_OP(Name)                                               \
  Output Name(const Scope& scope, const Input& x, const Input& y) {      \
    return Single(scope, #Name, {x, y});                                 \
  }
AF_BINARY_OP(Add)
AF_BINARY_OP(Sub)
AF_BINARY_OP(Mul)
AF_BINARY_OP(Div)
AF_BINARY_OP(Pow)
AF_BINARY_OP(Maximum)
AF_BINARY_OP(Minimum)
AF_BINARY_OP(Equal)
AF_BINARY_OP(Less)
AF_BINARY_OP(Greater)
#undef AF_BINARY_OP

#define AF_UNARY_OP(Name)                                                              \
  Output Name(const Scope& scope, const Input& x) { return Single(scope, #Name, {x}); }
AF_UNARY_OP(Neg)
AF_UNARY_OP(Exp)
AF_UNARY_OP(Log)
AF_UNARY_OP(Sqrt)
AF_UNARY_OP(Square)
AF_UNARY_OP(Abs)
AF_UNARY_OP(Relu)
AF_UNARY_OP(Sigmoid)
AF_UNARY_OP(Tanh)
AF_UNARY_OP(ZerosLike)
AF_UNARY_OP(OnesLike)
AF_UNARY_OP(Softmax)
AF_UNARY_OP(LogSoftmax)
#undef AF_UNARY_OP

Output Cast(const Scope& scope, const Input& x, DType dtype) {
  return Single(scope, "Cast", {x}, {{"dtype", dtype}});
}

// --- Neural-network ops ----------------------------------------------------------

Output MatMul(const Scope& scope, const Input& a, const Input& b, bool transpose_a,
              bool transpose_b) {
  return Single(scope, "MatMul", {a, b},
                {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}

Output BiasAdd(const Scope& scope, const Input& value, const Input& bias) {
  return Single(scope, "BiasAdd", {value, bias});
}

SoftmaxCrossEntropyResult SoftmaxCrossEntropyWithLogits(const Scope& scope,
                                                        const Input& logits,
                                                        const Input& labels) {
  return CrossEntropy(scope, "SoftmaxCrossEntropyWithLogits", logits, labels);
}

SoftmaxCrossEntropyResult SparseSoftmaxCrossEntropyWithLogits(const Scope& scope,
                                                              const Input& logits,
                                                              const Input& labels) {
  return CrossEntropy(scope, "SparseSoftmaxCrossEntropyWithLogits", logits, labels);
}

// --- Reductions ----------------------------------------------------------------

#define AF_REDUCTION_OP(Name)                                                         \
  Output Name(const Scope& scope, const Input& x, const std::vector<int64_t>& axis,   \
              bool keep_dims) {                                                       \
    return Reduction(scope, #Name, x, axis, keep_dims);                               \
  }                                                                                   \
  Output Name(const Scope& scope, const Input& x, std::initializer_list<int64_t> axis, \
              bool keep_dims) {                                                       \
    return Reduction(scope, #Name, x, std::vector<int64_t>(axis), keep_dims);         \
  }                                                                                   \
  Output Name(const Scope& scope, const Input& x, int64_t axis, bool keep_dims) {     \
    return Reduction(scope, #Name, x, {axis}, keep_dims);                             \
  }                                                                                   \
  Output Name(const Scope& scope, const Input& x) { return FullReduction(scope, #Name, x); }
AF_REDUCTION_OP(Sum)
AF_REDUCTION_OP(Mean)
AF_REDUCTION_OP(Max)
AF_REDUCTION_OP(Min)
#undef AF_REDUCTION_OP

Output ArgMax(const Scope& scope, const Input& x, int64_t axis) {
  return Single(scope, "ArgMax", {x}, {{"axis", axis}});
}

// --- Shape manipulation ----------------------------------------------------------

Output Reshape(const Scope& scope, const Input& x, const Input& shape) {
  return Single(scope, "Reshape", {x, shape});
}

Output Transpose(const Scope& scope, const Input& x) { return Single(scope, "Transpose", {x}); }

Output Transpose(const Scope& scope, const Input& x, const std::vector<int64_t>& perm) {
  return Single(scope, "Transpose", {x}, {{"perm", perm}});
}

Output ConcatV2(const Scope& scope, const std::vector<Input>& values, int64_t axis) {
  return Single(scope, "ConcatV2", values, {{"axis", axis}});
}

Output Slice(const Scope& scope, const Input& x, const std::vector<int64_t>& begin,
             const std::vector<int64_t>& size) {
  return Single(scope, "Slice", {x}, {{"begin", begin}, {"size", size}});
}

Output EvenSplitPart(const Scope& scope, const Input& x, int64_t index, int64_t parts) {
  return Single(scope, "EvenSplitPart", {x}, {{"index", index}, {"parts", parts}});
}

Output Fill(const Scope& scope, const Shape& shape, const Input& value) {
  if (!scope.ok()) return Output();
  const Tensor* tensor = LiteralValue(value);
  if (tensor == nullptr) {
    scope.UpdateStatus(InvalidArgument(
        "Fill's value becomes an attr, so it must be a literal, a Tensor or a Const output; "
        "got '" + (value.output().valid() ? value.output().name() : std::string("<invalid>")) +
        "'"));
    return Output();
  }
  return Single(scope, "Fill", {}, {{"shape", shape}, {"value", *tensor}});
}

Output ShapeOf(const Scope& scope, const Input& x, DType out_type) {
  return Single(scope, "Shape", {x}, {{"out_type", out_type}});
}

// --- Random numbers ---------------------------------------------------------------

Output RandomUniform(const Scope& scope, const Shape& shape, DType dtype, int64_t seed,
                     double minval, double maxval) {
  AttrMap attrs = RandomAttrs(shape, dtype, seed);
  attrs["minval"] = minval;
  attrs["maxval"] = maxval;
  return Single(scope, "RandomUniform", {}, std::move(attrs));
}

Output RandomNormal(const Scope& scope, const Shape& shape, DType dtype, int64_t seed,
                    double mean, double stddev) {
  AttrMap attrs = RandomAttrs(shape, dtype, seed);
  attrs["mean"] = mean;
  attrs["stddev"] = stddev;
  return Single(scope, "RandomNormal", {}, std::move(attrs));
}

Output TruncatedNormal(const Scope& scope, const Shape& shape, DType dtype, int64_t seed,
                       double mean, double stddev) {
  AttrMap attrs = RandomAttrs(shape, dtype, seed);
  attrs["mean"] = mean;
  attrs["stddev"] = stddev;
  return Single(scope, "TruncatedNormal", {}, std::move(attrs));
}

// --- Training ops ------------------------------------------------------------------

Output ApplyGradientDescent(const Scope& scope, const Input& var, const Input& alpha,
                            const Input& delta) {
  return Single(scope, "ApplyGradientDescent", {var, alpha, delta});
}

Output ApplyMomentum(const Scope& scope, const Input& var, const Input& accum, const Input& lr,
                     const Input& grad, const Input& momentum, bool use_nesterov) {
  return Single(scope, "ApplyMomentum", {var, accum, lr, grad, momentum},
                {{"use_nesterov", use_nesterov}});
}

Output ApplyAdam(const Scope& scope, const Input& var, const Input& m, const Input& v,
                 const Input& beta1_power, const Input& beta2_power, const Input& lr,
                 const Input& beta1, const Input& beta2, const Input& epsilon,
                 const Input& grad) {
  return Single(scope, "ApplyAdam",
                {var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad});
}

Output ApplyAdagrad(const Scope& scope, const Input& var, const Input& accum, const Input& lr,
                    const Input& grad) {
  return Single(scope, "ApplyAdagrad", {var, accum, lr, grad});
}

Output ApplyFtrl(const Scope& scope, const Input& var, const Input& accum, const Input& linear,
                 const Input& grad, const Input& lr, const Input& l1, const Input& l2,
                 const Input& lr_power) {
  return Single(scope, "ApplyFtrl", {var, accum, linear, grad, lr, l1, l2, lr_power});
}

// --- Gradient helper ops -----------------------------------------------------------

Output ReluGrad(const Scope& scope, const Input& dy, const Input& x) {
  return Single(scope, "ReluGrad", {dy, x});
}

Output SigmoidGrad(const Scope& scope, const Input& y, const Input& dy) {
  return Single(scope, "SigmoidGrad", {y, dy});
}

Output TanhGrad(const Scope& scope, const Input& y, const Input& dy) {
  return Single(scope, "TanhGrad", {y, dy});
}

Output SumToShapeOf(const Scope& scope, const Input& grad, const Input& like) {
  return Single(scope, "SumToShapeOf", {grad, like});
}

Output BroadcastToShapeOf(const Scope& scope, const Input& x, const Input& like,
                          const std::optional<std::vector<int64_t>>& axis, bool keep_dims) {
  AttrMap attrs = {{"keep_dims", keep_dims}};
  if (axis) attrs["axis"] = *axis;
  return Single(scope, "BroadcastToShapeOf", {x, like}, std::move(attrs));
}

Output PadToShapeOf(const Scope& scope, const Input& grad, const Input& like,
                    const std::vector<int64_t>& begin) {
  return Single(scope, "PadToShapeOf", {grad, like}, {{"begin", begin}});
}

Output SliceConcatPart(const Scope& scope, const Input& grad, const std::vector<Input>& parts,
                       int64_t axis, int64_t index) {
  std::vector<Input> inputs = {grad};
  inputs.insert(inputs.end(), parts.begin(), parts.end());
  return Single(scope, "SliceConcatPart", inputs, {{"axis", axis}, {"index", index}});
}

Output Size(const Scope& scope, const Input& x, DType out_type) {
  return Single(scope, "Size", {x}, {{"out_type", out_type}});
}

}  // namespace actorflow
