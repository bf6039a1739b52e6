// TestSignalFifo(x; path, text): returns x and writes the line `text` to the FIFO at
// `path`. The cross-process counterpart of TestNotify: a test that runs a cluster
// of real processes opens the FIFO (tests/child_process.h SignalFifo) and learns,
// without polling, that a step has reached this node inside a server process.
//
// The write does not block: with no reader the node fails (Unavailable naming the
// path), since a step must never hang on a test hook.
//
// Linked only into test binaries and //tests:test_server (testonly, alwayslink).

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "graph/op_registry.h"
#include "graph/types.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace {

Status SameAsInput(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

const OpRegistration kSignalFifoOp(OpDef{"TestSignalFifo",
                                         1,
                                         1,
                                         {},
                                         1,
                                         {{"path", AttrType::kString, std::nullopt},
                                          {"text", AttrType::kString, std::nullopt}},
                                         true,
                                         SameAsInput});

class SignalFifoKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    const std::string& path = ctx->node().attr<std::string>("path");
    const std::string line = ctx->node().attr<std::string>("text") + "\n";
    int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      ctx->Fail(Code::kUnavailable, "cannot open FIFO " + path + ": " + std::strerror(errno));
      return;
    }
    // A line shorter than PIPE_BUF is written whole or not at all.
    const ssize_t wrote = write(fd, line.data(), line.size());
    const int write_errno = errno;
    close(fd);
    if (wrote != static_cast<ssize_t>(line.size())) {
      ctx->Fail(Code::kUnavailable, "cannot write to FIFO " + path + ": " +
                                        std::strerror(write_errno));
      return;
    }
    ctx->set_output(0, ctx->input(0));
  }
};

bool RegisterSignalFifoKernels() {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    KernelRegistry::Global().Register("TestSignalFifo", kDeviceCpu, dt,
                                      MakeKernelFactory<SignalFifoKernel>());
  }
  return true;
}

const bool registered = RegisterSignalFifoKernels();

}  // namespace
}  // namespace actorflow
