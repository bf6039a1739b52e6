// Kernel: the implementation of one op on one device type for one dtype, and the
// registry that finds it. A kernel is built once per node (per executor plan) and
// computed once per step; it may keep state across steps (a random generator).
//
// Contract for implementers:
// - Compute() reads ctx->input(i), writes every output with ctx->set_output(i, t)
//   (dtype and rank as the node's inferred outputs), or calls ctx->SetStatus(error)
//   with a message that names the node (ctx->node().Describe()).
// - Compute() must not block. A kernel that waits for something (a Recv, a queue)
//   overrides IsAsync()/ComputeAsync() and calls `done` exactly once, possibly from
//   another thread, after setting outputs or status.
// - Compute() may run concurrently for different steps: state needs its own lock.
// - Inputs share buffers with other consumers: never write into an input.
// - Report errors through the context, not by throwing. An exception that escapes
//   anyway (std::bad_alloc from a huge allocation) fails only the node's step (see
//   KernelExceptionStatus); the executor catches it, so the device keeps serving.
#ifndef ACTORFLOW_KERNELS_KERNEL_H_
#define ACTORFLOW_KERNELS_KERNEL_H_

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/queue_service.h"
#include "kernels/rendezvous.h"
#include "kernels/resource.h"

namespace actorflow {

class FileAccessPolicy;  // kernels/file_access.h

inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

// Everything a kernel sees during one computation.
class KernelContext {
 public:
  KernelContext(const Node* node, std::vector<Tensor> inputs, ResourceManager* resources,
                int64_t step_id)
      : node_(node),
        inputs_(std::move(inputs)),
        outputs_(node->num_outputs()),
        resources_(resources),
        step_id_(step_id) {}

  // The same with `outputs` as the outputs' storage (cleared, then sized to the
  // node's outputs): an executor hands every node's context the vectors the previous
  // context gave back (ReleaseVectors), so a step allocates no vectors per node.
  KernelContext(const Node* node, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                ResourceManager* resources, int64_t step_id)
      : node_(node),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        resources_(resources),
        step_id_(step_id) {
    outputs_.clear();
    outputs_.resize(node->num_outputs());
  }

  // Gives the input and output vectors back, emptied (the tensors they held are
  // released) with their capacity kept. The context has no inputs or outputs after.
  void ReleaseVectors(std::vector<Tensor>* inputs, std::vector<Tensor>* outputs) {
    inputs_.clear();
    outputs_.clear();
    *inputs = std::move(inputs_);
    *outputs = std::move(outputs_);
  }

