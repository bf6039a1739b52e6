// Kernels of the queue ops (graph/ops_queue.cc). All are
// asynchronous: they ask the task's QueueService (KernelContext::queues(), the
// device actor) and complete when it answers, so a full or empty queue never holds
// a thread. Without a QueueService (DirectSession) they fail with
// FailedPrecondition.
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "graph/types.h"
#include "kernels/cpu/queue_kernel_util.h"
#include "kernels/kernel.h"
#include "kernels/queue_service.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

// FIFOQueue / RandomShuffleQueue: creates the queue, or checks the existing one.
class CreateQueueKernel : public Kernel {
 public:
  explicit CreateQueueKernel(const Node& node) : Kernel(node) {
    spec_.kind = node.op() == "RandomShuffleQueue" ? QueueSpec::Kind::kRandomShuffle
                                                   : QueueSpec::Kind::kFifo;
    spec_.container = node.attr<std::string>("container");
    spec_.name = node.attr<std::string>("shared_name");
    private_ = spec_.name.empty();
    if (private_) spec_.name = node.name();
    spec_.capacity = node.attr<int64_t>("capacity");
    if (spec_.kind == QueueSpec::Kind::kRandomShuffle) {
      spec_.min_after_dequeue = node.attr<int64_t>("min_after_dequeue");
      spec_.seed = node.attr<int64_t>("seed");
    }
    parsed_ = ParseComponentAttrs(node, "component_types", &spec_.dtypes, &spec_.shapes);
  }
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (!parsed_.ok()) return FailAndDone(ctx, parsed_, done);
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    ctx->queues()->EnsureQueue(ctx->step_id(), SpecInSession(spec_, private_, *ctx),
                               DoneWithStatus(ctx, std::move(done)));
  }

 private:
  QueueSpec spec_;
  bool private_ = false;  // no shared_name: the session's own queue
  Status parsed_;
};

class EnqueueKernel : public Kernel {
 public:
  explicit EnqueueKernel(const Node& node)
      : Kernel(node),
        queue_(QueueRefOf(node)),
        many_(node.op() == "QueueEnqueueMany"),
        timeout_ms_(node.attr<int64_t>("timeout_ms")) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    std::vector<Tensor> components;
    components.reserve(ctx->num_inputs());
    for (int i = 0; i < ctx->num_inputs(); ++i) components.push_back(ctx->input(i));
    ctx->queues()->Enqueue(ctx->step_id(), InSession(queue_, *ctx), std::move(components), many_,
                           timeout_ms_, DoneWithStatus(ctx, std::move(done)));
  }

 private:
  QueueRef queue_;
  bool many_;
  int64_t timeout_ms_;
};

class DequeueKernel : public Kernel {
 public:
  explicit DequeueKernel(const Node& node)
      : Kernel(node),
        queue_(QueueRefOf(node)),
        n_(node.op() == "QueueDequeueMany" ? node.attr<int64_t>("n") : -1),
        timeout_ms_(node.attr<int64_t>("timeout_ms")) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    ctx->queues()->Dequeue(
        ctx->step_id(), InSession(queue_, *ctx), n_, timeout_ms_,
        [ctx, done](const Status& s, std::vector<Tensor> components) {
          if (!s.ok()) {
            ctx->SetStatus(s.WithContext(ctx->node().Describe()));
          } else {
            SetComponentOutputs(ctx, std::move(components));
          }
          done();
        });
  }

 private:
  QueueRef queue_;
  int64_t n_;
  int64_t timeout_ms_;
};

class CloseKernel : public Kernel {
 public:
  explicit CloseKernel(const Node& node)
      : Kernel(node),
        queue_(QueueRefOf(node)),
        cancel_(node.attr<bool>("cancel_pending_enqueues")) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    ctx->queues()->Close(ctx->step_id(), InSession(queue_, *ctx), cancel_,
                         DoneWithStatus(ctx, std::move(done)));
  }

 private:
  QueueRef queue_;
  bool cancel_;
};

class QueueSizeKernel : public Kernel {
 public:
  explicit QueueSizeKernel(const Node& node) : Kernel(node), queue_(QueueRefOf(node)) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    ctx->queues()->Size(ctx->step_id(), InSession(queue_, *ctx),
                        [ctx, done](const Status& s, int64_t size) {
                          if (!s.ok()) {
                            ctx->SetStatus(s.WithContext(ctx->node().Describe()));
                          } else {
                            ctx->set_output(0, Tensor::Scalar(static_cast<int32_t>(size)));
                          }
                          done();
                        });
  }

 private:
  QueueRef queue_;
};

[[maybe_unused]] const bool kQueueKernelsRegistered = [] {
  // Ops with neither inputs nor outputs select their kernel with float32.
  for (const char* op : {"FIFOQueue", "RandomShuffleQueue"}) {
    KernelRegistration r(op, kDeviceCpu, DType::kFloat32, MakeKernelFactory<CreateQueueKernel>());
  }
  KernelRegistration close("QueueClose", kDeviceCpu, DType::kFloat32,
                           MakeKernelFactory<CloseKernel>());
  KernelRegistration size("QueueSize", kDeviceCpu, DType::kInt32,
                          MakeKernelFactory<QueueSizeKernel>());
  // Enqueue selects by its first component's dtype, Dequeue by its first output's.
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                      DType::kBool}) {
    for (const char* op : {"QueueEnqueue", "QueueEnqueueMany"}) {
      KernelRegistration r(op, kDeviceCpu, dtype, MakeKernelFactory<EnqueueKernel>());
    }
    for (const char* op : {"QueueDequeue", "QueueDequeueMany"}) {
      KernelRegistration r(op, kDeviceCpu, dtype, MakeKernelFactory<DequeueKernel>());
    }
  }
  return true;
}();

}  // namespace
}  // namespace actorflow
