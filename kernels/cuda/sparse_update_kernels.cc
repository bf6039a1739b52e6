// GPU kernels of the sparse in-place updates (graph/sparse_ops.h) of float32 and
// float64 variables: ScatterAdd, ScatterSub and ScatterUpdate (registered by their
// ids' dtype, int32 and int64, as on the CPU) and SparseApplyGradientDescent,
// SparseApplyAdagrad, SparseApplyAdam (lazy Adam) and SparseApplyFtrl. Checks and
// messages are the CPU kernels' (kernels/cpu/sparse_update_kernels.cc); the math is
// sparse.cu's.
//
// Repeated ids (sparse_launch.h): ids are sorted stably on the device, and one thread
// per element of each distinct row walks that id's rows in input order. Scatter*
// applies them one after another (the last row of a repeated id wins an update);
// SparseApply* sums them first, from 0 in input order when any id repeats, and then
// runs the dense rule once per touched row. Both are the CPU kernels' order of
// operations, so results differ from the CPU's only by the FMA contraction that
// optimizer_rules.h allows on a GPU.
//
// A bad id is found on the device: the row kernels then write nothing, and the kernel
// fails after the stream has run. Variables are locked while the update is queued and
// made exclusive first (copy-on-write), as the dense Apply kernels (training_kernels.cc).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu/row_ids.h"
#include "kernels/cpu/variable_update.h"
#include "kernels/cuda/sparse_kernel_util.h"
#include "kernels/resource.h"

namespace actorflow {
namespace gpu {
namespace {

// Inputs: ref (Variable [N, d...]), indices [i...] (the kernel's dtype), updates
// [i..., d...]. Output: ref's new value.
template <ScatterOp kOp>
class ScatterGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Node& node = l->ctx->node();
    AF_ASSIGN_OR_RETURN(auto var, variables_.Get(l->ctx->resources(), *node.input(0).node, 0));
    const Tensor& indices = l->inputs[1];
    const Tensor& updates = l->inputs[2];
    std::lock_guard<std::mutex> lock(var->mu);
    if (!var->initialized) return UninitializedVariable(*var);
    const Tensor& value = var->value;
    if (value.dtype() != updates.dtype() || value.rank() < 1) {
      return InvalidArgument("updates " + updates.DebugString() + " cannot go into variable '" +
                             var->name() + "' holding " + value.DebugString());
    }
    if (!IsFloating(value.dtype())) {
      return InvalidArgument("variable '" + var->name() + "' holds " + value.DebugString() +
                             ": the GPU kernel takes float32 and float64 variables");
    }
    std::vector<int64_t> rows_shape = indices.shape().dims();
    rows_shape.insert(rows_shape.end(), value.shape().dims().begin() + 1,
                      value.shape().dims().end());
    if (updates.shape() != Shape(rows_shape)) {
      return InvalidArgument("updates of shape " + updates.shape().ToString() +
                             " for indices " + indices.shape().ToString() + " of variable '" +
                             var->name() + "' " + value.shape().ToString() + ": expected " +
                             Shape(rows_shape).ToString());
    }
    const int64_t rows = value.dim(0);
    AF_ASSIGN_OR_RETURN(DeviceRowIds ids, RowIdsOf(indices, rows, "indices"));
    AF_RETURN_IF_ERROR(MakeExclusiveOnDevice(l->device, &var->value));
    AF_ASSIGN_OR_RETURN(Tensor bad_id, AllocateBadId(l->device));
    AF_RETURN_IF_ERROR(FromLaunch(ScatterRows(l->device, kOp, ElemTypeOf(var->value.dtype()),
                                              var->value.raw_data(),
                                              cpu::RowSize(var->value.shape()), ids,
                                              updates.raw_data(), bad_id.data<int64_t>())));
    AF_ASSIGN_OR_RETURN(l->after, CheckBadIdLater(l->ctx, l->device, bad_id, "indices", rows));
    l->ctx->set_output(0, var->value);
    return Status::OK();
  }

 private:
  VariableLookupCache variables_;
};

template <typename TIndex>
using ScatterAddGpu = ScatterGpuKernel<ScatterOp::kAdd>;
template <typename TIndex>
using ScatterSubGpu = ScatterGpuKernel<ScatterOp::kSub>;
template <typename TIndex>
using ScatterUpdateGpu = ScatterGpuKernel<ScatterOp::kUpdate>;

// What one sparse update sees: its variables locked and on the device (refs[0] the
// variable, refs[1..] its slots), the ids and their gradient rows.
struct SparseApplyLaunch {
  const GpuLaunch* launch = nullptr;
  std::vector<void*> refs;
  DeviceRowIds ids;
  const void* grad = nullptr;  // [ids.n, row]
  int64_t row = 0;             // elements per row
  int64_t* bad_id = nullptr;
};

// The shared part of the SparseApply kernels: lock and check (LockApplyVariables with
// the ids), make the variables exclusive on the device, Update(), then the id check
// after the stream has run it.
template <typename T>
class SparseApplyGpuKernel : public GpuKernel {
 public:
  // `indices_input` -1: the last input.
  SparseApplyGpuKernel(const Node& node, int grad_input, int indices_input = -1)
      : GpuKernel(node),
        grad_input_(grad_input),
        indices_input_(indices_input >= 0 ? indices_input : node.num_inputs() - 1) {}

