// The core of the op set: sources and variables, element-wise math, neural-network
// ops, reductions and random numbers, each registered with its inputs, outputs,
// attrs and shape inference (graph/ops.h documents what each op promises). With the
// shape manipulation of ops_array.cc they form the core op set, the one that CPU and
// reference kernels must cover (kernels/kernel_coverage_test.cc); the other families
// are listed in graph/op_set_internal.h. Shape arithmetic lives in
// graph/shape_inference.h so that this file stays readable.
//
// Inference follows one rule throughout: unknown dims (-1) and unknown ranks
// propagate, and only known facts that conflict are errors.
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

// IsVariableInitialized: ref [any] -> bool [].
Status InferIsVariableInitialized(InferenceContext& ctx) {
  ctx.set_output(0, DType::kBool, Shape{});
  return Status::OK();
}

// VariableShape: ref [d0..dk-1] -> int64 [k].
Status InferVariableShape(InferenceContext& ctx) {
  const Shape& var = ctx.input_shape(0);
  ctx.set_output(0, DType::kInt64,
                 var.unknown_rank() ? Shape{Shape::kUnknownDim} : Shape{var.rank()});
  return Status::OK();
}

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
// The core op set.

std::vector<OpDef> CoreOpSet() {
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
  {
    // Whether the variable holds a value (never fails on an uninitialized one): a
    // ref input, so it is colocated with the variable and reads no value.
    OpDef def = Stateful(MakeOp("IsVariableInitialized", 1, 1, {}, InferIsVariableInitialized));
    def.ref_inputs = {0};
    add(std::move(def));
    // The shape of the variable's live value, beside it (no value moves).
    OpDef shape = Stateful(MakeOp("VariableShape", 1, 1, {}, InferVariableShape));
    shape.ref_inputs = {0};
    add(std::move(shape));
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

[[maybe_unused]] const bool kCoreOpsRegistered = [] {
  for (OpDef& def : CoreOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
