// The op set: every op actorflow knows, registered with its inputs, outputs, attrs
// and shape inference. This file is the single list (OpSet() below, one entry per
// op); shape arithmetic lives in graph/shape_inference.h so that it stays readable.
//
// Inference follows one rule throughout: unknown dims (-1) and unknown ranks
// propagate, and only known facts that conflict are errors.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/shape_inference.h"

namespace actorflow {
namespace {

// ---------------------------------------------------------------------------
// Attr declarations.

AttrDef Required(std::string name, AttrType type) {
  return AttrDef{std::move(name), type, std::nullopt, true};
}
// Absent from the node's attrs when not written.
AttrDef Optional(std::string name, AttrType type) {
  return AttrDef{std::move(name), type, std::nullopt, false};
}
AttrDef Default(std::string name, AttrType type, AttrValue value) {
  return AttrDef{std::move(name), type, std::move(value), false};
}

OpDef MakeOp(std::string name, int num_inputs, int num_outputs, std::vector<AttrDef> attrs,
             InferenceFn infer) {
  OpDef def;
  def.name = std::move(name);
  def.num_inputs = num_inputs;
  def.num_outputs = num_outputs;
  def.attrs = std::move(attrs);
  def.infer = std::move(infer);
  return def;
}

OpDef Stateful(OpDef def) {
  def.stateful = true;
  return def;
}

// ---------------------------------------------------------------------------
// Dtype checks.

enum class Allowed { kAny, kNumeric, kFloating, kIndex };

Status CheckDType(const std::string& what, DType dtype, Allowed allowed) {
  bool ok = true;
  const char* expected = "";
  switch (allowed) {
    case Allowed::kAny: break;
    case Allowed::kNumeric:
      ok = dtype != DType::kBool;
      expected = "a numeric dtype (float32, float64, int32 or int64)";
      break;
    case Allowed::kFloating:
      ok = IsFloating(dtype);
      expected = "float32 or float64";
      break;
    case Allowed::kIndex:
      ok = IsInteger(dtype);
      expected = "int32 or int64";
      break;
  }
  if (ok) return Status::OK();
  return InvalidArgument(what + " has dtype " + DTypeName(dtype) + ", expected " + expected);
}

Status CheckInput(const InferenceContext& ctx, int i, Allowed allowed) {
  return CheckDType("input " + std::to_string(i), ctx.input_dtype(i), allowed);
}

// Every input has input 0's dtype.
Status CheckSameDTypes(const InferenceContext& ctx) {
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.input_dtype(i) != ctx.input_dtype(0)) {
      return InvalidArgument("input " + std::to_string(i) + " has dtype " +
                             DTypeName(ctx.input_dtype(i)) + " but input 0 has dtype " +
                             DTypeName(ctx.input_dtype(0)) +
                             ": the inputs must have the same dtype (use Cast)");
    }
  }
  return Status::OK();
}

// Known rank must lie in [min_rank, max_rank] (max_rank < 0: no upper bound).
Status CheckRank(const std::string& what, const Shape& shape, int min_rank, int max_rank) {
  if (shape.unknown_rank()) return Status::OK();
  if (shape.rank() >= min_rank && (max_rank < 0 || shape.rank() <= max_rank)) {
    return Status::OK();
  }
  std::string expected = min_rank == max_rank ? "rank " + std::to_string(min_rank)
                                               : "rank >= " + std::to_string(min_rank);
  return InvalidArgument(what + " has shape " + shape.ToString() + ", expected " + expected);
}

Status CheckFullyDefinedAttr(const InferenceContext& ctx, const std::string& attr) {
  const Shape& shape = ctx.attr<Shape>(attr);
  if (shape.IsFullyDefined()) return Status::OK();
  return InvalidArgument("attr '" + attr + "' must be a fully defined shape, got " +
                         shape.ToString());
}

// "axis" of a reduction: an int, a list, or absent (every axis).
std::optional<std::vector<int64_t>> AxesAttr(const InferenceContext& ctx) {
  if (!ctx.has_attr("axis")) return std::nullopt;
  const AttrValue& v = ctx.attr_value("axis");
  if (v.Is<int64_t>()) return std::vector<int64_t>{v.Get<int64_t>()};
  return v.Get<std::vector<int64_t>>();
}

std::optional<std::vector<int64_t>> OptionalIntList(const InferenceContext& ctx,
                                                   const std::string& attr) {
  if (!ctx.has_attr(attr)) return std::nullopt;
  return ctx.attr<std::vector<int64_t>>(attr);
}

