// Every backward rule of the op set, one function per differentiable op, and the
// table that Gradients() looks them up in (see graph/gradients.h for the contract).
// The rules of the normalization ops live in graph/gradient_rules_norm.cc, those of
// the sparse ops in gradient_rules_sparse.cc, and the sequence models' in
// gradient_rules_shape.cc, gradient_rules_math.cc and gradient_rules_rnn.cc.
//
// Notation in the comments: g is the incoming gradient (the gradient of the op's
// output), dx the gradient of input x. Binary element-wise ops broadcast, so their
// input gradients are summed back to each input's runtime shape (Unbroadcast).
// Constants are built in the dtype of the tensors they meet.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/gradient_rules_internal.h"
#include "graph/gradients.h"
#include "graph/ops.h"

namespace actorflow {
namespace gradient_rules_internal {

Output Scalar(const Scope& s, double value, DType dtype) {
  return Const(s, dtype == DType::kFloat32 ? Tensor::Scalar(static_cast<float>(value))
                                           : Tensor::Scalar(value));
}

Output Unbroadcast(const Scope& s, const Output& g, const Output& x) {
  if (x.shape().IsFullyDefined() && x.shape() == g.shape()) return g;
  return SumToShapeOf(s, g, x);
}

}  // namespace gradient_rules_internal

namespace {

using gradient_rules_internal::In;
using gradient_rules_internal::Out;
using gradient_rules_internal::Scalar;
using gradient_rules_internal::Unbroadcast;
using Grads = std::vector<Output>;

// 1.0 where cond holds, else 0.0, in `dtype`.
Output Indicator(const Scope& s, const Output& cond, DType dtype) { return Cast(s, cond, dtype); }

// The "axis" attr of a reduction node: nullopt = every axis.
std::optional<std::vector<int64_t>> ReductionAxes(const Node& op) {
  auto it = op.attrs().find("axis");
  if (it == op.attrs().end()) return std::nullopt;
  if (it->second.Is<int64_t>()) return std::vector<int64_t>{it->second.Get<int64_t>()};
  return it->second.Get<std::vector<int64_t>>();
}

// A reduction of x with op's own axis and keep_dims attrs.
Output ReduceLike(const Scope& s, const std::string& reduction, const Output& x,
                  const Node& op) {
  AttrMap attrs = {{"keep_dims", op.attr<bool>("keep_dims")}};
  if (auto axes = ReductionAxes(op)) attrs["axis"] = *axes;
  return Output(s.AddNode(reduction, {x}, std::move(attrs)), 0);
}

// v (shaped like op's output) repeated along op's reduced axes to op's input shape.
Output UnreduceLike(const Scope& s, const Output& v, const Node& op) {
  return BroadcastToShapeOf(s, v, In(op, 0), ReductionAxes(op), op.attr<bool>("keep_dims"));
}

// --- Element-wise binary ops --------------------------------------------------------

Status AddGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = Unbroadcast(s, dy[0], In(op, 0));
  (*dx)[1] = Unbroadcast(s, dy[0], In(op, 1));
  return Status::OK();
}

Status SubGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = Unbroadcast(s, dy[0], In(op, 0));
  (*dx)[1] = Unbroadcast(s, Neg(s, dy[0]), In(op, 1));
  return Status::OK();
}

// z = x * y: dx = g * y, dy = g * x.
Status MulGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), y = In(op, 1);
  (*dx)[0] = Unbroadcast(s, Mul(s, dy[0], y), x);
  (*dx)[1] = Unbroadcast(s, Mul(s, x, dy[0]), y);
  return Status::OK();
}

// z = x / y: dx = g / y, dy = g * (-x / y / y).
Status DivGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), y = In(op, 1);
  (*dx)[0] = Unbroadcast(s, Div(s, dy[0], y), x);
  (*dx)[1] = Unbroadcast(s, Mul(s, dy[0], Div(s, Div(s, Neg(s, x), y), y)), y);
  return Status::OK();
}

// z = x ^ y: dx = g * y * x^(y-1); dy = g * z * log(x) where x > 0, else 0 (as
// TensorFlow: the real power of a non-positive base has no derivative in y).
Status PowGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), y = In(op, 1), z = Out(op);
  const DType t = x.dtype();
  const Output one = Scalar(s, 1.0, t);
  (*dx)[0] = Unbroadcast(s, Mul(s, dy[0], Mul(s, y, Pow(s, x, Sub(s, y, one)))), x);
  const Output positive = Indicator(s, Greater(s, x, Scalar(s, 0.0, t)), t);
  const Output safe_x = Add(s, Mul(s, x, positive), Sub(s, one, positive));  // x > 0 ? x : 1
  (*dx)[1] = Unbroadcast(s, Mul(s, dy[0], Mul(s, z, Log(s, safe_x))), y);
  return Status::OK();
}