  Status Launch(GpuLaunch* l) final {
    const Node& node = l->ctx->node();
    AF_ASSIGN_OR_RETURN(LockedVariables locked,
                        LockApplyVariables(
                            l->ctx->resources(), node, grad_input_, DTypeOf<T>::value,
                            [l](int i) -> const Tensor& { return l->inputs[i]; }, &variables_,
                            indices_input_));
    SparseApplyLaunch args;
    args.launch = l;
    const int64_t rows = locked.vars[0]->value.dim(0);
    AF_ASSIGN_OR_RETURN(args.ids, RowIdsOf(l->inputs[indices_input_], rows, "indices"));
    args.row = cpu::RowSize(locked.vars[0]->value.shape());
    args.grad = l->inputs[grad_input_].raw_data();
    // A variable listed twice is made exclusive once: the second call finds it so.
    for (const auto& v : locked.vars) {
      AF_RETURN_IF_ERROR(MakeExclusiveOnDevice(l->device, &v->value));
      args.refs.push_back(v->value.raw_data());
    }
    AF_ASSIGN_OR_RETURN(Tensor bad_id, AllocateBadId(l->device));
    args.bad_id = bad_id.data<int64_t>();
    AF_RETURN_IF_ERROR(FromLaunch(Update(args)));
    AF_ASSIGN_OR_RETURN(l->after, CheckBadIdLater(l->ctx, l->device, bad_id, "indices", rows));
    l->ctx->set_output(0, locked.vars[0]->value);
    return Status::OK();
  }

 protected:
  static constexpr ElemType kType = FloatElemType<T>();
  // The device address of scalar input i.
  static const void* Scalar(const SparseApplyLaunch& a, int i) {
    return a.launch->inputs[i].raw_data();
  }
  virtual GpuError Update(const SparseApplyLaunch& a) = 0;

 private:
  const int grad_input_;
  const int indices_input_;
  VariableLookupCache variables_;
};

// Inputs: var, alpha, grad, indices.
template <typename T>
class SparseApplyGradientDescentGpu : public SparseApplyGpuKernel<T> {
 public:
  explicit SparseApplyGradientDescentGpu(const Node& node) : SparseApplyGpuKernel<T>(node, 2) {}
  GpuError Update(const SparseApplyLaunch& a) override {
    return SparseApplyGradientDescent(a.launch->device, this->kType, a.refs[0],
                                      this->Scalar(a, 1), a.grad, a.row, a.ids, a.bad_id);
  }
};

// Inputs: var, accum, lr, grad, indices.
template <typename T>
class SparseApplyAdagradGpu : public SparseApplyGpuKernel<T> {
 public:
  explicit SparseApplyAdagradGpu(const Node& node) : SparseApplyGpuKernel<T>(node, 3) {}
  GpuError Update(const SparseApplyLaunch& a) override {
    return SparseApplyAdagrad(a.launch->device, this->kType, a.refs[0], a.refs[1],
                              this->Scalar(a, 2), a.grad, a.row, a.ids, a.bad_id);
  }
};

// Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
// indices.
template <typename T>
class SparseApplyAdamGpu : public SparseApplyGpuKernel<T> {
 public:
  explicit SparseApplyAdamGpu(const Node& node) : SparseApplyGpuKernel<T>(node, 9) {}
  GpuError Update(const SparseApplyLaunch& a) override {
    return SparseApplyAdam(a.launch->device, this->kType, a.refs[0], a.refs[1], a.refs[2],
                           this->Scalar(a, 3), this->Scalar(a, 4), this->Scalar(a, 5),
                           this->Scalar(a, 6), this->Scalar(a, 7), this->Scalar(a, 8), a.grad,
                           a.row, a.ids, a.bad_id);
  }
};

// Inputs: var, accum, linear, grad, indices, lr, l1, l2, lr_power.
template <typename T>
class SparseApplyFtrlGpu : public SparseApplyGpuKernel<T> {
 public:
  explicit SparseApplyFtrlGpu(const Node& node) : SparseApplyGpuKernel<T>(node, 3, 4) {}
  GpuError Update(const SparseApplyLaunch& a) override {
    return SparseApplyFtrl(a.launch->device, this->kType, a.refs[0], a.refs[1], a.refs[2],
                           this->Scalar(a, 5), this->Scalar(a, 6), this->Scalar(a, 7),
                           this->Scalar(a, 8), a.grad, a.row, a.ids, a.bad_id);
  }
};

const GpuKernelRegistrations<ScatterAddGpu, int32_t, int64_t> reg_scatter_add("ScatterAdd");
const GpuKernelRegistrations<ScatterSubGpu, int32_t, int64_t> reg_scatter_sub("ScatterSub");
const GpuKernelRegistrations<ScatterUpdateGpu, int32_t, int64_t> reg_scatter_update(
    "ScatterUpdate");
const GpuKernelRegistrations<SparseApplyGradientDescentGpu, float, double>
    reg_sparse_apply_gradient_descent("SparseApplyGradientDescent");
const GpuKernelRegistrations<SparseApplyAdagradGpu, float, double> reg_sparse_apply_adagrad(
    "SparseApplyAdagrad");
const GpuKernelRegistrations<SparseApplyAdamGpu, float, double> reg_sparse_apply_adam(
    "SparseApplyAdam");
const GpuKernelRegistrations<SparseApplyFtrlGpu, float, double> reg_sparse_apply_ftrl(
    "SparseApplyFtrl");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