  const Node& node() const { return *node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // For a ref input (IsRefInput) the tensor is empty: use GetVariable instead.
  const Tensor& input(int i) const { return inputs_[i]; }

  void set_output(int i, Tensor t) { outputs_[i] = std::move(t); }
  // Allocates output i with the node's output dtype and the given shape.
  Tensor& allocate_output(int i, const Shape& shape) {
    outputs_[i] = Tensor(node_->output_dtype(i), shape);
    return outputs_[i];
  }
  // The same without the zero fill (Tensor::Uninitialized), for a kernel that writes
  // every element of the output before it returns (a GEMM with beta = 0, an
  // element-wise op): a zero fill first would write every byte twice.
  Tensor& allocate_output_for_overwrite(int i, const Shape& shape) {
    outputs_[i] = Tensor::Uninitialized(node_->output_dtype(i), shape);
    return outputs_[i];
  }
  std::vector<Tensor>& outputs() { return outputs_; }

  const Status& status() const { return status_; }
  // Keeps the first error; its message should name the node.
  void SetStatus(const Status& s) {
    if (status_.ok()) status_ = s;
  }
  // Shorthand: InvalidArgument naming the node.
  void Fail(Code code, const std::string& message) {
    SetStatus(Status(code, node_->Describe() + ": " + message));
  }

  ResourceManager* resources() const { return resources_; }
  int64_t step_id() const { return step_id_; }
  // The hosting runtime's services; nullptr where there are none (DirectSession).
  Rendezvous* rendezvous() const { return rendezvous_; }
  AsyncScheduler* scheduler() const { return scheduler_; }
  // The task's queues (kernels/queue_service.h); nullptr where there are none.
  QueueService* queues() const { return queues_; }
  void set_queues(QueueService* queues) { queues_ = queues; }
  // Where kernels may open files that the graph names (kernels/file_access.h: pass
  // paths through ResolveFilePath); nullptr: anywhere, in a process that runs its own
  // graphs. A server always sets one.
  const FileAccessPolicy* file_access() const { return file_access_; }
  void set_file_access(const FileAccessPolicy* policy) { file_access_ = policy; }
  // The session whose graph the kernel runs for, on a device shared by sessions (the
  // master's scope); 0 where the resource manager is the session's own. Resources
  // private to a session live in SessionContainer(session_scope()).
  uint64_t session_scope() const { return session_scope_; }
  void set_session_scope(uint64_t scope) { session_scope_ = scope; }
  // The full name of the device running the kernel ("" when none was set).
  const std::string& device_name() const {
    static const std::string kNone;
    return device_name_ != nullptr ? *device_name_ : kNone;
  }
  // `device_name` is referenced, not copied (this runs once per node per step): it
  // must outlive the context, as the executor's spec does.
  void set_runtime(Rendezvous* rendezvous, AsyncScheduler* scheduler,
                   const std::string& device_name) {
    rendezvous_ = rendezvous;
    scheduler_ = scheduler;
    device_name_ = &device_name;
  }

 private:
  const Node* node_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  ResourceManager* resources_;
  int64_t step_id_;
  Rendezvous* rendezvous_ = nullptr;
  AsyncScheduler* scheduler_ = nullptr;
  QueueService* queues_ = nullptr;
  const FileAccessPolicy* file_access_ = nullptr;
  uint64_t session_scope_ = 0;
  const std::string* device_name_ = nullptr;
  Status status_;
};

class Kernel {
 public:
  explicit Kernel(const Node& node) : node_(node) {}
  virtual ~Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  virtual void Compute(KernelContext* ctx) = 0;
  virtual bool IsAsync() const { return false; }
  // Async kernels override this; `done` must be called exactly once.
  virtual void ComputeAsync(KernelContext* ctx, std::function<void()> done) {
    Compute(ctx);
    done();
  }

  const Node& node() const { return node_; }

 private:
  const Node& node_;
};

using KernelFactory = std::function<StatusOr<std::unique_ptr<Kernel>>(const Node& node)>;

// Kernels keyed by (op, device type, dtype); dtype is Node::kernel_dtype().
// Thread safety: registration at static-initialization time; lookups from any thread.
class KernelRegistry {
 public:
  static KernelRegistry& Global();

  void Register(const std::string& op, const std::string& device_type, DType dtype,
                KernelFactory factory);
  bool HasKernel(const std::string& op, const std::string& device_type, DType dtype) const;
  // NotFound naming the node, op, dtype and device type when there is no kernel.
  StatusOr<std::unique_ptr<Kernel>> CreateKernel(const Node& node,
                                                 const std::string& device_type) const;
  // The dtypes registered for (op, device type); for error messages.
  std::vector<DType> RegisteredDTypes(const std::string& op, const std::string& device_type) const;

 private:
  std::map<std::tuple<std::string, std::string, DType>, KernelFactory> factories_;
};

// The Status for an exception that escaped a kernel of `node` (its Compute, its
// ComputeAsync or its factory): ResourceExhausted for std::bad_alloc (an allocation
// the device could not meet), Internal naming the op and the exception otherwise.
// Both name the node; the runtime fails the node's step with it and keeps serving.
Status KernelExceptionStatus(const Node& node, std::exception_ptr error);

// A factory for a kernel class constructible from `const Node&`.
template <typename K>
KernelFactory MakeKernelFactory() {
  return [](const Node& node) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new K(node));
  };
}

// Registers at static-initialization time:
//   static KernelRegistration reg_add_f32("Add", kDeviceCpu, DType::kFloat32,
//                                         MakeKernelFactory<AddKernel<float>>());
// Libraries holding registrations must be linked with alwayslink = 1.
struct KernelRegistration {
  KernelRegistration(const std::string& op, const std::string& device_type, DType dtype,
                     KernelFactory factory) {
    KernelRegistry::Global().Register(op, device_type, dtype, std::move(factory));
  }
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_KERNEL_H_
