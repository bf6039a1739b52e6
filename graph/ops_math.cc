// Registers the sequence models' math ops (graph/math_ops.h documents what each op
// promises): BatchMatMul (TensorFlow's BatchMatMulV2), the fused LayerNorm and its
// backward op LayerNormGrad, Gelu with GeluGrad, and the packed products
// PackMatMulOperand and PackedMatMul. Softmax and LogSoftmax over the
// last axis of any rank >= 1 are registered with the core op set (ops_core.cc).
//
// Why fused ops: LayerNorm's backward pass needs two per-row sums (of dy * gamma and of
// dy * gamma * x_hat) before any element of dx can be written; one kernel does that in
// two passes over a row where a composition of element-wise ops and reductions would
// take a dozen. LayerNorm returns each row's mean and inv_std so that LayerNormGrad
// does not recompute them.
//
// Kernels: kernels/cpu/math_kernels.cc; reference: kernels/reference/reference_math.cc;
// backward rules: graph/gradient_rules_math.cc.
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"
#include "graph/shape_inference.h"

namespace actorflow {
namespace op_set_internal {
namespace {

// `what` has input 0's dtype ("y (input 1) has dtype float64 but x has float32").
Status CheckSameDTypeAs(const InferenceContext& ctx, int i, const std::string& what) {
  if (ctx.input_dtype(i) == ctx.input_dtype(0)) return Status::OK();
  return InvalidArgument(what + " has dtype " + DTypeName(ctx.input_dtype(i)) +
                         " but input 0 has dtype " + DTypeName(ctx.input_dtype(0)) +
                         ": the inputs must have the same dtype (use Cast)");
}

// The leading dims of a known shape of rank >= n, without its last n.
Shape DropLast(const Shape& shape, int n) {
  if (shape.unknown_rank()) return Shape::UnknownRank();
  return Shape(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - n));
}

// x [..., M, K] (or [..., K, M] when adj_x), y [..., K, N] (or [..., N, K] when adj_y)
// -> [broadcast(x[:-2], y[:-2]), M, N].
Status InferBatchMatMul(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("x (input 0)", ctx.input_dtype(0), Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckSameDTypeAs(ctx, 1, "y (input 1)"));
  const Shape& x = ctx.input_shape(0);
  const Shape& y = ctx.input_shape(1);
  AF_RETURN_IF_ERROR(CheckRank("x (input 0)", x, 2, -1));
  AF_RETURN_IF_ERROR(CheckRank("y (input 1)", y, 2, -1));
  if (x.unknown_rank() || y.unknown_rank()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::UnknownRank());
    return Status::OK();
  }
  const bool adj_x = ctx.attr<bool>("adj_x");
  const bool adj_y = ctx.attr<bool>("adj_y");
  const auto describe = [&] {
    return "x " + x.ToString() + (adj_x ? " (adjoint)" : "") + " and y " + y.ToString() +
           (adj_y ? " (adjoint)" : "");
  };
  StatusOr<Shape> batch = BroadcastShapes(DropLast(x, 2), DropLast(y, 2));
  if (!batch.ok()) {
    return InvalidArgument("BatchMatMul: the batch dimensions of " + describe() +
                           " do not broadcast");
  }
  const int xr = x.rank(), yr = y.rank();
  const int64_t m = adj_x ? x.dim(xr - 1) : x.dim(xr - 2);
  const int64_t k = adj_x ? x.dim(xr - 2) : x.dim(xr - 1);
  const int64_t ky = adj_y ? y.dim(yr - 1) : y.dim(yr - 2);
  const int64_t n = adj_y ? y.dim(yr - 2) : y.dim(yr - 1);
  if (k >= 0 && ky >= 0 && k != ky) {
    return InvalidArgument("BatchMatMul shape mismatch: " + describe() +
                           " have inner dimensions " + std::to_string(k) + " and " +
                           std::to_string(ky));
  }
  std::vector<int64_t> dims = batch->dims();
  dims.push_back(m);
  dims.push_back(n);
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(dims)));
  return Status::OK();
}

// The feature count D (the last dim of x), refined by each [D] input in turn; -1 while
// unknown. `source` says where it was learnt, for messages.
struct Features {
  int64_t count = -1;
  std::string source;
};

Status MergeFeatures(const std::string& what, const Shape& shape, Features* f) {
  if (shape.unknown_rank()) return Status::OK();
  const int64_t d = shape.dim(shape.rank() - 1);
  if (d < 0) return Status::OK();
  if (d == 0) {
    return InvalidArgument(what + " has shape " + shape.ToString() +
                           ": layer normalization needs at least one feature (last dim)");
  }
  if (f->count >= 0 && d != f->count) {
    return InvalidArgument(what + " " + shape.ToString() + " does not match the " +
                           std::to_string(f->count) + " features of " + f->source);
  }
  if (f->count < 0) *f = Features{d, what + " " + shape.ToString()};
  return Status::OK();
}

