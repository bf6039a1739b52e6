// CPU kernels of the sparse in-place updates (graph/sparse_ops.h): ScatterAdd,
// ScatterSub and ScatterUpdate (registered by their ids' dtype, int32 and int64, for
// float32, float64, int32 and int64 variables) and SparseApplyGradientDescent,
// SparseApplyAdagrad, SparseApplyAdam and SparseApplyFtrl (float32, float64).
//
// Each locks its variables as the dense Apply kernels do (LockApplyVariables,
// kernels/cpu/variable_update.h), checks every id before touching a row, and writes
// only the named rows, through MutableValue (copy-on-write). The SparseApply kernels
// sum the rows of a repeated id first, in input order as UnsortedSegmentSum does, then
// run the dense kernels' per-element rule (kernels/optimizer_rules.h) on each touched
// row: a touched row ends bit-identical to the dense update's.
#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

#include "graph/types.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/row_ids.h"
#include "kernels/cpu/variable_update.h"
#include "kernels/kernel.h"
#include "kernels/optimizer_rules.h"
#include "kernels/resource.h"

namespace actorflow {
namespace cpu {
namespace {

enum class ScatterMode { kAdd, kSub, kUpdate };

// a op b; integers wrap around instead of overflowing.
template <typename T>
T Combine(ScatterMode mode, T a, T b) {
  if (mode == ScatterMode::kUpdate) return b;
  return mode == ScatterMode::kAdd ? WrapAdd(a, b) : WrapSub(a, b);
}

// Inputs: ref (Variable [N, d...]), indices [i...] (the kernel's dtype), updates
// [i..., d...]. Output: ref's new value.
template <ScatterMode kMode>
class ScatterKernel : public Kernel {
 public:
  explicit ScatterKernel(const Node& node) : Kernel(node) {}

  void Compute(KernelContext* ctx) override {
    StatusOr<std::shared_ptr<VariableResource>> var =
        variables_.Get(ctx->resources(), *ctx->node().input(0).node, 0);
    if (!var.ok()) return ctx->SetStatus(var.status().WithContext(node().Describe()));
    const Tensor& updates = ctx->input(2);
    std::lock_guard<std::mutex> lock((*var)->mu);
    if (!(*var)->initialized) {
      return ctx->SetStatus(UninitializedVariable(**var).WithContext(node().Describe()));
    }
    const Tensor& value = (*var)->value;
    if (value.dtype() != updates.dtype() || value.rank() < 1) {
      return ctx->Fail(Code::kInvalidArgument, "updates " + updates.DebugString() +
                                                   " cannot go into variable '" +
                                                   (*var)->name() + "' holding " +
                                                   value.DebugString());
    }
    std::vector<int64_t> rows_shape = ctx->input(1).shape().dims();
    rows_shape.insert(rows_shape.end(), value.shape().dims().begin() + 1,
                      value.shape().dims().end());
    if (updates.shape() != Shape(rows_shape)) {
      return ctx->Fail(Code::kInvalidArgument,
                       "updates of shape " + updates.shape().ToString() + " for indices " +
                           ctx->input(1).shape().ToString() + " of variable '" +
                           (*var)->name() + "' " + value.shape().ToString() + ": expected " +
                           Shape(rows_shape).ToString());
    }
    const std::vector<int64_t> ids = ReadRowIds(ctx->input(1));
    const Status valid = CheckRowIds(ids, value.dim(0), "indices");
    if (!valid.ok()) return ctx->Fail(Code::kInvalidArgument, valid.message());
    const int64_t row = RowSize(value.shape());
    Tensor& target = (*var)->MutableValue();
    VisitDType(target.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (!std::is_same_v<T, bool>) {
        T* dst = target.data<T>();
        const T* src = updates.data<T>();
        for (size_t i = 0; i < ids.size(); ++i) {
          T* to = dst + ids[i] * row;
          const T* from = src + i * row;
          for (int64_t j = 0; j < row; ++j) to[j] = Combine(kMode, to[j], from[j]);
        }
      }
    });
    ctx->set_output(0, target);
  }

