// GPU kernels of BatchMatMul, LayerNorm, LayerNormGrad, Gelu and GeluGrad (float32 and
// float64), with the CPU kernels' checks and messages (kernels/cpu/math_op_shapes.h)
// and arithmetic (sequence_launch.h).
//
// BatchMatMul goes to cuBLAS on the operands' buffers, never copying them: the output
// matrices are cut into runs along which the matrices of x and of y each advance by a
// fixed step (0 for a broadcast operand); a run is one strided-batched gemm, or one
// plain gemm of x's stacked rows when y is the same matrix for the whole run and x is
// not transposed (the dense layers of a Transformer). Batch dims that line up, or an
// operand of one matrix, make a single run; other broadcasts make one run per stretch
// of the innermost batch dims.
#include <cstdint>
#include <vector>

#include "kernels/cpu/math_op_shapes.h"
#include "kernels/cuda/gpu_kernel.h"
#include "kernels/cuda/sequence_launch.h"

namespace actorflow {
namespace gpu {
namespace {

Status Queued(const GpuError& e) { return e.ok() ? Status::OK() : Internal(e.message()); }

// Output matrices [first, first + count), whose operands are the matrices
// x_matrix[first] + j * x_step and y_matrix[first] + j * y_step for j < count.
struct ProductRun {
  int64_t first = 0;
  int64_t count = 1;
  int64_t x_step = 0;
  int64_t y_step = 0;
};

// The plan's output matrices as maximal runs from the front; steps are >= 0 (a pair
// that would step backwards is a run of one).
std::vector<ProductRun> RunsOf(const cpu::BatchMatMulPlan& plan) {
  std::vector<ProductRun> runs;
  const int64_t batch = plan.batch();
  const std::vector<int64_t>& xm = plan.x_matrix;
  const std::vector<int64_t>& ym = plan.y_matrix;
  for (int64_t b = 0; b < batch;) {
    ProductRun run;
    run.first = b;
    if (b + 1 < batch && xm[b + 1] >= xm[b] && ym[b + 1] >= ym[b]) {
      run.x_step = xm[b + 1] - xm[b];
      run.y_step = ym[b + 1] - ym[b];
      while (b + run.count < batch && xm[b + run.count] == xm[b] + run.count * run.x_step &&
             ym[b + run.count] == ym[b] + run.count * run.y_step) {
        ++run.count;
      }
    }
    runs.push_back(run);
    b += run.count;
  }
  return runs;
}

// Queues the products of `plan` (K > 0, output not empty) into c.
template <typename T>
Status QueueProducts(GpuDevice* device, const cpu::BatchMatMulPlan& plan, const T* x,
                     const T* y, T* c) {
  const ElemType type = ElemTypeOf(DTypeOf<T>::value);
  const int64_t m = plan.m, n = plan.n, k = plan.k;
  const int64_t x_size = m * k, y_size = k * n, c_size = m * n;
  for (const ProductRun& run : RunsOf(plan)) {
    const T* a = x + plan.x_matrix[run.first] * x_size;
    const T* b = y + plan.y_matrix[run.first] * y_size;
    T* out = c + run.first * c_size;
    GpuError e;
    if (run.count == 1) {
      e = MatMul(device, type, plan.adj_x, plan.adj_y, m, n, k, a, b, out);
    } else if (!plan.adj_x && run.x_step == 1 && run.y_step == 0) {
      // Consecutive [m, k] matrices of x are the rows of one [count * m, k] matrix.
      e = MatMul(device, type, false, plan.adj_y, run.count * m, n, k, a, b, out);
    } else {
      e = StridedBatchedMatMul(device, type, plan.adj_x, plan.adj_y, m, n, k, a,
                               run.x_step * x_size, b, run.y_step * y_size, out, run.count);
    }
    AF_RETURN_IF_ERROR(Queued(e));
  }
  return Status::OK();
}

// Inputs: x [..., M, K] ([..., K, M] with adj_x), y [..., K, N] ([..., N, K] with
// adj_y), batch dims broadcasting. Output: [broadcast batch..., M, N]; K = 0 gives zeros.
template <typename T>
class BatchMatMulGpu : public GpuKernel {
 public:
  explicit BatchMatMulGpu(const Node& node)
      : GpuKernel(node), adj_x_(node.attr<bool>("adj_x")), adj_y_(node.attr<bool>("adj_y")) {}

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const Tensor& y = l->inputs[1];
    AF_ASSIGN_OR_RETURN(cpu::BatchMatMulPlan plan,
                        cpu::PlanBatchMatMul(x.shape(), y.shape(), adj_x_, adj_y_));
    AF_ASSIGN_OR_RETURN(Tensor out, l->AllocateCheckedOutput(0, plan.out));
    if (out.NumElements() == 0) return Status::OK();
    if (plan.k == 0) return Queued(ZeroDevice(l->device, out.raw_data(), out.TotalBytes()));
    AF_RETURN_IF_ERROR(cpu::CheckBatchMatMulBlasLimits(plan));
    return QueueProducts<T>(l->device, plan, x.data<T>(), y.data<T>(), out.data<T>());
  }

