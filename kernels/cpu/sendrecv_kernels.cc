// _Send and _Recv: the two ends of a cross-device edge, inserted by the partitioner.
// They talk through the step's Rendezvous (KernelContext::rendezvous()), which the
// hosting runtime provides; without one (DirectSession) they fail cleanly.

#include "graph/types.h"
#include "kernels/kernel.h"
#include "kernels/rendezvous.h"

namespace actorflow {
namespace {

RendezvousKey KeyOf(const KernelContext& ctx) {
  const Node& n = ctx.node();
  return RendezvousKey{ctx.step_id(), n.attr<std::string>("tensor_name"),
                       n.attr<std::string>("send_device"), n.attr<std::string>("recv_device")};
}

Status NoRendezvous(const Node& node) {
  return FailedPrecondition(node.Describe() +
                            ": cross-device edge in a session without a rendezvous "
                            "(partitioned graphs run only in the actor runtime)");
}

class SendKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    if (ctx->rendezvous() == nullptr) return ctx->SetStatus(NoRendezvous(ctx->node()));
    Status s = ctx->rendezvous()->Send(KeyOf(*ctx), ctx->input(0));
    if (!s.ok()) ctx->SetStatus(s.WithContext(ctx->node().Describe()));
  }
};

class RecvKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (ctx->rendezvous() == nullptr) {
      ctx->SetStatus(NoRendezvous(ctx->node()));
      return done();
    }
    ctx->rendezvous()->RecvAsync(
        KeyOf(*ctx), [ctx, done](const Status& status, const Tensor& value) {
          if (status.ok()) {
            ctx->set_output(0, value);
          } else {
            ctx->SetStatus(status.WithContext(ctx->node().Describe()));
          }
          done();
        });
  }
};

bool RegisterSendRecv() {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool}) {
    KernelRegistry::Global().Register("_Send", kDeviceCpu, dt, MakeKernelFactory<SendKernel>());
    KernelRegistry::Global().Register("_Recv", kDeviceCpu, dt, MakeKernelFactory<RecvKernel>());
  }
  return true;
}

const bool send_recv_registered = RegisterSendRecv();

}  // namespace
}  // namespace actorflow
