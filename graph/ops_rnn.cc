// The op set's fused recurrent cells (graph/rnn_ops.h documents what each promises):
// LSTMBlockCell, GRUBlockCell and their backward ops LSTMBlockCellGrad and
// GRUBlockCellGrad, as TensorFlow 1.x's contrib/rnn kernels (no peepholes).
//
// Every input is a matrix or vector whose dims are B (batch), I (input size), H
// (hidden size), multiples of H or I + H. Inference binds B, I and H from the inputs
// that know them and rejects the first input that disagrees, naming it, its shape and
// the input that fixed the dim before it. Unknown dims stay unknown.
//
// GRUBlockCellGrad takes TensorFlow's ten inputs, or thirteen when the gradients of the
// gate outputs r, u and c come too (graph/rnn_ops.h); LSTMBlockCellGrad has
// TensorFlow's thirteen inputs and a cell_clip attr, so that its gradient stops where
// the forward clip held the cell state.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"

namespace actorflow {
namespace op_set_internal {
namespace {

// A dim of a cell input: `factor` times B, I or H, or I + H (factor 1).
enum class Sym { kB, kI, kH, kIH };
struct DimSpec {
  Sym sym;
  int64_t factor = 1;
};
struct InputSpec {
  const char* name;
  std::vector<DimSpec> dims;  // the input's rank is dims.size()
};

const char* SymName(Sym sym) { return sym == Sym::kB ? "B" : sym == Sym::kI ? "I" : "H"; }

// B, I or H as far as the inputs have fixed it, and which input fixed it.
struct Bound {
  int64_t value = Shape::kUnknownDim;
  std::string source;
};

class CellDims {
 public:
  explicit CellDims(const InferenceContext& ctx) : ctx_(ctx) {}

  // Checks inputs [0, specs.size()) against specs: floating, all of input 0's dtype,
  // the spec's ranks and consistent dims.
  Status Check(const std::vector<InputSpec>& specs) {
    AF_RETURN_IF_ERROR(CheckDType(Named(specs, 0), ctx_.input_dtype(0), Allowed::kFloating));
    for (size_t i = 0; i < specs.size(); ++i) {
      const int n = static_cast<int>(specs[i].dims.size());
      AF_RETURN_IF_ERROR(CheckRank(Named(specs, i), ctx_.input_shape(i), n, n));
      if (ctx_.input_dtype(i) != ctx_.input_dtype(0)) {
        return InvalidArgument(Named(specs, i) + " has dtype " + DTypeName(ctx_.input_dtype(i)) +
                               " but " + Named(specs, 0) + " has " +
                               DTypeName(ctx_.input_dtype(0)) + ": the cell takes one dtype");
      }
    }
    // B, I and H first, then the I + H dims, which can only be checked (or fill in
    // one of I and H) once the others are known.
    for (bool sum_pass : {false, true}) {
      for (size_t i = 0; i < specs.size(); ++i) {
        const Shape& shape = ctx_.input_shape(i);
        if (shape.unknown_rank()) continue;
        for (size_t d = 0; d < specs[i].dims.size(); ++d) {
          const DimSpec& spec = specs[i].dims[d];
          if ((spec.sym == Sym::kIH) != sum_pass || shape.dim(d) < 0) continue;
          const std::string what = Named(specs, i) + " " + shape.ToString();
          AF_RETURN_IF_ERROR(sum_pass ? BindSum(shape.dim(d), what)
                                      : Bind(spec, shape.dim(d), what));
        }
      }
    }
    return Status::OK();
  }

  // The dim `factor` * sym (sym not kIH), or I + H; unknown when a part is.
  int64_t Get(Sym sym, int64_t factor = 1) const {
    if (sym == Sym::kIH) {
      return Of(Sym::kI) < 0 || Of(Sym::kH) < 0 ? Shape::kUnknownDim : Of(Sym::kI) + Of(Sym::kH);
    }
    return Of(sym) < 0 ? Shape::kUnknownDim : factor * Of(sym);
  }