 private:
  const bool adj_x_;
  const bool adj_y_;
};

// Inputs: x [..., D], gamma [D], beta [D]. Outputs: y [..., D], mean [...], inv_std [...].
template <typename T>
class LayerNormGpu : public GpuKernel {
 public:
  explicit LayerNormGpu(const Node& node)
      : GpuKernel(node), epsilon_(node.attr<double>("epsilon")) {}

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    const Tensor& gamma = l->inputs[1];
    const Tensor& beta = l->inputs[2];
    AF_ASSIGN_OR_RETURN(cpu::LayerNormDims dims,
                        cpu::CheckLayerNormFeatures(
                            "LayerNorm", x.shape(),
                            {{"gamma", &gamma.shape()}, {"beta", &beta.shape()}}));
    const Shape rows_shape = cpu::LayerNormRowsShape(x.shape());
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, x.shape()));
    AF_ASSIGN_OR_RETURN(Tensor mean, l->AllocateOutput(1, rows_shape));
    AF_ASSIGN_OR_RETURN(Tensor inv_std, l->AllocateOutput(2, rows_shape));
    return Queued(LayerNorm(l->device, ElemTypeOf(DTypeOf<T>::value), dims.rows,
                            dims.features, epsilon_, x.raw_data(), gamma.raw_data(),
                            beta.raw_data(), y.raw_data(), mean.raw_data(),
                            inv_std.raw_data()));
  }

 private:
  const double epsilon_;
};

// Inputs: dy [..., D], x [..., D], mean [...], inv_std [...], gamma [D].
// Outputs: dx [..., D], dgamma [D], dbeta [D].
template <typename T>
class LayerNormGradGpu : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;

  Status Launch(GpuLaunch* l) override {
    const Tensor& dy = l->inputs[0];
    const Tensor& x = l->inputs[1];
    const Tensor& mean = l->inputs[2];
    const Tensor& inv_std = l->inputs[3];
    const Tensor& gamma = l->inputs[4];
    AF_ASSIGN_OR_RETURN(
        cpu::LayerNormDims dims,
        cpu::CheckLayerNormFeatures("LayerNormGrad", x.shape(), {{"gamma", &gamma.shape()}}));
    AF_RETURN_IF_ERROR(
        cpu::CheckLayerNormGradInputs(dy.shape(), x.shape(), mean.shape(), inv_std.shape()));
    AF_ASSIGN_OR_RETURN(Tensor dx, l->AllocateOutput(0, x.shape()));
    AF_ASSIGN_OR_RETURN(Tensor dgamma, l->AllocateOutput(1, Shape{dims.features}));
    AF_ASSIGN_OR_RETURN(Tensor dbeta, l->AllocateOutput(2, Shape{dims.features}));
    AF_ASSIGN_OR_RETURN(
        Tensor scratch,
        AllocateDeviceTensor(l->device, DType::kFloat64,
                             Shape{LayerNormGradScratchDoubles(dims.rows, dims.features)}));
    return Queued(LayerNormGrad(l->device, ElemTypeOf(DTypeOf<T>::value), dims.rows,
                                dims.features, dy.raw_data(), x.raw_data(), mean.raw_data(),
                                inv_std.raw_data(), gamma.raw_data(), dx.raw_data(),
                                dgamma.raw_data(), dbeta.raw_data(),
                                scratch.template data<double>()));
  }
};

// Input: x. Output: Gelu(x), same shape.
template <typename T>
class GeluGpu : public GpuKernel {
 public:
  explicit GeluGpu(const Node& node)
      : GpuKernel(node), approximate_(node.attr<bool>("approximate")) {}

  Status Launch(GpuLaunch* l) override {
    const Tensor& x = l->inputs[0];
    AF_ASSIGN_OR_RETURN(Tensor y, l->AllocateOutput(0, x.shape()));
    return Queued(Gelu(l->device, ElemTypeOf(DTypeOf<T>::value), approximate_, x.raw_data(),
                       y.raw_data(), x.NumElements()));
  }

 private:
  const bool approximate_;
};

// Inputs: dy, x of one shape. Output: dy * Gelu'(x), that shape.
template <typename T>
class GeluGradGpu : public GpuKernel {
 public:
  explicit GeluGradGpu(const Node& node)
      : GpuKernel(node), approximate_(node.attr<bool>("approximate")) {}

  Status Launch(GpuLaunch* l) override {
    const Tensor& dy = l->inputs[0];
    const Tensor& x = l->inputs[1];
    AF_RETURN_IF_ERROR(cpu::CheckGeluGradShapes(dy.shape(), x.shape()));
    AF_ASSIGN_OR_RETURN(Tensor dx, l->AllocateOutput(0, x.shape()));
    return Queued(GeluGrad(l->device, ElemTypeOf(DTypeOf<T>::value), approximate_,
                           dy.raw_data(), x.raw_data(), dx.raw_data(), x.NumElements()));
  }

 private:
  const bool approximate_;
};

const GpuKernelRegistrations<BatchMatMulGpu, float, double> reg_batch_matmul("BatchMatMul");
const GpuKernelRegistrations<LayerNormGpu, float, double> reg_layer_norm("LayerNorm");
const GpuKernelRegistrations<LayerNormGradGpu, float, double> reg_layer_norm_grad(
    "LayerNormGrad");
const GpuKernelRegistrations<GeluGpu, float, double> reg_gelu("Gelu");
const GpuKernelRegistrations<GeluGradGpu, float, double> reg_gelu_grad("GeluGrad");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
