// Test-only ops and kernels for steps that wait on purpose, so tests of deadlines,
// aborts and parallelism need no sleeps:
//
// TestDelay(x; delay_ms): returns x after delay_ms, asynchronously (through the
//   step's AsyncScheduler; the executor's thread is never blocked).
// TestBarrier(x; barrier, parties, timeout_ms): returns x once `parties` kernels
//   of the same barrier name are inside Compute at the same time. It blocks its
//   thread (bounded by timeout_ms, then DeadlineExceeded): that is the point, it
//   proves that two devices run at once, since one thread can never satisfy it.
//
// TestNotify(x; name): returns x and counts one arrival for `name`, which a test
//   thread can wait for (kernels/test_ops.h): "the step has reached this node".
//
// Linked only into tests (testonly, alwayslink).

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

#include "graph/op_registry.h"
#include "graph/types.h"
#include "kernels/kernel.h"
#include "kernels/test_ops.h"

namespace actorflow {
namespace {

Status SameAsInput(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

const OpRegistration kDelayOp(OpDef{
    "TestDelay", 1, 1, {}, 1, {{"delay_ms", AttrType::kInt, AttrValue(int64_t{0})}}, true,
    SameAsInput});
const OpRegistration kBarrierOp(OpDef{"TestBarrier",
                                      1,
                                      1,
                                      {},
                                      1,
                                      {{"barrier", AttrType::kString, std::nullopt},
                                       {"parties", AttrType::kInt, AttrValue(int64_t{2})},
                                       {"timeout_ms", AttrType::kInt, AttrValue(int64_t{5000})}},
                                      true,
                                      SameAsInput});

const OpRegistration kNotifyOp(OpDef{"TestNotify", 1, 1, {}, 1,
                                     {{"name", AttrType::kString, std::nullopt}}, true,
                                     SameAsInput});

struct Notifications {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int64_t> count;
};
Notifications& GlobalNotifications() {
  static Notifications* n = new Notifications();
  return *n;
}

class NotifyKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    Notifications& n = GlobalNotifications();
    {
      std::lock_guard<std::mutex> lock(n.mu);
      n.count[ctx->node().attr<std::string>("name")]++;
    }
    n.cv.notify_all();
    ctx->set_output(0, ctx->input(0));
  }
};

class DelayKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->scheduler() == nullptr) {
      ctx->Fail(Code::kUnimplemented, "TestDelay needs a runtime with an AsyncScheduler");
      return done();
    }
    int64_t delay_us = ctx->node().attr<int64_t>("delay_ms") * 1000;
    ctx->scheduler()->RunAfter(delay_us, [ctx, done] {
      ctx->set_output(0, ctx->input(0));
      done();
    });
  }
};

struct Barriers {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int64_t> arrived;
};
Barriers& GlobalBarriers() {
  static Barriers* barriers = new Barriers();
  return *barriers;
}

class BarrierKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    const Node& n = ctx->node();
    const std::string& name = n.attr<std::string>("barrier");
    const int64_t parties = n.attr<int64_t>("parties");
    Barriers& b = GlobalBarriers();
    std::unique_lock<std::mutex> lock(b.mu);
    // Generation-free: each use of a barrier name within a test is one meeting.
    const int64_t target = (b.arrived[name] / parties + 1) * parties;
    b.arrived[name]++;
    b.cv.notify_all();
    bool met = b.cv.wait_for(lock, std::chrono::milliseconds(n.attr<int64_t>("timeout_ms")),
                             [&] { return b.arrived[name] >= target; });
    if (!met) {
      ctx->Fail(Code::kDeadlineExceeded, "barrier '" + name + "': the other " +
                                             std::to_string(parties - 1) +
                                             " part(ies) did not run at the same time");
      return;
    }
    ctx->set_output(0, ctx->input(0));
  }
};

bool RegisterTestKernels() {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    KernelRegistry::Global().Register("TestDelay", kDeviceCpu, dt, MakeKernelFactory<DelayKernel>());
    KernelRegistry::Global().Register("TestBarrier", kDeviceCpu, dt,
                                      MakeKernelFactory<BarrierKernel>());
    KernelRegistry::Global().Register("TestNotify", kDeviceCpu, dt, MakeKernelFactory<NotifyKernel>());
  }
  return true;
}

const bool registered = RegisterTestKernels();

}  // namespace

bool WaitForNotifications(const std::string& name, int64_t count, int64_t timeout_ms) {
  Notifications& n = GlobalNotifications();
  std::unique_lock<std::mutex> lock(n.mu);
  return n.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                       [&] { return n.count[name] >= count; });
}

}  // namespace actorflow