// The winner of each element takes g; ties go to x (as TensorFlow's x >= y mask).
// `y_wins` is 1 where y's element was selected.
void MinMaxSelectGrad(const Scope& s, const Node& op, const Output& g, const Output& y_wins,
                      Grads* dx) {
  const Output to_y = Mul(s, g, y_wins);
  (*dx)[0] = Unbroadcast(s, Sub(s, g, to_y), In(op, 0));
  (*dx)[1] = Unbroadcast(s, to_y, In(op, 1));
}

Status MaximumGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), y = In(op, 1);
  MinMaxSelectGrad(s, op, dy[0], Indicator(s, Less(s, x, y), x.dtype()), dx);
  return Status::OK();
}

Status MinimumGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), y = In(op, 1);
  MinMaxSelectGrad(s, op, dy[0], Indicator(s, Greater(s, x, y), x.dtype()), dx);
  return Status::OK();
}

// --- Element-wise unary ops ---------------------------------------------------------

Status IdentityGrad(const Scope&, const Node&, const Grads& dy, Grads* dx) {
  (*dx)[0] = dy[0];
  return Status::OK();
}

Status NegGrad(const Scope& s, const Node&, const Grads& dy, Grads* dx) {
  (*dx)[0] = Neg(s, dy[0]);
  return Status::OK();
}

// y = exp(x): dx = g * y.
Status ExpGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = Mul(s, dy[0], Out(op));
  return Status::OK();
}

// y = log(x): dx = g / x.
Status LogGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = Div(s, dy[0], In(op, 0));
  return Status::OK();
}

// y = sqrt(x): dx = g * 0.5 / y.
Status SqrtGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output y = Out(op);
  (*dx)[0] = Div(s, Mul(s, dy[0], Scalar(s, 0.5, y.dtype())), y);
  return Status::OK();
}

// y = x^2: dx = g * 2x.
Status SquareGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0);
  (*dx)[0] = Mul(s, dy[0], Mul(s, x, Scalar(s, 2.0, x.dtype())));
  return Status::OK();
}

// y = |x|: dx = g * sign(x), with sign(0) = 0.
Status AbsGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0);
  const DType t = x.dtype();
  const Output zero = Scalar(s, 0.0, t);
  const Output sign = Sub(s, Indicator(s, Greater(s, x, zero), t),
                          Indicator(s, Less(s, x, zero), t));
  (*dx)[0] = Mul(s, dy[0], sign);
  return Status::OK();
}

Status ReluGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = ReluGrad(s, dy[0], In(op, 0));
  return Status::OK();
}

Status SigmoidGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = SigmoidGrad(s, Out(op), dy[0]);
  return Status::OK();
}

Status TanhGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = TanhGrad(s, Out(op), dy[0]);
  return Status::OK();
}

// Float-to-float casts pass the gradient back in x's dtype; casts from or to integers
// and bool have none.
Status CastGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0);
  if (IsFloating(x.dtype()) && IsFloating(op.output_dtype(0))) {
    (*dx)[0] = Cast(s, dy[0], x.dtype());
  }
  return Status::OK();
}

// --- Neural-network ops -------------------------------------------------------------

// y = softmax(x) along the last axis: dx = (g - sum(g * y, -1)) * y.
Status SoftmaxGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output y = Out(op);
  const Output dot = Sum(s, Mul(s, dy[0], y), int64_t{-1}, /*keep_dims=*/true);
  (*dx)[0] = Mul(s, Sub(s, dy[0], dot), y);
  return Status::OK();
}

// y = log_softmax(x): dx = g - exp(y) * sum(g, -1).
Status LogSoftmaxGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output total = Sum(s, dy[0], int64_t{-1}, /*keep_dims=*/true);
  (*dx)[0] = Sub(s, dy[0], Mul(s, Exp(s, Out(op)), total));
  return Status::OK();
}

// C = op(A) op(B): each case keeps dA in A's layout and dB in B's.
Status MatMulGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output a = In(op, 0), b = In(op, 1), g = dy[0];
  const bool ta = op.attr<bool>("transpose_a");
  const bool tb = op.attr<bool>("transpose_b");
  if (!ta && !tb) {         // C = A B
    (*dx)[0] = MatMul(s, g, b, false, true);   // g B^T
    (*dx)[1] = MatMul(s, a, g, true, false);   // A^T g
  } else if (!ta && tb) {   // C = A B^T
    (*dx)[0] = MatMul(s, g, b, false, false);  // g B
    (*dx)[1] = MatMul(s, g, a, true, false);   // g^T A
  } else if (ta && !tb) {   // C = A^T B
    (*dx)[0] = MatMul(s, b, g, false, true);   // B g^T
    (*dx)[1] = MatMul(s, a, g, false, false);  // A g
  } else {                  // C = A^T B^T
    (*dx)[0] = MatMul(s, b, g, true, true);    // B^T g^T
    (*dx)[1] = MatMul(s, g, a, true, true);    // g^T A^T
  }
  return Status::OK();
}