// ---------------------------------------------------------------------------
// Inference functions shared by families of ops.

// y = f(x): same dtype and shape.
InferenceFn UnaryFn(Allowed allowed) {
  return [allowed](InferenceContext& ctx) -> Status {
    AF_RETURN_IF_ERROR(CheckInput(ctx, 0, allowed));
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::OK();
  };
}

// z = f(x, y) with broadcasting; z has the inputs' dtype, or bool for comparisons.
InferenceFn BinaryFn(Allowed allowed, bool outputs_bool) {
  return [allowed, outputs_bool](InferenceContext& ctx) -> Status {
    AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
    AF_RETURN_IF_ERROR(CheckInput(ctx, 0, allowed));
    AF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx.input_shape(0), ctx.input_shape(1)));
    ctx.set_output(0, outputs_bool ? DType::kBool : ctx.input_dtype(0), std::move(shape));
    return Status::OK();
  };
}

// Softmax, LogSoftmax: along the last axis of logits [..., C].
Status InferSoftmax(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckRank("logits", ctx.input_shape(0), 1, -1));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status InferReduction(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kNumeric));
  AF_ASSIGN_OR_RETURN(Shape shape, ReducedShape(ctx.input_shape(0), AxesAttr(ctx),
                                                ctx.attr<bool>("keep_dims")));
  ctx.set_output(0, ctx.input_dtype(0), std::move(shape));
  return Status::OK();
}

// Variable-like sources: dtype and fully defined shape from attrs.
Status InferFromShapeAndDTypeAttrs(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckFullyDefinedAttr(ctx, "shape"));
  ctx.set_output(0, ctx.attr<DType>("dtype"), ctx.attr<Shape>("shape"));
  return Status::OK();
}

Status InferRandom(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("attr 'dtype'", ctx.attr<DType>("dtype"), Allowed::kFloating));
  return InferFromShapeAndDTypeAttrs(ctx);
}

// ---------------------------------------------------------------------------
// Inference functions of single ops.

Status InferConst(InferenceContext& ctx) {
  const Tensor& value = ctx.attr<Tensor>("value");
  if (!value.IsInitialized()) return InvalidArgument("attr 'value' holds no tensor data");
  ctx.set_output(0, value.dtype(), value.shape());
  return Status::OK();
}

Status InferPlaceholder(InferenceContext& ctx) {
  ctx.set_output(0, ctx.attr<DType>("dtype"),
                 ctx.has_attr("shape") ? ctx.attr<Shape>("shape") : Shape::UnknownRank());
  return Status::OK();
}

// Input 0 is the variable (ref), input 1 the value.
Status CheckAssignable(const InferenceContext& ctx) {
  if (ctx.input_dtype(1) != ctx.input_dtype(0)) {
    return InvalidArgument("value has dtype " + std::string(DTypeName(ctx.input_dtype(1))) +
                           " but the variable has dtype " + DTypeName(ctx.input_dtype(0)));
  }
  return Status::OK();
}

Status IncompatibleValue(const InferenceContext& ctx, const std::string& hint) {
  return InvalidArgument("value shape " + ctx.input_shape(1).ToString() +
                         " is not compatible with the variable's shape " +
                         ctx.input_shape(0).ToString() + hint);
}

Status InferAssign(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckAssignable(ctx));
  const bool validate = ctx.attr<bool>("validate_shape");
  if (validate && !ctx.input_shape(0).IsCompatibleWith(ctx.input_shape(1))) {
    return IncompatibleValue(ctx, " (set validate_shape=false to change the shape)");
  }
  ctx.set_output(0, ctx.input_dtype(0),
                 validate ? ctx.input_shape(0).MergeWith(ctx.input_shape(1)) : ctx.input_shape(1));
  return Status::OK();
}