// x's shape with its last dim set to D when only the [D] inputs knew it.
Shape WithFeatures(Shape x, const Features& f) {
  if (!x.unknown_rank() && f.count >= 0) x.set_dim(x.rank() - 1, f.count);
  return x;
}

// Input i of the [D] inputs (gamma, beta): rank 1, D entries.
Status MergeVector(const InferenceContext& ctx, int i, const std::string& what, Features* f) {
  AF_RETURN_IF_ERROR(CheckSameDTypeAs(ctx, i, what));
  AF_RETURN_IF_ERROR(CheckRank(what, ctx.input_shape(i), 1, 1));
  return MergeFeatures(what, ctx.input_shape(i), f);
}

// LayerNorm(x [..., D], gamma [D], beta [D]) -> y [..., D], mean [...], inv_std [...].
Status InferLayerNorm(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("x (input 0)", ctx.input_dtype(0), Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckEpsilon(ctx));
  const Shape& x = ctx.input_shape(0);
  AF_RETURN_IF_ERROR(CheckRank("x (input 0)", x, 1, -1));
  Features f;
  AF_RETURN_IF_ERROR(MergeFeatures("x (input 0)", x, &f));
  AF_RETURN_IF_ERROR(MergeVector(ctx, 1, "gamma (input 1)", &f));
  AF_RETURN_IF_ERROR(MergeVector(ctx, 2, "beta (input 2)", &f));
  const DType dtype = ctx.input_dtype(0);
  ctx.set_output(0, dtype, WithFeatures(x, f));
  ctx.set_output(1, dtype, DropLast(x, 1));
  ctx.set_output(2, dtype, DropLast(x, 1));
  return Status::OK();
}

// LayerNormGrad(dy [..., D], x [..., D], mean [...], inv_std [...], gamma [D]) ->
// dx [..., D], dgamma [D], dbeta [D].
Status InferLayerNormGrad(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("dy (input 0)", ctx.input_dtype(0), Allowed::kFloating));
  const std::vector<std::string> names = {"dy (input 0)", "x (input 1)", "mean (input 2)",
                                          "inv_std (input 3)", "gamma (input 4)"};
  for (int i = 1; i < 5; ++i) AF_RETURN_IF_ERROR(CheckSameDTypeAs(ctx, i, names[i]));
  const Shape& dy = ctx.input_shape(0);
  const Shape& x = ctx.input_shape(1);
  AF_RETURN_IF_ERROR(CheckRank(names[0], dy, 1, -1));
  AF_RETURN_IF_ERROR(CheckRank(names[1], x, 1, -1));
  if (!dy.IsCompatibleWith(x)) {
    return InvalidArgument("dy (input 0) " + dy.ToString() + " and x (input 1) " +
                           x.ToString() + " must have the same shape");
  }
  const Shape both = x.MergeWith(dy);
  Shape rows = DropLast(both, 1);
  for (int i : {2, 3}) {
    if (!rows.IsCompatibleWith(ctx.input_shape(i))) {
      return InvalidArgument(names[i] + " " + ctx.input_shape(i).ToString() +
                             " must have x's shape without its last dim, " + rows.ToString() +
                             " for x " + both.ToString());
    }
    rows = rows.MergeWith(ctx.input_shape(i));
  }
  Features f;
  AF_RETURN_IF_ERROR(MergeFeatures("x (input 1)", both, &f));
  AF_RETURN_IF_ERROR(MergeVector(ctx, 4, names[4], &f));
  const DType dtype = ctx.input_dtype(0);
  Shape dx = WithFeatures(both, f);
  if (dx.unknown_rank() && !rows.unknown_rank()) {
    std::vector<int64_t> dims = rows.dims();
    dims.push_back(f.count);
    dx = Shape(std::move(dims));
  }
  ctx.set_output(0, dtype, dx);
  ctx.set_output(1, dtype, Shape{f.count});
  ctx.set_output(2, dtype, Shape{f.count});
  return Status::OK();
}

// Gelu(x) -> x's dtype and shape.
Status InferGelu(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("x (input 0)", ctx.input_dtype(0), Allowed::kFloating));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

// GeluGrad(dy, x) -> dx: one shape (no broadcasting), float dtype.
Status InferGeluGrad(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("dy (input 0)", ctx.input_dtype(0), Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckSameDTypeAs(ctx, 1, "x (input 1)"));
  const Shape& dy = ctx.input_shape(0);
  const Shape& x = ctx.input_shape(1);
  if (!dy.IsCompatibleWith(x)) {
    return InvalidArgument("dy (input 0) " + dy.ToString() + " and x (input 1) " +
                           x.ToString() + " must have the same shape");
  }
  ctx.set_output(0, ctx.input_dtype(0), x.MergeWith(dy));
  return Status::OK();
}

