// What the GPU convolution and pooling kernels (conv_kernels.cc, pool_kernels.cc)
// share: the geometry as conv_launch.h takes it, and the reading of a size input
// (input_sizes, filter_sizes, orig_input_shape), whose values a GPU kernel needs on
// the host before it can allocate its output.
//
// Where a size input comes from: a Const (the gradient of a fully known shape) is
// int32 in host memory on every device, and a test or a feed passes host tensors, so
// the values are read at once. A size computed on the CPU at run time (Shape of a
// partially known tensor) reaches a GPU partition through a _Recv, which puts it on
// the device: then its 4 values are copied back and the kernel's work is queued from
// the `after` step, on the executor's thread, once the copy has completed. That work
// is ordered before every later use of the output by the device's single stream; a
// device error in it surfaces at the next completion that the stream reports.
//
// Thread safety: pure functions; the deferred launch owns copies of what it uses.
#ifndef ACTORFLOW_KERNELS_CUDA_WINDOW_KERNEL_UTIL_H_
#define ACTORFLOW_KERNELS_CUDA_WINDOW_KERNEL_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "graph/checked_size.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/cpu/window_geometry.h"
#include "kernels/cuda/conv_launch.h"
#include "kernels/cuda/gpu_kernel.h"

namespace actorflow {
namespace gpu {

inline Status Queued(const GpuError& e) { return e.ok() ? Status::OK() : Internal(e.message()); }

inline WindowShape ToWindowShape(const cpu::WindowGeometry& g) {
  WindowShape w;
  w.batch = g.batch;
  w.in_h = g.in_h;
  w.in_w = g.in_w;
  w.channels = g.channels;
  w.k_h = g.k_h;
  w.k_w = g.k_w;
  w.stride_h = g.stride_h;
  w.stride_w = g.stride_w;
  w.out_h = g.out_h;
  w.out_w = g.out_w;
  w.pad_top = g.pad_top;
  w.pad_left = g.pad_left;
  return w;
}

// InvalidArgument when an output of `shape` would have more elements or bytes than
// int64 can count (huge dims around an empty dim), as the CPU kernels refuse it.
inline Status CheckOutputSize(const GpuLaunch& l, int i, const Shape& shape) {
  StatusOr<int64_t> bytes = CheckedByteSize(l.ctx->node().output_dtype(i), shape);
  if (!bytes.ok()) {
    return InvalidArgument("output " + std::to_string(i) + ": " + bytes.status().message());
  }
  return Status::OK();
}

// Calls launch(l, sizes) with the 4 dims held by input i (int32 or int64, [4]): at
// once for a host tensor, from l->after for a device one (see the top). The kernel
// must list input i as a ShapeOnlyInput, so that a host tensor stays on the host.
inline Status WithHostSizes(GpuLaunch* l, int i, const std::string& what,
                            std::function<Status(GpuLaunch*, const Shape&)> launch) {
  const Tensor& sizes = l->inputs[i];
  if (!sizes.IsOnDevice()) {
    AF_ASSIGN_OR_RETURN(Shape shape, cpu::SizesFromTensor(sizes, what));
    return launch(l, shape);
  }
  if (sizes.rank() != 1 || sizes.NumElements() != 4) {
    return InvalidArgument(what + " must be an int32 or int64 vector of 4 elements, got " +
                           sizes.shape().ToString());
  }
  AF_ASSIGN_OR_RETURN(Tensor host, QueueCopyToHost(l->device, sizes));
  GpuLaunch deferred;
  deferred.ctx = l->ctx;
  deferred.device = l->device;
  deferred.inputs = l->inputs;
  l->after = [deferred, host, what, launch]() mutable {
    KernelContext* ctx = deferred.ctx;
    Status status = Queued(MakeCurrent(deferred.device));
    if (status.ok()) {
      StatusOr<Shape> shape = cpu::SizesFromTensor(host, what);
      status = shape.ok() ? launch(&deferred, *shape) : shape.status();
    }
    if (!status.ok()) ctx->SetStatus(status.WithContext(ctx->node().Describe()));
  };
  return Status::OK();
}

}  // namespace gpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CUDA_WINDOW_KERNEL_UTIL_H_
