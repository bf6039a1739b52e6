// GPU kernels of the stateless sparse ops (graph/sparse_ops.h): Gather and
// UnsortedSegmentSum, float32 and float64, with int32 or int64 ids, checked and
// worded as the CPU kernels (kernels/cpu/sparse_kernels.cc). The math is sparse.cu's.
//
// Ids are checked on the device; an id outside the table fails the kernel after the
// stream has run (sparse_kernel_util.h) and is never used as an address.
// UnsortedSegmentSum adds repeated ids' rows in input order, as the CPU kernel.
//
// Unique, DynamicStitch and PartitionRowIds stay CPU-only: their output sizes depend on
// the ids' values, and soft placement runs them on the CPU next to a GPU graph.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/row_ids.h"
#include "kernels/cuda/sparse_kernel_util.h"

namespace actorflow {
namespace gpu {
namespace {

// Inputs: params [N, d...], indices [i...] (int32/int64). Output: [i..., d...].
template <typename T>
class GatherGpuKernel : public GpuKernel {
 public:
  using GpuKernel::GpuKernel;
  Status Launch(GpuLaunch* l) override {
    const Tensor& params = l->inputs[0];
    const Tensor& indices = l->inputs[1];
    if (params.rank() < 1) {
      return InvalidArgument("params must have rank >= 1, got " + params.shape().ToString());
    }
    AF_ASSIGN_OR_RETURN(DeviceRowIds ids, RowIdsOf(indices, params.dim(0), "indices"));
    std::vector<int64_t> dims = indices.shape().dims();
    dims.insert(dims.end(), params.shape().dims().begin() + 1, params.shape().dims().end());
    AF_ASSIGN_OR_RETURN(Tensor out, l->AllocateCheckedOutput(0, Shape(std::move(dims))));
    AF_ASSIGN_OR_RETURN(Tensor bad_id, AllocateBadId(l->device));
    AF_RETURN_IF_ERROR(FromLaunch(GatherRows(l->device, FloatElemType<T>(), params.raw_data(),
                                             cpu::RowSize(params.shape()), ids, out.raw_data(),
                                             bad_id.data<int64_t>())));
    AF_ASSIGN_OR_RETURN(l->after,
                        CheckBadIdLater(l->ctx, l->device, bad_id, "indices", params.dim(0)));
    return Status::OK();
  }
};

// Inputs: data [ids..., d...], segment_ids [ids...] (int32/int64), num_segments (int
// scalar). Output: [num_segments, d...]. num_segments sizes the output, so the host
// needs its value: when it lives on the device (a _Recv on the GPU put it there), the
// kernel first waits, without blocking, for its copy to the host (a stream callback
// resumes it on the executor's thread), then launches.
template <typename T>
class UnsortedSegmentSumGpuKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const override { return true; }
  void Compute(KernelContext* ctx) override {
    ctx->SetStatus(Internal(ctx->node().Describe() + ": a GPU kernel was run synchronously"));
  }

  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->scheduler() == nullptr) {
      ctx->Fail(Code::kFailedPrecondition,
                "GPU kernels need a runtime with an AsyncScheduler (the actor runtime)");
      return done();
    }
    StatusOr<GpuDevice*> device = DeviceFromName(ctx->device_name());
    Status status = device.ok() ? FromLaunch(MakeCurrent(*device)) : device.status();
    const Tensor& count = ctx->input(2);
    if (status.ok() && count.IsOnDevice()) {
      StatusOr<Tensor> host = QueueCopyToHost(*device, count);
      if (host.ok()) {
        GpuDevice* gpu = *device;
        Tensor count_on_host = std::move(host).value();
        return FinishWhenQueuedWorkDone(ctx, gpu, nullptr, [ctx, gpu, count_on_host, done] {
          if (!ctx->status().ok()) return done();
          Finish(ctx, gpu, LaunchWithCount(ctx, gpu, count_on_host), done);
        });
      }
      status = host.status();
    }
    if (!status.ok()) {
      ctx->SetStatus(status.WithContext(ctx->node().Describe()));
      return done();
    }
    Finish(ctx, *device, LaunchWithCount(ctx, *device, count), std::move(done));
  }

 private:
  // After a successful launch: done once the stream has run it, preceded by the id
  // check; else fail naming the node and call done at once.
  static void Finish(KernelContext* ctx, GpuDevice* device,
                     StatusOr<std::function<void()>> check_ids, std::function<void()> done) {
    if (!check_ids.ok()) {
      ctx->SetStatus(check_ids.status().WithContext(ctx->node().Describe()));
      return done();
    }
    FinishWhenQueuedWorkDone(ctx, device, std::move(check_ids).value(), std::move(done));
  }

  // Checks the inputs with `count` (host memory), queues the sum and returns the id
  // check to run after it.
  static StatusOr<std::function<void()>> LaunchWithCount(KernelContext* ctx, GpuDevice* device,
                                                         const Tensor& count) {
    AF_RETURN_IF_ERROR(FromLaunch(MakeCurrent(device)));  // may resume on another thread
    if (count.rank() != 0) {
      return InvalidArgument("num_segments must be a scalar, got " + count.shape().ToString());
    }
    const int64_t segments = cpu::ReadRowIds(count)[0];
    if (segments < 0) {
      return InvalidArgument("num_segments is " + std::to_string(segments) +
                             ": it must be >= 0");
    }
    AF_ASSIGN_OR_RETURN(Tensor data, OnDevice(device, ctx->input(0)));
    AF_ASSIGN_OR_RETURN(Tensor segment_ids, OnDevice(device, ctx->input(1)));
    const Shape& ids_shape = segment_ids.shape();
    bool prefix = ids_shape.rank() <= data.rank();
    for (int i = 0; prefix && i < ids_shape.rank(); ++i) prefix = ids_shape.dim(i) == data.dim(i);
    if (!prefix) {
      return InvalidArgument("segment_ids " + ids_shape.ToString() +
                             " must be a prefix of data's shape " + data.shape().ToString());
    }
    AF_ASSIGN_OR_RETURN(DeviceRowIds ids, RowIdsOf(segment_ids, segments, "segment_ids"));
    std::vector<int64_t> dims = {segments};
    dims.insert(dims.end(), data.shape().dims().begin() + ids_shape.rank(),
                data.shape().dims().end());
    int64_t row = 1;
    for (int i = ids_shape.rank(); i < data.rank(); ++i) row *= data.dim(i);
    GpuLaunch launch;
    launch.ctx = ctx;
    launch.device = device;
    AF_ASSIGN_OR_RETURN(Tensor out, launch.AllocateCheckedOutput(0, Shape(std::move(dims))));
    AF_ASSIGN_OR_RETURN(Tensor bad_id, AllocateBadId(device));
    AF_RETURN_IF_ERROR(FromLaunch(UnsortedSegmentSum(device, FloatElemType<T>(), data.raw_data(),
                                                     row, ids, out.raw_data(),
                                                     bad_id.data<int64_t>())));
    return CheckBadIdLater(ctx, device, bad_id, "segment_ids", segments);
  }

  static StatusOr<Tensor> OnDevice(GpuDevice* device, const Tensor& t) {
    if (t.IsOnDevice()) return t;
    return CopyToDevice(device, t);
  }
};

const GpuKernelRegistrations<GatherGpuKernel, float, double> reg_gather("Gather");
const GpuKernelRegistrations<UnsortedSegmentSumGpuKernel, float, double> reg_segment_sum(
    "UnsortedSegmentSum");

}  // namespace
}  // namespace gpu
}  // namespace actorflow