 private:
  std::string Named(const std::vector<InputSpec>& specs, size_t i) const {
    return std::string(specs[i].name) + " (input " + std::to_string(i) + ")";
  }
  int64_t Of(Sym sym) const { return bound_[static_cast<int>(sym)].value; }

  Status Bind(const DimSpec& spec, int64_t dim, const std::string& what) {
    const std::string name = (spec.factor == 1 ? "" : std::to_string(spec.factor)) +
                             SymName(spec.sym);
    if (dim % spec.factor != 0) {
      return InvalidArgument(what + " has " + std::to_string(dim) + " where it needs " + name +
                             ", a multiple of " + std::to_string(spec.factor));
    }
    return Set(spec.sym, dim / spec.factor, what,
               spec.factor == 1 ? "" : name + " = " + std::to_string(dim));
  }

  Status Set(Sym sym, int64_t value, const std::string& what, const std::string& how) {
    Bound& b = bound_[static_cast<int>(sym)];
    if (b.value < 0) {
      b = {value, what};
      return Status::OK();
    }
    if (b.value == value) return Status::OK();
    // `how` says where a derived value came from ("4H = 12").
    return InvalidArgument(what + " gives " + (how.empty() ? "" : how + ", so ") +
                           SymName(sym) + " = " + std::to_string(value) + ", but " + b.source +
                           " gives " + SymName(sym) + " = " + std::to_string(b.value));
  }

  Status BindSum(int64_t dim, const std::string& what) {
    const int64_t i = Of(Sym::kI), h = Of(Sym::kH);
    const std::string how = "I + H = " + std::to_string(dim);
    if (i >= 0 && h >= 0 && i + h != dim) {
      return InvalidArgument(what + " must have I + H = " + std::to_string(i) + " + " +
                             std::to_string(h) + " = " + std::to_string(i + h) + " rows (I from " +
                             Source(Sym::kI) + ", H from " + Source(Sym::kH) + "), not " +
                             std::to_string(dim));
    }
    if (i >= 0 && h < 0) return SetNonNegative(Sym::kH, dim - i, what, how);
    if (h >= 0 && i < 0) return SetNonNegative(Sym::kI, dim - h, what, how);
    return Status::OK();
  }

  Status SetNonNegative(Sym sym, int64_t value, const std::string& what, const std::string& how) {
    if (value < 0) {
      return InvalidArgument(what + " gives " + how + ", fewer rows than " +
                             (sym == Sym::kH ? "I" : "H") + " alone");
    }
    return Set(sym, value, what, how);
  }

  const std::string& Source(Sym sym) const { return bound_[static_cast<int>(sym)].source; }