// AssignAdd, AssignSub.
Status InferAssignUpdate(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckAssignable(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 1, Allowed::kNumeric));
  if (!ctx.input_shape(0).IsCompatibleWith(ctx.input_shape(1))) {
    return IncompatibleValue(ctx, "");
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status InferNoOp(InferenceContext&) { return Status::OK(); }

Status InferMatMul(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  AF_ASSIGN_OR_RETURN(Shape shape,
                      MatMulShape(ctx.input_shape(0), ctx.input_shape(1),
                                  ctx.attr<bool>("transpose_a"), ctx.attr<bool>("transpose_b")));
  ctx.set_output(0, ctx.input_dtype(0), std::move(shape));
  return Status::OK();
}

// value [..., C] + bias [C].
Status InferBiasAdd(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kNumeric));
  const Shape& value = ctx.input_shape(0);
  const Shape& bias = ctx.input_shape(1);
  AF_RETURN_IF_ERROR(CheckRank("value", value, 1, -1));
  AF_RETURN_IF_ERROR(CheckRank("bias", bias, 1, 1));
  Shape out = value;
  if (!value.unknown_rank() && !bias.unknown_rank()) {
    const int last = value.rank() - 1;
    const int64_t c = value.dim(last);
    if (c >= 0 && bias.dim(0) >= 0 && c != bias.dim(0)) {
      return InvalidArgument("bias " + bias.ToString() + " does not match the last dimension of value " +
                             value.ToString());
    }
    if (c < 0) out.set_dim(last, bias.dim(0));
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

// x [..., D, ...] -> int64 [...] with `axis` removed.
Status InferArgMax(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kNumeric));
  const Shape& x = ctx.input_shape(0);
  AF_RETURN_IF_ERROR(CheckRank("input", x, 1, -1));
  Shape out = Shape::UnknownRank();
  if (!x.unknown_rank()) {
    AF_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.attr<int64_t>("axis"), x.rank()));
    std::vector<int64_t> dims = x.dims();
    dims.erase(dims.begin() + axis);
    out = Shape(std::move(dims));
  }
  ctx.set_output(0, DType::kInt64, std::move(out));
  return Status::OK();
}