 private:
  VariableLookupCache variables_;
};

template <typename TIndex>
using ScatterAddKernel = ScatterKernel<ScatterMode::kAdd>;
template <typename TIndex>
using ScatterSubKernel = ScatterKernel<ScatterMode::kSub>;
template <typename TIndex>
using ScatterUpdateKernel = ScatterKernel<ScatterMode::kUpdate>;

// What one sparse update sees: its variables locked and writable, the touched rows'
// distinct ids and their summed gradient rows.
template <typename T>
struct SparseApplyArgs {
  std::array<T*, LockedVariables::kMaxRefs> refs{};  // [0] the variable, [1..] its slots
  std::vector<int64_t> ids;     // distinct ids, first occurrence first
  const T* grad = nullptr;      // [ids.size(), row]
  int64_t row = 0;              // elements per row
};

// The shared part of the SparseApply kernels: lock and check (LockApplyVariables with
// the ids as the last input), check the ids, sum repeated rows, then Update() and
// output the variable's new value.
template <typename T>
class SparseApplyKernel : public Kernel {
 public:
  // `indices_input` -1: the last input.
  SparseApplyKernel(const Node& node, int grad_input, int indices_input = -1)
      : Kernel(node),
        grad_input_(grad_input),
        indices_input_(indices_input >= 0 ? indices_input : node.num_inputs() - 1) {}

  void Compute(KernelContext* ctx) final {
    const Node& node = ctx->node();
    const int indices_input = indices_input_;
    StatusOr<LockedVariables> locked = LockApplyVariables(
        ctx->resources(), node, grad_input_, DTypeOf<T>::value,
        [ctx](int i) -> const Tensor& { return ctx->input(i); }, &variables_, indices_input);
    if (!locked.ok()) return ctx->SetStatus(locked.status().WithContext(node.Describe()));
    const auto& vars = locked->vars;
    const std::vector<int64_t> ids = ReadRowIds(ctx->input(indices_input));
    const Status valid = CheckRowIds(ids, vars[0]->value.dim(0), "indices");
    if (!valid.ok()) return ctx->Fail(Code::kInvalidArgument, valid.message());
    SparseApplyArgs<T> args;
    args.row = RowSize(vars[0]->value.shape());
    const T* grad = ctx->input(grad_input_).data<T>();
    GroupedRowIds grouped = GroupRowIds(ids);
    std::vector<T> summed;
    if (grouped.has_repeats()) {
      summed.assign(grouped.distinct.size() * args.row, T(0));
      for (size_t i = 0; i < ids.size(); ++i) {
        T* to = summed.data() + grouped.slot[i] * args.row;
        const T* from = grad + i * args.row;
        for (int64_t j = 0; j < args.row; ++j) to[j] += from[j];
      }
      grad = summed.data();
    }
    args.ids = std::move(grouped.distinct);
    args.grad = grad;
    for (size_t i = 0; i < vars.size(); ++i) args.refs[i] = vars[i]->MutableValue().data<T>();
    Update(*ctx, args);
    ctx->set_output(0, vars[0]->value);
  }

 protected:
  static T Scalar(const KernelContext& ctx, int i) { return ctx.input(i).data<T>()[0]; }
  // Calls fn(offset of the row's first element in var and slots, the row's gradient)
  // for each touched row.
  template <typename Fn>
  static void ForEachRow(const SparseApplyArgs<T>& args, Fn fn) {
    for (size_t k = 0; k < args.ids.size(); ++k) fn(args.ids[k] * args.row, args.grad + k * args.row);
  }
  virtual void Update(const KernelContext& ctx, const SparseApplyArgs<T>& args) = 0;

 private:
  int grad_input_;
  int indices_input_;
  VariableLookupCache variables_;
};

// Inputs: var, alpha, grad, indices.
template <typename T>
class SparseApplyGradientDescentKernel : public SparseApplyKernel<T> {
 public:
  explicit SparseApplyGradientDescentKernel(const Node& node) : SparseApplyKernel<T>(node, 2) {}

