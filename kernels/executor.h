// Executor: runs one set of nodes (a pruned graph, or one device's partition) in
// dependency order, step after step. Built once per (graph, feeds, fetches, targets)
// signature; each RunAsync is one step with its own state, so steps may overlap.
//
// Scheduling: ready nodes run one after another on the calling thread. A kernel that
// completes later (IsAsync) lets the executor go on with other ready nodes; when its
// `done` fires (on any thread) the executor resumes on that thread. The executor
// itself never blocks, which is what lets a device actor run it inside its handler.
//
// Variables: as with TensorFlow 1.x's reference variables, a node that takes a
// Variable node's output reads the variable when it starts, not when the Variable
// node would run; so `Identity(v)` with a control dependency on `Assign(v, ...)`
// sees the assigned value. A Variable node runs as a node only when its value is
// fetched or it has control consumers. Across devices the _Send is the consumer: a
// remote reader sees the value as of the Send, also as in TensorFlow 1.x.
//
// Errors: the first failing node's Status ends the step; nodes already running
// finish, nothing new starts, and `done` gets that Status. Abort() does the same from
// outside (deadline, cancellation). An exception thrown out of a kernel's Compute or
// ComputeAsync is that node's failure (KernelExceptionStatus: ResourceExhausted for
// std::bad_alloc), never the caller's: the executor stays usable for later steps.
#ifndef ACTORFLOW_KERNELS_EXECUTOR_H_
#define ACTORFLOW_KERNELS_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/kernel.h"
#include "kernels/rendezvous.h"
#include "kernels/resource.h"
#include "kernels/session.h"

namespace actorflow {

// Returns the kernel for a node; the kernel must outlive the executor.
using KernelLookup = std::function<StatusOr<Kernel*>(const Node& node)>;

struct ExecutorSpec {
  const Graph* graph = nullptr;
  // The nodes to run; each node's non-fed, non-ref data inputs and control inputs
  // must be in the set too.
  std::vector<const Node*> nodes;
  // Tensors whose values the caller supplies per step (in this order).
  std::vector<Endpoint> feeds;
  // Tensors returned per step (in this order); a fed tensor returns its feed.
  std::vector<Endpoint> fetches;
  std::string device_name = "/job:localhost/replica:0/task:0/device:CPU:0";
};

struct StepResult {
  Status status;
  std::vector<Tensor> fetches;  // parallel to ExecutorSpec::fetches
  // When StepArgs::record_executed: the nodes started, in start order.
  std::vector<std::string> executed_nodes;
  // Start times (steady clock, microseconds since its epoch), parallel to
  // executed_nodes: lets a master merge the orders of several devices.
  std::vector<int64_t> executed_start_micros;
  // When StepArgs::collect_stats; times are steady-clock micros since its epoch.
  std::vector<NodeExecStats> step_stats;
};

// What a step records per node is opt-in: with record_executed and collect_stats both
// off a step reads no clock and copies no node, op or device name (the steady state of
// a training loop that asks for no RunMetadata).
struct StepArgs {
  std::vector<Tensor> feed_values;  // parallel to ExecutorSpec::feeds
  ResourceManager* resources = nullptr;
  int64_t step_id = 0;
  // Fill StepResult::executed_nodes and executed_start_micros.
  bool record_executed = true;
  // Fill StepResult::step_stats (one NodeExecStats per node that finished).
  bool collect_stats = false;
  // The hosting runtime's services for Send/Recv and asynchronous kernels.
  Rendezvous* rendezvous = nullptr;
  AsyncScheduler* scheduler = nullptr;
  // The task's queues, for queue kernels; nullptr where there are none.
  QueueService* queues = nullptr;
  // Where kernels may open files named by the graph (kernels/file_access.h); nullptr:
  // anywhere. Must outlive the step.
  const FileAccessPolicy* file_access = nullptr;
  // KernelContext::session_scope of the step's kernels.
  uint64_t session_scope = 0;
};

class StepState;

// A running step; lets the owner abort it. Safe to call from any thread.
class StepHandle {
 public:
  explicit StepHandle(std::shared_ptr<StepState> state) : state_(std::move(state)) {}
  // Ends the step with `status` unless it already ended; `done` still fires once.
  void Abort(const Status& status);