Status InferCast(InferenceContext& ctx) {
  ctx.set_output(0, ctx.attr<DType>("dtype"), ctx.input_shape(0));
  return Status::OK();
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

// logits [N,C], labels [N,C] -> loss [N], backprop [N,C].
Status InferSoftmaxCrossEntropy(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  const Shape& logits = ctx.input_shape(0);
  const Shape& labels = ctx.input_shape(1);
  AF_RETURN_IF_ERROR(CheckRank("logits", logits, 2, 2));
  AF_RETURN_IF_ERROR(CheckRank("labels", labels, 2, 2));
  if (!logits.IsCompatibleWith(labels)) {
    return InvalidArgument("logits " + logits.ToString() + " and labels " + labels.ToString() +
                           " must have the same shape [N,C]");
  }
  Shape both = logits.MergeWith(labels);
  if (both.unknown_rank()) both = Shape{-1, -1};
  const DType dtype = ctx.input_dtype(0);
  ctx.set_output(0, dtype, Shape{both.dim(0)});
  ctx.set_output(1, dtype, both);
  return Status::OK();
}

// logits [N,C] float, labels [N] int32/int64 -> loss [N], backprop [N,C].
Status InferSparseSoftmaxCrossEntropy(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("logits", ctx.input_dtype(0), Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckDType("labels", ctx.input_dtype(1), Allowed::kIndex));
  Shape logits = ctx.input_shape(0);
  const Shape& labels = ctx.input_shape(1);
  AF_RETURN_IF_ERROR(CheckRank("logits", logits, 2, 2));
  AF_RETURN_IF_ERROR(CheckRank("labels", labels, 1, 1));
  if (logits.unknown_rank()) logits = Shape{-1, -1};
  const int64_t n_labels = labels.unknown_rank() ? Shape::kUnknownDim : labels.dim(0);
  if (logits.dim(0) >= 0 && n_labels >= 0 && logits.dim(0) != n_labels) {
    return InvalidArgument("logits " + logits.ToString() + " and labels " + labels.ToString() +
                           " disagree on the batch size N");
  }
  if (logits.dim(0) < 0) logits.set_dim(0, n_labels);
  const DType dtype = ctx.input_dtype(0);
  ctx.set_output(0, dtype, Shape{logits.dim(0)});
  ctx.set_output(1, dtype, logits);
  return Status::OK();
}

// ---------------------------------------------------------------------------
// The op set.

std::vector<OpDef> OpSet() {
  using T = AttrType;
  std::vector<OpDef> ops;
  auto add = [&ops](OpDef def) { ops.push_back(std::move(def)); };

  // Sources and variables.
  add(MakeOp("Const", 0, 1, {Required("value", T::kTensor)}, InferConst));
  add(MakeOp("Placeholder", 0, 1, {Required("dtype", T::kType), Optional("shape", T::kShape)},
             InferPlaceholder));
  add(Stateful(MakeOp("Variable", 0, 1,
                      {Required("dtype", T::kType), Required("shape", T::kShape),
                       Default("container", T::kString, ""),
                       Default("shared_name", T::kString, "")},
                      InferFromShapeAndDTypeAttrs)));
  for (const char* name : {"Assign", "AssignAdd", "AssignSub"}) {
    const bool is_assign = std::string(name) == "Assign";
    OpDef def = Stateful(MakeOp(
        name, 2, 1,
        is_assign ? std::vector<AttrDef>{Default("validate_shape", T::kBool, true)}
                  : std::vector<AttrDef>{},
        is_assign ? InferenceFn(InferAssign) : InferenceFn(InferAssignUpdate)));
    def.ref_inputs = {0};
    add(std::move(def));
  }
  add(MakeOp("Identity", 1, 1, {}, UnaryFn(Allowed::kAny)));
  add(MakeOp("NoOp", 0, 0, {}, InferNoOp));

  // Element-wise.
  for (const char* name : {"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum"}) {
    add(MakeOp(name, 2, 1, {}, BinaryFn(Allowed::kNumeric, /*outputs_bool=*/false)));
  }
  add(MakeOp("Equal", 2, 1, {}, BinaryFn(Allowed::kAny, /*outputs_bool=*/true)));
  for (const char* name : {"Less", "Greater"}) {
    add(MakeOp(name, 2, 1, {}, BinaryFn(Allowed::kNumeric, /*outputs_bool=*/true)));
  }
  for (const char* name : {"Neg", "Square", "Abs"}) {
    add(MakeOp(name, 1, 1, {}, UnaryFn(Allowed::kNumeric)));
  }
  for (const char* name : {"Exp", "Log", "Sqrt", "Relu", "Sigmoid", "Tanh"}) {
    add(MakeOp(name, 1, 1, {}, UnaryFn(Allowed::kFloating)));
  }
  for (const char* name : {"ZerosLike", "OnesLike"}) {
    add(MakeOp(name, 1, 1, {}, UnaryFn(Allowed::kAny)));
  }
  add(MakeOp("Cast", 1, 1, {Required("dtype", T::kType)}, InferCast));

  // Neural-network ops.
  add(MakeOp("Softmax", 1, 1, {}, InferSoftmax));
  add(MakeOp("LogSoftmax", 1, 1, {}, InferSoftmax));
  add(MakeOp("MatMul", 2, 1,
             {Default("transpose_a", T::kBool, false), Default("transpose_b", T::kBool, false)},
             InferMatMul));
  add(MakeOp("BiasAdd", 2, 1, {}, InferBiasAdd));
  add(MakeOp("SoftmaxCrossEntropyWithLogits", 2, 2, {}, InferSoftmaxCrossEntropy));
  add(MakeOp("SparseSoftmaxCrossEntropyWithLogits", 2, 2, {}, InferSparseSoftmaxCrossEntropy));

  // Reductions.
  for (const char* name : {"Sum", "Mean", "Max", "Min"}) {
    add(MakeOp(name, 1, 1,
               {Optional("axis", T::kIntOrList), Default("keep_dims", T::kBool, false)},
               InferReduction));
  }
  add(MakeOp("ArgMax", 1, 1, {Default("axis", T::kInt, int64_t{0})}, InferArgMax));

  // Shape manipulation.
  add(MakeOp("Reshape", 2, 1, {}, InferReshape));
  add(MakeOp("Transpose", 1, 1, {Optional("perm", T::kIntList)}, InferTranspose));
  OpDef concat = MakeOp("ConcatV2", -1, 1, {Required("axis", T::kInt)}, InferConcatV2);
  concat.min_inputs = 1;
  add(std::move(concat));
  add(MakeOp("Slice", 1, 1, {Required("begin", T::kIntList), Required("size", T::kIntList)},
             InferSlice));
  add(MakeOp("Fill", 0, 1, {Required("shape", T::kShape), Required("value", T::kTensor)},
             InferFill));
  add(MakeOp("Shape", 1, 1, {Default("out_type", T::kType, DType::kInt32)}, InferShape));

  // Random numbers: each kernel owns a generator seeded with `seed`.
  const std::vector<AttrDef> random_common = {Required("shape", T::kShape),
                                              Default("dtype", T::kType, DType::kFloat32),
                                              Default("seed", T::kInt, int64_t{0})};
  auto random_op = [&](const char* name, std::vector<AttrDef> extra) {
    std::vector<AttrDef> attrs = random_common;
    for (AttrDef& a : extra) attrs.push_back(std::move(a));
    return Stateful(MakeOp(name, 0, 1, std::move(attrs), InferRandom));
  };
  add(random_op("RandomUniform",
                {Default("minval", T::kFloat, 0.0), Default("maxval", T::kFloat, 1.0)}));
  for (const char* name : {"RandomNormal", "TruncatedNormal"}) {
    add(random_op(name, {Default("mean", T::kFloat, 0.0), Default("stddev", T::kFloat, 1.0)}));
  }
  return ops;
}

[[maybe_unused]] const bool kOpSetRegistered = [] {
  for (OpDef& def : OpSet()) OpRegistration registration(std::move(def));
  return true;
}();

// ===========================================================================
// Gradient helper ops: the building blocks of the backward rules in
// graph/gradient_rules.cc. They are ordinary ops (graph JSON, kernels, placement
// treat them like any other) whose shapes are often only known at run time, which is
// why several take a `like` input whose runtime shape they adopt.

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
}  // namespace actorflow

