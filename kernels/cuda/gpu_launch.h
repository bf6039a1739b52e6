// The GPU math of the kernels in kernels/cuda, without CUDA types: each function
// checks nothing about shapes (the kernel classes did that), queues its work on the
// device's stream and returns at once. Pointers are device memory unless a comment
// says otherwise; scalars that a graph computes (a learning rate) stay on the device
// and are passed as pointers to one element.
//
// Element types: float32 and float64 for the math (there are no integer kernels, as
// in TensorFlow); Cast, Gather and Fill also handle int32, int64 and bool.
//
// Thread safety: as gpu_device.h: any thread, work ordered by the device's stream.
#ifndef ACTORFLOW_KERNELS_CUDA_GPU_LAUNCH_H_
#define ACTORFLOW_KERNELS_CUDA_GPU_LAUNCH_H_

#include <cstdint>

#include "kernels/cuda/gpu_device.h"

namespace actorflow {
namespace gpu {

enum class ElemType { kFloat32, kFloat64, kInt32, kInt64, kBool };

inline constexpr int kMaxDims = 8;

// Maps a row-major linear index over `dims` to the element offset
// sum(index_k * strides_k): a broadcast operand has stride 0 along the dims it is
// broadcast in. rank 0 maps every index to offset 0.
struct StridedIndex {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// y[i] = op(x[i]) for i < n (float types).
enum class UnaryOp { kNeg, kExp, kLog, kSqrt, kSquare, kAbs, kRelu, kSigmoid, kTanh };
GpuError Unary(GpuDevice* device, UnaryOp op, ElemType type, const void* x, void* y, int64_t n);

// z[i] = op(x[x_index(i)], y[y_index(i)]) for i < n (float types). Both indexes walk
// the output's dims. Gradient ops take (dy, x) for ReluGrad and (y, dy) for
// SigmoidGrad and TanhGrad, as the op set defines them.
enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kPow, kMaximum, kMinimum, kReluGrad, kSigmoidGrad, kTanhGrad
};
GpuError Binary(GpuDevice* device, BinaryOp op, ElemType type, const void* x,
                const StridedIndex& x_index, const void* y, const StridedIndex& y_index,
                void* z, int64_t n);

// y[i] = x[index(i)] for i < n: a broadcast or a strided copy (every type).
GpuError Gather(GpuDevice* device, ElemType type, const void* x, const StridedIndex& index,
                void* y, int64_t n);

// y[i] = value for i < n (every type; converted like a static_cast, bool is != 0).
GpuError Fill(GpuDevice* device, ElemType type, void* y, int64_t n, double value);

// y[i] = static_cast<to>(x[i]) for i < n, `from` a float type; to bool is x != 0.
GpuError Cast(GpuDevice* device, ElemType from, const void* x, ElemType to, void* y, int64_t n);

// y[o] = reduction over r < reduced_count of x[kept(o) + reduced(r)] for o < out_count
// (float types). Empty reductions give 0 (Sum), NaN (Mean), -inf (Max), +inf (Min).
enum class ReduceOp { kSum, kMean, kMax, kMin };
GpuError Reduce(GpuDevice* device, ReduceOp op, ElemType type, const void* x,
                const StridedIndex& kept, const StridedIndex& reduced, int64_t reduced_count,
                void* y, int64_t out_count);

// out [rows, cols] = softmax (or log-softmax) of logits [rows, cols] along each row,
// shifted by the row's maximum.
GpuError Softmax(GpuDevice* device, ElemType type, bool log, const void* logits, void* out,
                 int64_t rows, int64_t cols);

// logits, labels [rows, cols] -> loss [rows] = -sum_j labels * log_softmax(logits),
// backprop [rows, cols] = softmax(logits) - labels.
GpuError SoftmaxCrossEntropy(GpuDevice* device, ElemType type, const void* logits,
                             const void* labels, void* loss, void* backprop, int64_t rows,
                             int64_t cols);

// logits [rows, cols], labels [rows] of label_type (int32 or int64) -> loss [rows],
// backprop [rows, cols] = softmax - one_hot(label). bad_label points to two device
// int64s that this call sets: [0] = the first row whose label is outside [0, cols)
// (or -1 when none), [1] = that label.
GpuError SparseSoftmaxCrossEntropy(GpuDevice* device, ElemType type, const void* logits,
                                   const void* labels, ElemType label_type, void* loss,
                                   void* backprop, int64_t rows, int64_t cols,
                                   int64_t* bad_label);

// c [m, n] = op(a) op(b), row-major, through cuBLAS; a is [m, k] ([k, m] when
// transpose_a), b is [k, n] ([n, k] when transpose_b). Float types.
GpuError MatMul(GpuDevice* device, ElemType type, bool transpose_a, bool transpose_b,
                int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c);

// c[i] = op(a[i]) op(b[i]) for i < count through cuBLAS's strided-batched gemm, each
// product as MatMul's: a[i] starts stride_a elements after a[i - 1] (likewise b), and
// the outputs are consecutive [m, n] matrices. A stride of 0 multiplies the same
// matrix into every product (a broadcast operand). Float types.
GpuError StridedBatchedMatMul(GpuDevice* device, ElemType type, bool transpose_a,
                              bool transpose_b, int64_t m, int64_t n, int64_t k, const void* a,
                              int64_t stride_a, const void* b, int64_t stride_b, void* c,
                              int64_t count);

// The optimizers' updates, in place over n elements (float types), with the same
// arithmetic as kernels/cpu/training_kernels.cc. Scalars are device pointers.
GpuError ApplyGradientDescent(GpuDevice* device, ElemType type, void* var, const void* alpha,
                              const void* delta, int64_t n);
GpuError ApplyMomentum(GpuDevice* device, ElemType type, void* var, void* accum, const void* lr,
                       const void* grad, const void* momentum, bool use_nesterov, int64_t n);
GpuError ApplyAdam(GpuDevice* device, ElemType type, void* var, void* m, void* v,
                   const void* beta1_power, const void* beta2_power, const void* lr,
                   const void* beta1, const void* beta2, const void* epsilon, const void* grad,
                   int64_t n);
GpuError ApplyAdagrad(GpuDevice* device, ElemType type, void* var, void* accum, const void* lr,
                      const void* grad, int64_t n);

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_GPU_LAUNCH_H_