 protected:
  void Update(const KernelContext& ctx, const SparseApplyArgs<T>& args) override {
    const T alpha = this->Scalar(ctx, 1);
    T* var = args.refs[0];
    this->ForEachRow(args, [&](int64_t at, const T* g) {
      for (int64_t j = 0; j < args.row; ++j) GradientDescentUpdate(var[at + j], g[j], alpha);
    });
  }
};

// Inputs: var, accum, lr, grad, indices.
template <typename T>
class SparseApplyAdagradKernel : public SparseApplyKernel<T> {
 public:
  explicit SparseApplyAdagradKernel(const Node& node) : SparseApplyKernel<T>(node, 3) {}

 protected:
  void Update(const KernelContext& ctx, const SparseApplyArgs<T>& args) override {
    const T lr = this->Scalar(ctx, 2);
    T* var = args.refs[0];
    T* accum = args.refs[1];
    this->ForEachRow(args, [&](int64_t at, const T* g) {
      for (int64_t j = 0; j < args.row; ++j) AdagradUpdate(var[at + j], accum[at + j], g[j], lr);
    });
  }
};

// Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
// indices.
template <typename T>
class SparseApplyAdamKernel : public SparseApplyKernel<T> {
 public:
  explicit SparseApplyAdamKernel(const Node& node) : SparseApplyKernel<T>(node, 9) {}

 protected:
  void Update(const KernelContext& ctx, const SparseApplyArgs<T>& args) override {
    const AdamParams<T> params{
        AdamStepSize(this->Scalar(ctx, 5), this->Scalar(ctx, 3), this->Scalar(ctx, 4)),
        this->Scalar(ctx, 6), this->Scalar(ctx, 7), this->Scalar(ctx, 8)};
    T* var = args.refs[0];
    T* m = args.refs[1];
    T* v = args.refs[2];
    this->ForEachRow(args, [&](int64_t at, const T* g) {
      for (int64_t j = 0; j < args.row; ++j) {
        AdamUpdate(var[at + j], m[at + j], v[at + j], g[j], params);
      }
    });
  }
};

// Inputs: var, accum, linear, grad, indices, lr, l1, l2, lr_power.
template <typename T>
class SparseApplyFtrlKernel : public SparseApplyKernel<T> {
 public:
  explicit SparseApplyFtrlKernel(const Node& node) : SparseApplyKernel<T>(node, 3, 4) {}

 protected:
  void Update(const KernelContext& ctx, const SparseApplyArgs<T>& args) override {
    const FtrlParams<T> params{this->Scalar(ctx, 5), this->Scalar(ctx, 6), this->Scalar(ctx, 7),
                               this->Scalar(ctx, 8)};
    T* var = args.refs[0];
    T* accum = args.refs[1];
    T* linear = args.refs[2];
    this->ForEachRow(args, [&](int64_t at, const T* g) {
      for (int64_t j = 0; j < args.row; ++j) {
        FtrlUpdate(var[at + j], accum[at + j], linear[at + j], g[j], params);
      }
    });
  }
};

const CpuKernelRegistrations<ScatterAddKernel, int32_t, int64_t> reg_scatter_add("ScatterAdd");
const CpuKernelRegistrations<ScatterSubKernel, int32_t, int64_t> reg_scatter_sub("ScatterSub");
const CpuKernelRegistrations<ScatterUpdateKernel, int32_t, int64_t> reg_scatter_update(
    "ScatterUpdate");
const CpuKernelRegistrations<SparseApplyGradientDescentKernel, float, double>
    reg_sparse_apply_gradient_descent("SparseApplyGradientDescent");
const CpuKernelRegistrations<SparseApplyAdagradKernel, float, double> reg_sparse_apply_adagrad(
    "SparseApplyAdagrad");
const CpuKernelRegistrations<SparseApplyAdamKernel, float, double> reg_sparse_apply_adam(
    "SparseApplyAdam");
const CpuKernelRegistrations<SparseApplyFtrlKernel, float, double> reg_sparse_apply_ftrl(
    "SparseApplyFtrl");

}  // namespace
}  // namespace cpu
}  // namespace actorflow