// ===========================================================================
// Training ops: in-place optimizer updates (TensorFlow's Apply* ops).
//
// Each takes its variable and slot variables as ref inputs (they must come from
// Variable nodes), then scalar hyper-parameters and the gradient, all of the
// variable's float dtype. Output 0 is the variable's new value [var shape].
// ===========================================================================

namespace actorflow {
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
  return ops;
}

[[maybe_unused]] const bool kTrainingOpsRegistered = [] {
  for (OpDef& def : TrainingOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

// ===========================================================================
// Runtime ops: inserted by graph partitioning (placement/partition.h) where a data or
// control edge crosses devices, never written by users. The actor runtime implements
// their kernels. A pair shares tensor_name (the edge key, "src:k" or "^src"),
// send_device and recv_device.

Status InferSend(InferenceContext&) { return Status::OK(); }

Status InferRecv(InferenceContext& ctx) {
  ctx.set_output(0, ctx.attr<DType>("dtype"),
                 ctx.has_attr("shape") ? ctx.attr<Shape>("shape") : Shape::UnknownRank());
  return Status::OK();
}

std::vector<OpDef> RuntimeOpSet() {
  using T = AttrType;
  const std::vector<AttrDef> endpoints = {Required("tensor_name", T::kString),
                                          Required("send_device", T::kString),
                                          Required("recv_device", T::kString)};
  std::vector<AttrDef> recv_attrs = endpoints;
  recv_attrs.push_back(Required("dtype", T::kType));
  recv_attrs.push_back(Optional("shape", T::kShape));
  // Both are stateful: each runs once per step for its side effect on the rendezvous.
  return {Stateful(MakeOp("_Send", 1, 0, endpoints, InferSend)),
          Stateful(MakeOp("_Recv", 0, 1, std::move(recv_attrs), InferRecv))};
}

[[maybe_unused]] const bool kRuntimeOpsRegistered = [] {
  for (OpDef& def : RuntimeOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace actorflow

// ===========================================================================
// Dataset ops: the graph side of training/dataset.h (TensorFlow's tf.data).
//
// IteratorGetNext() -> one output per component of the dataset's elements.
//   iterator_id: string: names the iterator resource in the step's ResourceManager
//     and the dataset it iterates (training/iterator_ops.h keeps the registry).
//   output_dtypes: string list of dtype names, one per component ("float32", ...).
//   output_shapes: string list in Shape::ToString form, one per component: "[?,4]",
//     "[]", "<unknown>" ("?" or -1 = unknown dim). Absent = every rank unknown.
// Stateful: each run takes the next element; the end of the data is OutOfRange.
// ===========================================================================

namespace actorflow {
namespace {

// Parses Shape::ToString's output: "[2,?]", "[-1,3]", "[]", "<unknown>".
StatusOr<Shape> ParseShapeString(const std::string& text) {
  if (text == "<unknown>") return Shape::UnknownRank();
  const auto bad = [&text] {
    return InvalidArgument("'" + text +
                           "' is not a shape: write \"[2,?]\", \"[]\" or \"<unknown>\"");
  };
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return bad();
  std::vector<int64_t> dims;
  const std::string body = text.substr(1, text.size() - 2);
  if (body.empty()) return Shape(dims);
  size_t start = 0;
  while (true) {
    const size_t comma = body.find(',', start);
    const std::string dim = body.substr(start, comma == std::string::npos ? std::string::npos
                                                                         : comma - start);
    if (dim == "?" || dim == "-1") {
      dims.push_back(Shape::kUnknownDim);
    } else {
      if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos ||
          dim.size() > 18) {
        return bad();
      }
      dims.push_back(std::stoll(dim));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Shape(std::move(dims));
}

int IteratorGetNextNumOutputs(const AttrMap& attrs) {
  auto it = attrs.find("output_dtypes");
  if (it == attrs.end() || !it->second.Is<std::vector<std::string>>()) return 0;
  return static_cast<int>(it->second.Get<std::vector<std::string>>().size());
}

Status InferIteratorGetNext(InferenceContext& ctx) {
  const auto& dtypes = ctx.attr<std::vector<std::string>>("output_dtypes");
  if (dtypes.empty()) {
    return InvalidArgument(
        "attr 'output_dtypes' is empty: an element has at least one component");
  }
  if (ctx.attr<std::string>("iterator_id").empty()) {
    return InvalidArgument("attr 'iterator_id' is empty");
  }
  std::vector<std::string> shapes;
  if (ctx.has_attr("output_shapes")) {
    shapes = ctx.attr<std::vector<std::string>>("output_shapes");
    if (shapes.size() != dtypes.size()) {
      return InvalidArgument("attr 'output_shapes' has " + std::to_string(shapes.size()) +
                             " entries but 'output_dtypes' has " +
                             std::to_string(dtypes.size()) + ": give one per component");
    }
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    StatusOr<DType> dtype = DTypeFromName(dtypes[i]);
    if (!dtype.ok()) {
      return dtype.status().WithContext("attr 'output_dtypes' entry " + std::to_string(i));
    }
    Shape shape = Shape::UnknownRank();
    if (!shapes.empty()) {
      StatusOr<Shape> parsed = ParseShapeString(shapes[i]);
      if (!parsed.ok()) {
        return parsed.status().WithContext("attr 'output_shapes' entry " + std::to_string(i));
      }
      shape = std::move(parsed).value();
    }
    ctx.set_output(static_cast<int>(i), *dtype, std::move(shape));
  }
  return Status::OK();
}

std::vector<OpDef> DatasetOpSet() {
  using T = AttrType;
  OpDef get_next = Stateful(MakeOp("IteratorGetNext", 0, 1,
                                   {Required("iterator_id", T::kString),
                                    Required("output_dtypes", T::kStringList),
                                    Optional("output_shapes", T::kStringList)},
                                   InferIteratorGetNext));
  get_next.num_outputs_fn = IteratorGetNextNumOutputs;
  return {std::move(get_next)};
}

[[maybe_unused]] const bool kDatasetOpsRegistered = [] {
  for (OpDef& def : DatasetOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace actorflow

// ===========================================================================
// Queue and reader ops: TensorFlow's queues (FIFOQueue, RandomShuffleQueue) and a
// text-line reader with CSV decoding. Kernels: kernels/cpu/queue_kernels.cc and
// reader_kernels.cc, through the task's QueueService (kernels/queue_service.h).
//
// A queue is named by (container, shared_name) within the task that runs its ops:
// queue ops must be placed on the queue's task (the builder functions colocate them
// with the queue's node). Elements are lists of components, one dtype each.
//
// FIFOQueue / RandomShuffleQueue() -> (nothing): creates the queue on first run, or
//   checks that the existing one has the same parameters.
//   component_types: string list of dtype names; shapes: optional string list, one
//   per component, in Shape::ToString form ("[4]", "[]"); capacity: int (-1 =
//   unbounded); shared_name "" = the node's name; RandomShuffleQueue adds
//   min_after_dequeue and seed (ints, 0).
// QueueEnqueue(c0, c1, ...) / QueueEnqueueMany(c0 [n,...], c1 [n,...], ...):
//   waits while the queue is full. timeout_ms: int (0 = the session's
//   operation_timeout_in_ms).
// QueueDequeue() -> c0, c1, ...; QueueDequeueMany() -> c0 [n,...], ...: wait while
//   too few elements are there; OutOfRange once the queue is closed and too few are
//   left. component_types/shapes as the queue's; n: int >= 0; timeout_ms.
// QueueClose(): cancel_pending_enqueues: bool (false).
// QueueSize() -> int32 [].
// CsvReaderRead() -> one scalar per record_types entry: the next line of the files
//   named by the filename queue (queue_container/queue_name, elements int32 [] =
//   indices into `filenames`), decoded as CSV. skip_header_lines: int (0) per file;
//   the reader's position is a resource named container/shared_name (default: the
//   node's name). OutOfRange when the filename queue is closed and exhausted.
// All are stateful.
// ===========================================================================

namespace actorflow {
namespace {

int ComponentCount(const AttrMap& attrs, const std::string& attr) {
  auto it = attrs.find(attr);
  if (it == attrs.end() || !it->second.Is<std::vector<std::string>>()) return 0;
  return static_cast<int>(it->second.Get<std::vector<std::string>>().size());
}

// The dtypes and shapes of a queue's (or a record's) components, from attrs.
Status ParseComponents(const InferenceContext& ctx, const std::string& types_attr,
                       std::vector<DType>* dtypes, std::vector<Shape>* shapes) {
  const auto& names = ctx.attr<std::vector<std::string>>(types_attr);
  if (names.empty()) {
    return InvalidArgument("attr '" + types_attr + "' is empty: give at least one component");
  }
  for (size_t i = 0; i < names.size(); ++i) {
    StatusOr<DType> dtype = DTypeFromName(names[i]);
    if (!dtype.ok()) {
      return dtype.status().WithContext("attr '" + types_attr + "' entry " + std::to_string(i));
    }
    dtypes->push_back(*dtype);
  }
  if (shapes == nullptr) return Status::OK();
  if (!ctx.has_attr("shapes")) {
    shapes->assign(dtypes->size(), Shape::UnknownRank());
    return Status::OK();
  }
  const auto& texts = ctx.attr<std::vector<std::string>>("shapes");
  if (texts.size() != names.size()) {
    return InvalidArgument("attr 'shapes' has " + std::to_string(texts.size()) + " entries for " +
                           std::to_string(names.size()) + " components: give one per component");
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    StatusOr<Shape> shape = ParseShapeString(texts[i]);
    if (!shape.ok()) return shape.status().WithContext("attr 'shapes' entry " + std::to_string(i));
    shapes->push_back(std::move(shape).value());
  }
  return Status::OK();
}

Status CheckQueueName(const InferenceContext& ctx, const std::string& attr = "shared_name") {
  if (ctx.attr<std::string>(attr).empty()) {
    return InvalidArgument("attr '" + attr + "' is empty: a queue needs a name");
  }
  return Status::OK();
}

Status InferQueue(InferenceContext& ctx) {
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  AF_RETURN_IF_ERROR(ParseComponents(ctx, "component_types", &dtypes, &shapes));
  const int64_t capacity = ctx.attr<int64_t>("capacity");
  if (capacity == 0 || capacity < -1) {
    return InvalidArgument("attr 'capacity' is " + std::to_string(capacity) +
                           ": it must be >= 1, or -1 for unbounded");
  }
  if (ctx.has_attr("min_after_dequeue")) {
    const int64_t min_after = ctx.attr<int64_t>("min_after_dequeue");
    if (min_after < 0 || (capacity > 0 && min_after >= capacity)) {
      return InvalidArgument("attr 'min_after_dequeue' is " + std::to_string(min_after) +
                             ": it must be >= 0 and below the capacity (" +
                             std::to_string(capacity) + ")");
    }
  }
  return Status::OK();
}

Status InferEnqueue(InferenceContext& ctx, bool many) {
  AF_RETURN_IF_ERROR(CheckQueueName(ctx));
  for (int i = 0; many && i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.input_shape(i);
    if (!s.unknown_rank() && s.rank() < 1) {
      return InvalidArgument("input " + std::to_string(i) +
                             " is a scalar: QueueEnqueueMany takes [n, ...] per component");
    }
  }
  return Status::OK();
}

Status InferDequeue(InferenceContext& ctx, bool many) {
  AF_RETURN_IF_ERROR(CheckQueueName(ctx));
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  AF_RETURN_IF_ERROR(ParseComponents(ctx, "component_types", &dtypes, &shapes));
  int64_t n = 0;
  if (many) {
    n = ctx.attr<int64_t>("n");
    if (n < 0) return InvalidArgument("attr 'n' is " + std::to_string(n) + ": must be >= 0");
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    Shape shape = shapes[i];
    if (many && !shape.unknown_rank()) {
      std::vector<int64_t> dims = {n};
      dims.insert(dims.end(), shape.dims().begin(), shape.dims().end());
      shape = Shape(std::move(dims));
    }
    ctx.set_output(static_cast<int>(i), dtypes[i], std::move(shape));
  }
  return Status::OK();
}

Status InferCsvReaderRead(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckQueueName(ctx, "queue_name"));
  if (ctx.attr<std::vector<std::string>>("filenames").empty()) {
    return InvalidArgument("attr 'filenames' is empty: the reader needs files to read");
  }
  if (ctx.attr<int64_t>("skip_header_lines") < 0) {
    return InvalidArgument("attr 'skip_header_lines' must be >= 0");
  }
  std::vector<DType> dtypes;
  AF_RETURN_IF_ERROR(ParseComponents(ctx, "record_types", &dtypes, nullptr));
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] == DType::kBool) {
      return InvalidArgument("attr 'record_types' entry " + std::to_string(i) +
                             " is bool: CSV columns are numbers (float32, float64, int32, int64)");
    }
    ctx.set_output(static_cast<int>(i), dtypes[i], Shape{});
  }
  return Status::OK();
}

std::vector<OpDef> QueueOpSet() {
  using T = AttrType;
  const std::vector<AttrDef> name = {Default("container", T::kString, AttrValue("")),
                                     Required("shared_name", T::kString)};
  auto with = [&name](std::vector<AttrDef> more) {
    std::vector<AttrDef> all = name;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const AttrDef types = Required("component_types", T::kStringList);
  const AttrDef shapes = Optional("shapes", T::kStringList);
  const AttrDef timeout = Default("timeout_ms", T::kInt, AttrValue(int64_t{0}));

  // A queue node's shared_name may be empty: the node's own name.
  const std::vector<AttrDef> queue_attrs = {
      Default("container", T::kString, AttrValue("")),
      Default("shared_name", T::kString, AttrValue("")), types, shapes,
      Default("capacity", T::kInt, AttrValue(int64_t{-1}))};
  OpDef fifo = Stateful(MakeOp("FIFOQueue", 0, 0, queue_attrs, InferQueue));
  std::vector<AttrDef> shuffle_attrs = queue_attrs;
  shuffle_attrs.push_back(Default("min_after_dequeue", T::kInt, AttrValue(int64_t{0})));
  shuffle_attrs.push_back(Default("seed", T::kInt, AttrValue(int64_t{0})));
  OpDef shuffle = Stateful(MakeOp("RandomShuffleQueue", 0, 0, shuffle_attrs, InferQueue));
  OpDef enqueue = Stateful(MakeOp("QueueEnqueue", -1, 0, with({timeout}),
                                  [](InferenceContext& c) { return InferEnqueue(c, false); }));
  enqueue.min_inputs = 1;
  OpDef enqueue_many = Stateful(MakeOp("QueueEnqueueMany", -1, 0, with({timeout}),
                                       [](InferenceContext& c) { return InferEnqueue(c, true); }));
  enqueue_many.min_inputs = 1;
  OpDef dequeue = Stateful(MakeOp("QueueDequeue", 0, 1, with({types, shapes, timeout}),
                                  [](InferenceContext& c) { return InferDequeue(c, false); }));
  dequeue.num_outputs_fn = [](const AttrMap& a) { return ComponentCount(a, "component_types"); };
  OpDef dequeue_many =
      Stateful(MakeOp("QueueDequeueMany", 0, 1,
                      with({types, shapes, timeout, Required("n", T::kInt)}),
                      [](InferenceContext& c) { return InferDequeue(c, true); }));
  dequeue_many.num_outputs_fn = dequeue.num_outputs_fn;
  OpDef close = Stateful(MakeOp(
      "QueueClose", 0, 0, with({Default("cancel_pending_enqueues", T::kBool, AttrValue(false))}),
      [](InferenceContext& c) { return CheckQueueName(c); }));
  OpDef size = Stateful(MakeOp("QueueSize", 0, 1, name, [](InferenceContext& c) {
    AF_RETURN_IF_ERROR(CheckQueueName(c));
    c.set_output(0, DType::kInt32, Shape{});
    return Status::OK();
  }));
  OpDef reader = Stateful(MakeOp(
      "CsvReaderRead", 0, 1,
      {Required("filenames", T::kStringList), Default("queue_container", T::kString, AttrValue("")),
       Required("queue_name", T::kString), Required("record_types", T::kStringList),
       Default("skip_header_lines", T::kInt, AttrValue(int64_t{0})),
       Default("container", T::kString, AttrValue("")),
       Default("shared_name", T::kString, AttrValue(""))},
      InferCsvReaderRead));
  reader.num_outputs_fn = [](const AttrMap& a) { return ComponentCount(a, "record_types"); };

  std::vector<OpDef> ops;
  for (OpDef* def : {&fifo, &shuffle, &enqueue, &enqueue_many, &dequeue, &dequeue_many, &close,
                     &size, &reader}) {
    ops.push_back(std::move(*def));
  }
  return ops;
}

[[maybe_unused]] const bool kQueueOpsRegistered = [] {
  for (OpDef& def : QueueOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace actorflow