  const InferenceContext& ctx_;
  Bound bound_[3];  // B, I, H
};

constexpr DimSpec kB{Sym::kB};
constexpr DimSpec kI{Sym::kI};
constexpr DimSpec kH{Sym::kH};
constexpr DimSpec kIH{Sym::kIH};
constexpr DimSpec H(int64_t factor) { return {Sym::kH, factor}; }

const std::vector<InputSpec>& LstmInputs() {
  static const auto* specs = new std::vector<InputSpec>{
      {"x", {kB, kI}}, {"cs_prev", {kB, kH}}, {"h_prev", {kB, kH}},
      {"w", {kIH, H(4)}}, {"b", {H(4)}}};
  return *specs;
}

const std::vector<InputSpec>& GruInputs() {
  static const auto* specs = new std::vector<InputSpec>{
      {"x", {kB, kI}},     {"h_prev", {kB, kH}}, {"w_ru", {kIH, H(2)}},
      {"w_c", {kIH, kH}}, {"b_ru", {H(2)}},     {"b_c", {kH}}};
  return *specs;
}

// `base` followed by [B, H] inputs named `names`.
std::vector<InputSpec> WithStates(std::vector<InputSpec> base,
                                  const std::vector<const char*>& names) {
  for (const char* name : names) base.push_back({name, {kB, kH}});
  return base;
}

// x, cs_prev, h_prev, w, b -> i, cs, f, o, ci, co, h, each [B, H].
Status InferLstmBlockCell(InferenceContext& ctx) {
  CellDims dims(ctx);
  AF_RETURN_IF_ERROR(dims.Check(LstmInputs()));
  for (int k = 0; k < 7; ++k) {
    ctx.set_output(k, ctx.input_dtype(0), Shape{dims.Get(Sym::kB), dims.Get(Sym::kH)});
  }
  return Status::OK();
}

// x, cs_prev, h_prev, w, b, i, cs, f, o, ci, co, cs_grad, h_grad -> cs_prev_grad
// [B, H], dgates [B, 4H].
Status InferLstmBlockCellGrad(InferenceContext& ctx) {
  CellDims dims(ctx);
  AF_RETURN_IF_ERROR(dims.Check(WithStates(
      LstmInputs(), {"i", "cs", "f", "o", "ci", "co", "cs_grad", "h_grad"})));
  ctx.set_output(0, ctx.input_dtype(0), Shape{dims.Get(Sym::kB), dims.Get(Sym::kH)});
  ctx.set_output(1, ctx.input_dtype(0), Shape{dims.Get(Sym::kB), dims.Get(Sym::kH, 4)});
  return Status::OK();
}

// x, h_prev, w_ru, w_c, b_ru, b_c -> r, u, c, h, each [B, H].
Status InferGruBlockCell(InferenceContext& ctx) {
  CellDims dims(ctx);
  AF_RETURN_IF_ERROR(dims.Check(GruInputs()));
  for (int k = 0; k < 4; ++k) {
    ctx.set_output(k, ctx.input_dtype(0), Shape{dims.Get(Sym::kB), dims.Get(Sym::kH)});
  }
  return Status::OK();
}

// x, h_prev, w_ru, w_c, b_ru, b_c, r, u, c, d_h[, d_r, d_u, d_c] -> d_x [B, I],
// d_h_prev [B, H], d_c_bar [B, H], d_r_bar_u_bar [B, 2H].
Status InferGruBlockCellGrad(InferenceContext& ctx) {
  if (ctx.num_inputs() != 10 && ctx.num_inputs() != 13) {
    return InvalidArgument("GRUBlockCellGrad takes 10 inputs, or 13 with d_r, d_u and d_c; "
                           "got " + std::to_string(ctx.num_inputs()));
  }
  std::vector<const char*> states = {"r", "u", "c", "d_h"};
  if (ctx.num_inputs() == 13) states.insert(states.end(), {"d_r", "d_u", "d_c"});
  CellDims dims(ctx);
  AF_RETURN_IF_ERROR(dims.Check(WithStates(GruInputs(), states)));
  const int64_t b = dims.Get(Sym::kB);
  ctx.set_output(0, ctx.input_dtype(0), Shape{b, dims.Get(Sym::kI)});
  ctx.set_output(1, ctx.input_dtype(0), Shape{b, dims.Get(Sym::kH)});
  ctx.set_output(2, ctx.input_dtype(0), Shape{b, dims.Get(Sym::kH)});
  ctx.set_output(3, ctx.input_dtype(0), Shape{b, dims.Get(Sym::kH, 2)});
  return Status::OK();
}

std::vector<OpDef> RnnOpSet() {
  using T = AttrType;
  const AttrDef clip = Default("cell_clip", T::kFloat, -1.0);
  std::vector<OpDef> ops;
  ops.push_back(MakeOp("LSTMBlockCell", 5, 7, {Default("forget_bias", T::kFloat, 1.0), clip},
                       InferLstmBlockCell));
  ops.push_back(MakeOp("LSTMBlockCellGrad", 13, 2, {clip}, InferLstmBlockCellGrad));
  ops.push_back(MakeOp("GRUBlockCell", 6, 4, {}, InferGruBlockCell));
  OpDef gru_grad = MakeOp("GRUBlockCellGrad", -1, 4, {}, InferGruBlockCellGrad);
  gru_grad.min_inputs = 10;
  ops.push_back(std::move(gru_grad));
  return ops;
}

[[maybe_unused]] const bool kRnnOpsRegistered = [] {
  for (OpDef& def : RnnOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
