#include "kernels/cuda/gpu_kernel.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "graph/checked_size.h"

namespace actorflow {
namespace gpu {
namespace {

Status FromGpu(const GpuError& e) {
  return e.ok() ? Status::OK() : Internal(e.message());
}

}  // namespace

ElemType ElemTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return ElemType::kFloat32;
    case DType::kFloat64: return ElemType::kFloat64;
    case DType::kInt32: return ElemType::kInt32;
    case DType::kInt64: return ElemType::kInt64;
    case DType::kBool: return ElemType::kBool;
  }
  return ElemType::kFloat32;
}

StatusOr<GpuDevice*> DeviceFromName(const std::string& device_name) {
  const size_t at = device_name.rfind("GPU:");
  if (at == std::string::npos || at + 4 >= device_name.size() ||
      device_name.find_first_not_of("0123456789", at + 4) != std::string::npos ||
      device_name.size() - (at + 4) > 4) {
    return FailedPrecondition("a GPU kernel runs on a device that is not a GPU: '" + device_name +
                              "'");
  }
  const int ordinal = std::stoi(device_name.substr(at + 4));
  GpuError error;
  GpuDevice* device = GetGpuDevice(ordinal, &error);
  if (device == nullptr) return Unavailable("device " + device_name + ": " + error.message());
  return device;
}

StatusOr<Tensor> AllocateDeviceTensor(GpuDevice* device, DType dtype, const Shape& shape) {
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  void* block = nullptr;
  GpuError e = AllocateDevice(device, bytes, &block);
  if (!e.ok()) return ResourceExhausted(e.message());
  auto buffer = std::make_shared<TensorBuffer>(
      block, bytes, [device, bytes](void* p) { FreeDevice(device, p, bytes); },
      MemoryKind::kDevice);
  return Tensor(dtype, shape, std::move(buffer));
}

StatusOr<Tensor> CopyToDevice(GpuDevice* device, const Tensor& host) {
  AF_ASSIGN_OR_RETURN(Tensor out, AllocateDeviceTensor(device, host.dtype(), host.shape()));
  const size_t bytes = host.TotalBytes();
  if (bytes == 0) return out;
  void* pinned = nullptr;
  GpuError e = AllocatePinned(device, bytes, &pinned);
  if (!e.ok()) return ResourceExhausted(e.message());
  std::memcpy(pinned, host.raw_data(), bytes);
  e = CopyHostToDevice(device, out.raw_data(), pinned, bytes);
  // Back to the pool once the copy has run (or at once if it was never queued).
  if (e.ok()) {
    FreePinnedAfterQueuedWork(device, pinned, bytes);
  } else {
    FreePinned(device, pinned, bytes);
  }
  AF_RETURN_IF_ERROR(FromGpu(e));
  return out;
}

StatusOr<Tensor> QueueCopyToHost(GpuDevice* device, const Tensor& device_tensor) {
  const size_t bytes = device_tensor.TotalBytes();
  void* pinned = nullptr;
  GpuError e = AllocatePinned(device, bytes, &pinned);
  if (!e.ok()) return ResourceExhausted(e.message());
  // Whoever drops the host tensor last may do so before the copy ran (a failed
  // step): the block is reused only after the stream has passed this point.
  auto buffer = std::make_shared<TensorBuffer>(
      pinned, bytes, [device, bytes](void* p) { FreePinnedAfterQueuedWork(device, p, bytes); },
      MemoryKind::kHost);
  Tensor host(device_tensor.dtype(), device_tensor.shape(), std::move(buffer));
  AF_RETURN_IF_ERROR(FromGpu(CopyDeviceToHost(device, pinned, device_tensor.raw_data(), bytes)));
  return host;
}

Status MakeExclusiveOnDevice(GpuDevice* device, Tensor* t) {
  if (!t->IsOnDevice()) {
    AF_ASSIGN_OR_RETURN(*t, CopyToDevice(device, *t));
    return Status::OK();
  }
  if (t->RefCountIsOne()) return Status::OK();
  AF_ASSIGN_OR_RETURN(Tensor copy, AllocateDeviceTensor(device, t->dtype(), t->shape()));
  AF_RETURN_IF_ERROR(
      FromGpu(CopyDeviceToDevice(device, copy.raw_data(), t->raw_data(), t->TotalBytes())));
  *t = std::move(copy);
  return Status::OK();
}

