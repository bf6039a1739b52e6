// TestThrow(x; what): a kernel that fails the way a buggy or starved kernel does,
// by throwing out of Compute, so that tests can check that a device survives it:
//   what = "bad_alloc"      throws std::bad_alloc (an allocation that could not be met)
//   what = "runtime_error"  throws std::runtime_error("TestThrow was asked to throw")
//   anything else           returns x unchanged (the node runs normally)
//
// Linked only into test binaries and //tests:test_server (testonly, alwayslink).

#include <new>
#include <stdexcept>

#include "graph/op_registry.h"
#include "graph/types.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace {

Status SameAsInput(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

const OpRegistration kThrowOp(OpDef{"TestThrow",
                                    1,
                                    1,
                                    {},
                                    1,
                                    {{"what", AttrType::kString, std::nullopt}},
                                    true,
                                    SameAsInput});

class ThrowKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    const std::string& what = ctx->node().attr<std::string>("what");
    if (what == "bad_alloc") throw std::bad_alloc();
    if (what == "runtime_error") throw std::runtime_error("TestThrow was asked to throw");
    ctx->set_output(0, ctx->input(0));
  }
};

bool RegisterThrowKernels() {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    KernelRegistry::Global().Register("TestThrow", kDeviceCpu, dt,
                                      MakeKernelFactory<ThrowKernel>());
  }
  return true;
}

const bool registered = RegisterThrowKernels();

}  // namespace
}  // namespace actorflow