// --- Convolution and pooling (graph/ops_nn_conv.cc) ---------------------------------

// x's shape as an int32 size vector: a Const when known at build time (so the backward
// op's output shape is known too), else read at run time.
Output SizesOf(const Scope& s, const Output& x) {
  if (!x.shape().IsFullyDefined()) return ShapeOf(s, x);
  std::vector<int32_t> dims(x.shape().dims().begin(), x.shape().dims().end());
  return Const(s, Tensor::FromVector(dims));
}

// y = conv(x, w): dx = Conv2DBackpropInput, dw = Conv2DBackpropFilter, same attrs.
Status Conv2DGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), w = In(op, 1);
  const auto& strides = op.attr<std::vector<int64_t>>("strides");
  const auto& padding = op.attr<std::string>("padding");
  (*dx)[0] = Conv2DBackpropInput(s, SizesOf(s, x), w, dy[0], strides, padding);
  (*dx)[1] = Conv2DBackpropFilter(s, x, SizesOf(s, w), dy[0], strides, padding);
  return Status::OK();
}

// Each output's gradient goes to the first maximum of its window.
Status MaxPoolGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = MaxPoolGrad(s, In(op, 0), Out(op), dy[0], op.attr<std::vector<int64_t>>("ksize"),
                         op.attr<std::vector<int64_t>>("strides"),
                         op.attr<std::string>("padding"));
  return Status::OK();
}

// Each output's gradient is spread evenly over its window's unpadded elements.
Status AvgPoolGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = AvgPoolGrad(s, SizesOf(s, In(op, 0)), dy[0],
                         op.attr<std::vector<int64_t>>("ksize"),
                         op.attr<std::vector<int64_t>>("strides"),
                         op.attr<std::string>("padding"));
  return Status::OK();
}

// value [..., C] + bias [C]: dvalue = g, dbias = g summed over all but the last axis.
Status BiasAddGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = dy[0];
  (*dx)[1] = SumToShapeOf(s, dy[0], In(op, 1));
  return Status::OK();
}

// The cross-entropies: loss [N] with backprop [N,C] = softmax(logits) - labels, so
// dlogits = g[:, None] * backprop. Differentiating through the backprop output
// itself (a second derivative) is not supported.
Status CheckNoBackpropGrad(const Node& op, const Grads& dy) {
  if (dy[1].valid()) {
    return Unimplemented(op.Describe() + ": a gradient flows into the backprop output (:1); "
                         "differentiating it (a second derivative) is not supported");
  }
  return Status::OK();
}

Output LossGradColumn(const Scope& s, const Output& g) {  // [N] -> [N,1]
  return Reshape(s, g, Const(s, Tensor::FromVector(std::vector<int32_t>{-1, 1})));
}

// Also the gradient for the (probability) labels: dlabels = -g[:, None] * log_softmax.
Status SoftmaxCrossEntropyGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  AF_RETURN_IF_ERROR(CheckNoBackpropGrad(op, dy));
  const Output g = LossGradColumn(s, dy[0]);
  (*dx)[0] = Mul(s, g, Out(op, 1));
  (*dx)[1] = Mul(s, Neg(s, g), LogSoftmax(s, In(op, 0)));
  return Status::OK();
}

Status SparseSoftmaxCrossEntropyGrad(const Scope& s, const Node& op, const Grads& dy,
                                     Grads* dx) {
  AF_RETURN_IF_ERROR(CheckNoBackpropGrad(op, dy));
  (*dx)[0] = Mul(s, LossGradColumn(s, dy[0]), Out(op, 1));
  return Status::OK();
}

// --- Reductions ---------------------------------------------------------------------

// Each input element gets the gradient of the output element it was summed into.
Status SumGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = UnreduceLike(s, dy[0], op);
  return Status::OK();
}

// As Sum, divided by the number of elements averaged into each output element:
// known at build time when both shapes are, else Size(x) / Size(y) at run time.
Status MeanGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0), y = Out(op);
  const DType t = x.dtype();
  Output count;
  const int64_t x_size = x.shape().num_elements(), y_size = y.shape().num_elements();
  if (x_size >= 0 && y_size > 0) {
    count = Scalar(s, static_cast<double>(x_size / y_size), t);
  } else {
    count = Div(s, Cast(s, Size(s, x), t), Cast(s, Size(s, y), t));
  }
  (*dx)[0] = Div(s, UnreduceLike(s, dy[0], op), count);
  return Status::OK();
}