StatusOr<StridedIndex> ContiguousIndex(const Shape& shape) {
  if (shape.rank() > kMaxDims) {
    return InvalidArgument("shape " + shape.ToString() + " has rank " +
                           std::to_string(shape.rank()) + "; GPU kernels support rank <= " +
                           std::to_string(kMaxDims));
  }
  StridedIndex index;
  index.rank = shape.rank();
  int64_t stride = 1;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index.dims[d] = shape.dim(d);
    index.strides[d] = stride;
    stride *= shape.dim(d);
  }
  return index;
}

StatusOr<Tensor> GpuLaunch::AllocateOutput(int i, const Shape& shape) {
  AF_ASSIGN_OR_RETURN(Tensor t, AllocateDeviceTensor(device, ctx->node().output_dtype(i), shape));
  ctx->set_output(i, t);
  return t;
}

StatusOr<Tensor> GpuLaunch::AllocateCheckedOutput(int i, const Shape& shape) {
  StatusOr<int64_t> bytes = CheckedByteSize(ctx->node().output_dtype(i), shape);
  if (!bytes.ok()) {
    return InvalidArgument("output " + std::to_string(i) + ": " + bytes.status().message());
  }
  return AllocateOutput(i, shape);
}

void FinishWhenQueuedWorkDone(KernelContext* ctx, GpuDevice* device, std::function<void()> after,
                              std::function<void()> done) {
  AsyncScheduler* scheduler = ctx->scheduler();
  // Shared between the stream callback and the posted continuation; both only move.
  auto finish = std::make_shared<std::pair<std::function<void()>, std::function<void()>>>(
      std::move(after), std::move(done));
  GpuError queued = WhenQueuedWorkDone(device, [ctx, scheduler, finish](const GpuError& e) {
    // A CUDA thread: no CUDA calls here, only the hand-over.
    scheduler->Post([ctx, finish, e] {
      if (!e.ok()) {
        ctx->SetStatus(Internal(ctx->node().Describe() + ": " + e.message()));
      } else if (finish->first) {
        finish->first();
      }
      finish->second();
    });
  });
  if (!queued.ok()) {
    ctx->SetStatus(Internal(ctx->node().Describe() + ": " + queued.message()));
    finish->second();
  }
}

void GpuKernel::Compute(KernelContext* ctx) {
  ctx->SetStatus(Internal(ctx->node().Describe() + ": a GPU kernel was run synchronously"));
}

void GpuKernel::ComputeAsync(KernelContext* ctx, std::function<void()> done) {
  if (ctx->scheduler() == nullptr) {
    ctx->Fail(Code::kFailedPrecondition,
              "GPU kernels need a runtime with an AsyncScheduler (the actor runtime)");
    return done();
  }
  auto device = DeviceFromName(ctx->device_name());
  if (!device.ok()) {
    ctx->SetStatus(device.status().WithContext(ctx->node().Describe()));
    return done();
  }
  GpuLaunch launch;
  launch.ctx = ctx;
  launch.device = *device;
  Status status = FromGpu(MakeCurrent(*device));
  for (int i = 0; status.ok() && i < ctx->num_inputs(); ++i) {
    const Tensor& in = ctx->input(i);
    if (!in.IsInitialized() || in.IsOnDevice() || ShapeOnlyInput(i)) {
      launch.inputs.push_back(in);
      continue;
    }
    auto staged = CopyToDevice(*device, in);
    status = staged.status();
    if (status.ok()) launch.inputs.push_back(std::move(staged).value());
  }
  if (status.ok()) status = Launch(&launch);
  if (!status.ok()) {
    const std::string prefix = ctx->node().Describe();
    ctx->SetStatus(status.message().rfind(prefix, 0) == 0
                       ? status
                       : Status(status.code(), prefix + ": " + status.message()));
    return done();
  }
  FinishWhenQueuedWorkDone(ctx, *device, std::move(launch.after), std::move(done));
}

}  // namespace gpu
}  // namespace actorflow