// `what` is float32: the packed products have no other kernels.
Status CheckFloat32(const InferenceContext& ctx, int i, const std::string& what) {
  if (ctx.input_dtype(i) == DType::kFloat32) return Status::OK();
  return InvalidArgument(what + " has dtype " + DTypeName(ctx.input_dtype(i)) +
                         ": packed matrix products take float32 only");
}

// Dims of a packed right operand: ceil(N / 32) panels of K rows of 32 columns (the
// layout of kernels/cpu/packed_gemm.h, whose PackedPanels graph/ cannot include).
constexpr int64_t kPanelColumns = 32;
int64_t Panels(int64_t n) { return n < 0 ? -1 : (n + kPanelColumns - 1) / kPanelColumns; }

// PackMatMulOperand(b [K, N], or [N, K] with transpose) -> [ceil(N / 32), K, 32].
Status InferPackMatMulOperand(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckFloat32(ctx, 0, "b (input 0)"));
  const Shape& b = ctx.input_shape(0);
  AF_RETURN_IF_ERROR(CheckRank("b (input 0)", b, 2, 2));
  if (b.unknown_rank()) {
    ctx.set_output(0, DType::kFloat32, Shape{-1, -1, kPanelColumns});
    return Status::OK();
  }
  const bool transpose = ctx.attr<bool>("transpose");
  const int64_t k = transpose ? b.dim(1) : b.dim(0);
  const int64_t n = transpose ? b.dim(0) : b.dim(1);
  ctx.set_output(0, DType::kFloat32, Shape{Panels(n), k, kPanelColumns});
  return Status::OK();
}

// PackedMatMul(a [M, K], packed [ceil(n / 32), K, 32]) -> [M, n].
Status InferPackedMatMul(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckFloat32(ctx, 0, "a (input 0)"));
  AF_RETURN_IF_ERROR(CheckFloat32(ctx, 1, "packed (input 1)"));
  const Shape& a = ctx.input_shape(0);
  const Shape& packed = ctx.input_shape(1);
  AF_RETURN_IF_ERROR(CheckRank("a (input 0)", a, 2, 2));
  AF_RETURN_IF_ERROR(CheckRank("packed (input 1)", packed, 3, 3));
  const int64_t n = ctx.attr<int64_t>("n");
  if (n < 0) return InvalidArgument("attr n is " + std::to_string(n) + ": it must be >= 0");
  if (!packed.unknown_rank()) {
    const auto known_and_not = [](int64_t dim, int64_t want) { return dim >= 0 && dim != want; };
    if (known_and_not(packed.dim(0), Panels(n)) || known_and_not(packed.dim(2), kPanelColumns)) {
      return InvalidArgument("packed (input 1) " + packed.ToString() + " is not a packed " +
                             "operand of " + std::to_string(n) + " columns: want [" +
                             std::to_string(Panels(n)) + ", K, 32] (PackMatMulOperand)");
    }
    if (!a.unknown_rank() && a.dim(1) >= 0 && packed.dim(1) >= 0 && a.dim(1) != packed.dim(1)) {
      return InvalidArgument("a (input 0) " + a.ToString() + " and packed (input 1) " +
                             packed.ToString() + " have inner dimensions " +
                             std::to_string(a.dim(1)) + " and " + std::to_string(packed.dim(1)));
    }
  }
  ctx.set_output(0, DType::kFloat32, Shape{a.unknown_rank() ? -1 : a.dim(0), n});
  return Status::OK();
}

std::vector<OpDef> MathOpSet() {
  using T = AttrType;
  std::vector<OpDef> ops;
  ops.push_back(MakeOp("BatchMatMul", 2, 1,
                       {Default("adj_x", T::kBool, false), Default("adj_y", T::kBool, false)},
                       InferBatchMatMul));
  ops.push_back(
      MakeOp("LayerNorm", 3, 3, {Default("epsilon", T::kFloat, 1e-5)}, InferLayerNorm));
  ops.push_back(MakeOp("LayerNormGrad", 5, 3, {}, InferLayerNormGrad));
  const std::vector<AttrDef> gelu_attrs = {Default("approximate", T::kBool, false)};
  ops.push_back(MakeOp("Gelu", 1, 1, gelu_attrs, InferGelu));
  ops.push_back(MakeOp("GeluGrad", 2, 1, gelu_attrs, InferGeluGrad));
  ops.push_back(MakeOp("PackMatMulOperand", 1, 1, {Default("transpose", T::kBool, false)},
                       InferPackMatMulOperand));
  ops.push_back(MakeOp("PackedMatMul", 2, 1, {Required("n", T::kInt)}, InferPackedMatMul));
  return ops;
}

[[maybe_unused]] const bool kMathOpsRegistered = [] {
  for (OpDef& def : MathOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