// The gradient goes to the elements equal to the extremum; ties share it equally.
Status ExtremumGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0);
  const Output selected =
      Indicator(s, Equal(s, x, UnreduceLike(s, Out(op), op)), x.dtype());  // x's shape
  const Output count = UnreduceLike(s, ReduceLike(s, "Sum", selected, op), op);
  (*dx)[0] = Mul(s, Div(s, selected, count), UnreduceLike(s, dy[0], op));
  return Status::OK();
}

// --- Shape manipulation -------------------------------------------------------------

// dx = g reshaped to x's shape (a Const shape when known, so inference keeps it).
Status ReshapeGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0);
  if (x.shape().IsFullyDefined()) {
    (*dx)[0] = Reshape(s, dy[0], Const(s, Tensor::FromVector(x.shape().dims().ToVector())));
  } else {
    (*dx)[0] = Reshape(s, dy[0], ShapeOf(s, x, DType::kInt64));
  }
  return Status::OK();
}

// dx = g transposed by the inverse permutation (reversing axes is its own inverse).
Status TransposeGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  auto it = op.attrs().find("perm");
  if (it == op.attrs().end()) {
    (*dx)[0] = Transpose(s, dy[0]);
    return Status::OK();
  }
  const auto& perm = it->second.Get<std::vector<int64_t>>();
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  (*dx)[0] = Transpose(s, dy[0], inverse);
  return Status::OK();
}

// Each input gets its own part of g along the axis.
Status ConcatV2Grad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  std::vector<Input> parts;
  for (int i = 0; i < op.num_inputs(); ++i) parts.push_back(In(op, i));
  const int64_t axis = op.attr<int64_t>("axis");
  for (int i = 0; i < op.num_inputs(); ++i) {
    (*dx)[i] = SliceConcatPart(s, dy[0], parts, axis, i);
  }
  return Status::OK();
}

// dx = zeros of x's shape with g at `begin`.
Status SliceGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = PadToShapeOf(s, dy[0], In(op, 0), op.attr<std::vector<int64_t>>("begin"));
  return Status::OK();
}

const std::map<std::string, GradientFn>& RuleTable() {
  static const auto* table = [] {
    auto* rules = new std::map<std::string, GradientFn>{
        {"Add", AddGrad},
        {"Sub", SubGrad},
        {"Mul", MulGrad},
        {"Div", DivGrad},
        {"Pow", PowGrad},
        {"Maximum", MaximumGrad},
        {"Minimum", MinimumGrad},
        {"Identity", IdentityGrad},
        {"Neg", NegGrad},
        {"Exp", ExpGrad},
        {"Log", LogGrad},
        {"Sqrt", SqrtGrad},
        {"Square", SquareGrad},
        {"Abs", AbsGrad},
        {"Relu", ReluGradRule},
        {"Sigmoid", SigmoidGradRule},
        {"Tanh", TanhGradRule},
        {"Cast", CastGrad},
        {"Softmax", SoftmaxGrad},
        {"LogSoftmax", LogSoftmaxGrad},
        {"MatMul", MatMulGrad},
        {"BiasAdd", BiasAddGrad},
        {"Conv2D", Conv2DGrad},
        {"MaxPool", MaxPoolGradRule},
        {"AvgPool", AvgPoolGradRule},
        {"FusedBatchNorm", gradient_rules_internal::FusedBatchNormGradRule},
        {"Dropout", gradient_rules_internal::DropoutGradRule},
        {"Gather", gradient_rules_internal::GatherGradRule},
        {"UnsortedSegmentSum", gradient_rules_internal::UnsortedSegmentSumGradRule},
        {"DynamicStitch", gradient_rules_internal::DynamicStitchGradRule},
        {"SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropyGrad},
        {"SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxCrossEntropyGrad},
        {"Sum", SumGrad},
        {"Mean", MeanGrad},
        {"Max", ExtremumGrad},
        {"Min", ExtremumGrad},
        {"Reshape", ReshapeGrad},
        {"Transpose", TransposeGrad},
        {"ConcatV2", ConcatV2Grad},
        {"Slice", SliceGrad},
    };
    gradient_rules_internal::AddShapeGradientRules(rules);
    gradient_rules_internal::AddMathGradientRules(rules);
    gradient_rules_internal::AddRnnGradientRules(rules);
    return rules;
  }();
  return *table;
}

}  // namespace

const GradientFn* FindGradientFn(const std::string& op) {
  const auto& table = RuleTable();
  auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace actorflow