 private:
  std::shared_ptr<StepState> state_;
};

class Executor {
 public:
  // InvalidArgument when the spec is inconsistent; errors from `kernels` propagate.
  static StatusOr<std::unique_ptr<Executor>> Create(ExecutorSpec spec,
                                                    const KernelLookup& kernels);
  ~Executor();

  using DoneCallback = std::function<void(StepResult result)>;
  // Starts a step. `done` is called exactly once, on this thread or on the thread of
  // an asynchronous kernel's completion. The executor must outlive the step.
  StepHandle RunAsync(StepArgs args, DoneCallback done) const;
  // Runs a step and waits for it (for callers that may block: DirectSession).
  StepResult Run(StepArgs args) const;

  const ExecutorSpec& spec() const { return spec_; }

  // Precomputed per-node wiring; public for StepState, opaque to callers.
  struct InputSource {
    // kVariable: read the variable of Variable node `index` at consumer start.
    enum Kind { kNode, kFeed, kRef, kVariable } kind = kNode;
    int index = 0;   // local node index or feed index
    int output = 0;  // output index for kNode
  };
  struct NodeInfo {
    const Node* node = nullptr;
    Kernel* kernel = nullptr;
    std::vector<InputSource> inputs;
    std::vector<int> consumers;  // local indices, once per edge (data and control)
    int initial_pending = 0;
    std::vector<int> uses_per_output;  // consumer edges + fetches, to free early
    bool scheduled = true;  // false: a Variable node only read through kVariable edges
    // A _Send, or a Const / Identity / NoOp feeding only _Sends (the carrier of a
    // control edge to another device): run before the nodes already ready, so that
    // the device waiting for it starts as soon as its input exists, not after this
    // device's queue (a step's updates on one device otherwise ran before the gate's
    // signal to the other).
    bool sends_first = false;
  };
  const std::vector<NodeInfo>& nodes() const { return infos_; }
  const std::vector<InputSource>& fetch_sources() const { return fetch_sources_; }
  // A step's initial counters, laid out once at Create so that a step starts with a
  // few flat copies instead of a walk over every node. Output k of node i is slot
  // output_base[i] + k (output_base has one entry more than nodes: the slot count).
  struct StepTemplate {
    std::vector<int> pending;       // initial_pending per node
    std::vector<int> output_base;
    std::vector<int> uses_left;     // uses_per_output, flattened by slot
    std::vector<int> ready;         // nodes scheduled with nothing pending, in order
  };
  const StepTemplate& step_template() const { return template_; }
  // Whether some node's kernel completes later (Kernel::IsAsync). Without one, a
  // step runs to its end inside RunAsync and nothing else can reach its state before
  // RunAsync returns (the StepHandle does not exist yet, and only an asynchronous
  // kernel's `done` re-enters it): the step then keeps its lock from start to end
  // instead of taking it around every node.
  bool has_async_kernels() const { return has_async_kernels_; }
  // The variable of Variable node `index` in `resources` (VariableForNode), looked
  // up by name once per manager epoch (ResourceManager::epoch) and then kept: the
  // lookup costs more than a small graph's kernels. Thread-safe.
  StatusOr<std::shared_ptr<VariableResource>> VariableOfNode(ResourceManager* resources,
                                                             int index) const;

 private:
  explicit Executor(ExecutorSpec spec) : spec_(std::move(spec)) {}
  ExecutorSpec spec_;
  std::vector<NodeInfo> infos_;
  std::vector<InputSource> fetch_sources_;
  StepTemplate template_;
  bool has_async_kernels_ = false;
  mutable VariableLookupCache variable_cache_;  // by node index
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_EXECUTOR_H_
