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

}  // namespace
}  // namespace actorflow
