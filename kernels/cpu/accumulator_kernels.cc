// Kernels of the ConditionalAccumulator ops (graph/ops_accumulator.cc). All are
// asynchronous: they ask the task's QueueService (KernelContext::queues(), the
// device actor), which hosts accumulators beside queues, and complete when it
// answers, so a take waiting for gradients never holds a thread. Without a
// QueueService (DirectSession) they fail with FailedPrecondition.
#include <functional>
#include <string>
#include <utility>

#include "graph/types.h"
#include "kernels/cpu/queue_kernel_util.h"
#include "kernels/kernel.h"
#include "kernels/queue_service.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

// The accumulator's shape from the node's optional "shape" attr.
Shape ShapeAttr(const Node& node) {
  auto it = node.attrs().find("shape");
  return it == node.attrs().end() ? Shape::UnknownRank() : it->second.Get<Shape>();
}

// Input i as an integer scalar of dtype T; InvalidArgument naming `what` otherwise.
template <typename T>
StatusOr<T> ScalarInput(const KernelContext& ctx, int i, const std::string& what) {
  const Tensor& t = ctx.input(i);
  if (!t.IsInitialized() || t.dtype() != DTypeOf<T>::value || t.rank() != 0) {
    return InvalidArgument(what + " must be a " + DTypeName(DTypeOf<T>::value) +
                           " scalar, got " + t.DebugString());
  }
  return t.data<T>()[0];
}

// ConditionalAccumulator: creates the accumulator, or checks the existing one.
class CreateAccumulatorKernel : public Kernel {
 public:
  explicit CreateAccumulatorKernel(const Node& node) : Kernel(node) {
    spec_.kind = QueueSpec::Kind::kConditionalAccumulator;
    spec_.container = node.attr<std::string>("container");
    spec_.name = node.attr<std::string>("shared_name");
    private_ = spec_.name.empty();
    if (private_) spec_.name = node.name();
    spec_.dtypes = {node.attr<DType>("dtype")};
    spec_.shapes = {ShapeAttr(node)};
  }
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    ctx->queues()->EnsureQueue(ctx->step_id(), SpecInSession(spec_, private_, *ctx),
                               DoneWithStatus(ctx, std::move(done)));
  }

 private:
  QueueSpec spec_;
  bool private_ = false;  // no shared_name: the session's own accumulator
};

class ApplyGradientKernel : public Kernel {
 public:
  explicit ApplyGradientKernel(const Node& node) : Kernel(node), accumulator_(QueueRefOf(node)) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    StatusOr<int64_t> local_step = ScalarInput<int64_t>(*ctx, 0, "input 0 (local_step)");
    if (!local_step.ok()) return FailAndDone(ctx, local_step.status(), done);
    ctx->queues()->AccumulatorApplyGradient(ctx->step_id(), InSession(accumulator_, *ctx),
                                            *local_step, ctx->input(1),
                                            DoneWithStatus(ctx, std::move(done)));
  }

 private:
  QueueRef accumulator_;
};

class TakeGradientKernel : public Kernel {
 public:
  explicit TakeGradientKernel(const Node& node)
      : Kernel(node),
        accumulator_(QueueRefOf(node)),
        timeout_ms_(node.attr<int64_t>("timeout_ms")) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    StatusOr<int32_t> n = ScalarInput<int32_t>(*ctx, 0, "input 0 (num_required)");
    if (!n.ok()) return FailAndDone(ctx, n.status(), done);
    if (*n < 1) {
      return FailAndDone(ctx,
                         InvalidArgument("input 0 (num_required) is " + std::to_string(*n) +
                                         ": it must be >= 1"),
                         done);
    }
    ctx->queues()->AccumulatorTakeGradient(
        ctx->step_id(), InSession(accumulator_, *ctx), *n, timeout_ms_,
        [ctx, done](const Status& s, Tensor average) {
          const Node& n = ctx->node();
          if (!s.ok()) {
            ctx->SetStatus(s.WithContext(n.Describe()));
          } else if (average.dtype() != n.output_dtype(0) ||
                     !n.output_shape(0).IsCompatibleWith(average.shape())) {
            // Another graph's node made the accumulator with a shape this one's
            // inference did not know.
            ctx->Fail(Code::kInvalidArgument,
                      "the accumulator's average is " + average.DebugString() +
                          " but the node declares " + DTypeName(n.output_dtype(0)) + " " +
                          n.output_shape(0).ToString() +
                          ": build it with the accumulator's dtype and shape");
          } else {
            ctx->set_output(0, std::move(average));
          }
          done();
        });
  }

 private:
  QueueRef accumulator_;
  int64_t timeout_ms_;
};

class SetGlobalStepKernel : public Kernel {
 public:
  explicit SetGlobalStepKernel(const Node& node) : Kernel(node), accumulator_(QueueRefOf(node)) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    StatusOr<int64_t> step = ScalarInput<int64_t>(*ctx, 0, "input 0 (new_global_step)");
    if (!step.ok()) return FailAndDone(ctx, step.status(), done);
    ctx->queues()->AccumulatorSetGlobalStep(ctx->step_id(), InSession(accumulator_, *ctx), *step,
                                            DoneWithStatus(ctx, std::move(done)));
  }

 private:
  QueueRef accumulator_;
};

// AccumulatorNumAccumulated (int32 []) and AccumulatorNumDropped (int64 []).
class CountKernel : public Kernel {
 public:
  explicit CountKernel(const Node& node)
      : Kernel(node),
        accumulator_(QueueRefOf(node)),
        dropped_(node.op() == "AccumulatorNumDropped") {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    const bool dropped = dropped_;
    ctx->queues()->ReadAccumulatorCounts(
        ctx->step_id(), InSession(accumulator_, *ctx),
        [ctx, done, dropped](const Status& s, const AccumulatorCounts& counts) {
          if (!s.ok()) {
            ctx->SetStatus(s.WithContext(ctx->node().Describe()));
          } else if (dropped) {
            ctx->set_output(0, Tensor::Scalar(counts.num_dropped));
          } else {
            ctx->set_output(0, Tensor::Scalar(static_cast<int32_t>(counts.num_accumulated)));
          }
          done();
        });
  }

 private:
  QueueRef accumulator_;
  bool dropped_;
};

[[maybe_unused]] const bool kAccumulatorKernelsRegistered = [] {
  // CPU only, like the queue ops: the placer puts an accumulator pinned to a task with
  // a GPU on that task's CPU. Each op's kernel dtype is its first input's (or its
  // first output's; float32 without either), which inference fixes.
  KernelRegistration create("ConditionalAccumulator", kDeviceCpu, DType::kFloat32,
                            MakeKernelFactory<CreateAccumulatorKernel>());
  KernelRegistration apply("AccumulatorApplyGradient", kDeviceCpu, DType::kInt64,
                           MakeKernelFactory<ApplyGradientKernel>());
  KernelRegistration take("AccumulatorTakeGradient", kDeviceCpu, DType::kInt32,
                          MakeKernelFactory<TakeGradientKernel>());
  KernelRegistration set_step("AccumulatorSetGlobalStep", kDeviceCpu, DType::kInt64,
                              MakeKernelFactory<SetGlobalStepKernel>());
  KernelRegistration num("AccumulatorNumAccumulated", kDeviceCpu, DType::kInt32,
                         MakeKernelFactory<CountKernel>());
  KernelRegistration dropped("AccumulatorNumDropped", kDeviceCpu, DType::kInt64,
                             MakeKernelFactory<CountKernel>());
  return true;
}();

}  // namespace
}  // namespace actorflow
