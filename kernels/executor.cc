#include "kernels/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "graph/steady_clock.h"
#include "kernels/denormal.h"

namespace actorflow {

namespace {

// An asynchronous node's context and whether it has completed: `done` and an
// exception out of ComputeAsync may both try, and only the first counts.
struct AsyncKernelContext : KernelContext {
  using KernelContext::KernelContext;
  std::atomic<bool> completed{false};
};

}  // namespace

// The state of one step. Invariants (under mu_): `pending_[i]` counts the
// unfinished producers of node i; a node is in `ready_` once, when it reaches 0;
// `outstanding_` counts nodes ready or running; the step ends when it reaches 0
// and `done_` is then called once, outside the lock.
class StepState : public std::enable_shared_from_this<StepState> {
 public:
  // A step allocates a handful of flat arrays, not one per node: on small graphs the
  // allocator, not the kernels, would otherwise dominate the step.
  StepState(const Executor* executor, StepArgs args, Executor::DoneCallback done)
      : executor_(executor), args_(std::move(args)), done_(std::move(done)) {
    const Executor::StepTemplate& initial = executor_->step_template();
    const size_t n = initial.pending.size();
    pending_ = initial.pending;
    output_base_ = initial.output_base.data();
    uses_left_ = initial.uses_left;
    outputs_.resize(initial.uses_left.size());
    // Every node becomes ready at most once per step, so `ready_` never holds more
    // than n entries and can be a vector consumed from ready_head_ (FIFO order, but
    // for the nodes that send first: RecordDone).
    ready_.reserve(n);
    ready_ = initial.ready;
    outstanding_ = static_cast<int>(ready_.size());
    timed_ = args_.record_executed || args_.collect_stats;
    lock_per_node_ = executor_->has_async_kernels();
    if (args_.record_executed) {
      result_.executed_nodes.reserve(n);
      result_.executed_start_micros.reserve(n);
    }
  }

  void Start() {
    std::unique_lock<std::mutex> lock(mu_);
    if (outstanding_ == 0) {
      Finish(lock);
      return;
    }
    running_loop_ = true;
    RunLoop(lock);
  }

  void Abort(const Status& status) {
    std::unique_lock<std::mutex> lock(mu_);
    if (finished_) return;
    if (result_.status.ok()) result_.status = status;
    // Ready nodes that have not started are dropped now; running ones finish.
    DropReady();
    if (outstanding_ == 0 && !running_loop_) Finish(lock);
  }

 private:
  // Precondition: lock held and running_loop_ set. Returns with the lock released.
  // Kernels run with denormals flushed to zero (kernels/denormal.h).
  void RunLoop(std::unique_lock<std::mutex>& lock) {
    ScopedFlushDenormal flush_denormals;
    while (true) {
      if (ReadyEmpty()) {
        running_loop_ = false;
        if (outstanding_ == 0) Finish(lock);
        return;
      }
      int i = ready_[ready_head_++];
      const Executor::NodeInfo& info = executor_->nodes()[i];
      // Per-node records only when asked for (StepArgs): they cost a clock read and
      // a name copy per node, a visible share of a small graph's step.
      const int64_t start_us = timed_ ? SteadyMicros() : 0;
      if (args_.record_executed) {
        result_.executed_nodes.push_back(info.node->name());
        result_.executed_start_micros.push_back(start_us);
      }
      std::vector<Tensor> inputs = std::move(spare_inputs_);
      Status gathered = GatherInputs(info, &inputs);
      if (!gathered.ok()) {
        --outstanding_;
        if (result_.status.ok()) result_.status = gathered;
        DropReady();
        continue;
      }
      // The lock guards against asynchronous kernels' completions on other threads;
      // a step without them has no other thread to guard against (has_async_kernels).
      if (lock_per_node_) lock.unlock();

      if (info.kernel->IsAsync()) {
        // The context must outlive this frame: `done` may fire on another thread.
        auto ctx = std::make_shared<AsyncKernelContext>(info.node, std::move(inputs),
                                                        args_.resources, args_.step_id);
        ctx->set_runtime(args_.rendezvous, args_.scheduler, executor_->spec().device_name);
        ctx->set_queues(args_.queues);
        ctx->set_file_access(args_.file_access);
        ctx->set_session_scope(args_.session_scope);
        auto self = shared_from_this();
        try {
          info.kernel->ComputeAsync(ctx.get(), [self, i, ctx, start_us]() {
            if (!ctx->completed.exchange(true)) self->NodeDone(i, ctx.get(), start_us);
          });
        } catch (...) {
          // Whether or not the kernel called `done` (or left it to a callback) before
          // throwing, the node completes once: with the exception if not yet.
          const Status thrown = KernelExceptionStatus(*info.node, std::current_exception());
          if (!ctx->completed.exchange(true)) {
            ctx->SetStatus(thrown);
            NodeDone(i, ctx.get(), start_us);
          }
        }
        lock.lock();
      } else {
        KernelContext ctx(info.node, std::move(inputs), std::move(spare_outputs_),
                          args_.resources, args_.step_id);
        ctx.set_runtime(args_.rendezvous, args_.scheduler, executor_->spec().device_name);
        ctx.set_queues(args_.queues);
        ctx.set_file_access(args_.file_access);
        ctx.set_session_scope(args_.session_scope);
        try {
          info.kernel->Compute(&ctx);
        } catch (...) {
          ctx.SetStatus(KernelExceptionStatus(*info.node, std::current_exception()));
        }
        const Status status = CheckOutputs(info, ctx);
        // One lock for the bookkeeping and the next iteration.
        if (lock_per_node_) lock.lock();
        RecordDone(i, &ctx, start_us, status);
        ctx.ReleaseVectors(&spare_inputs_, &spare_outputs_);
      }
    }
  }

  // Precondition: lock held.
  bool ReadyEmpty() const { return ready_head_ == ready_.size(); }
  // Precondition: lock held. Drops the ready nodes that have not started.
  void DropReady() {
    outstanding_ -= static_cast<int>(ready_.size() - ready_head_);
    ready_head_ = ready_.size();
  }

  // Precondition: lock held. Fails when a variable read finds it uninitialized.
  Status GatherInputs(const Executor::NodeInfo& info, std::vector<Tensor>* out) {
    // Appended, not resized then assigned: a default tensor first would be built
    // and overwritten for every input.
    std::vector<Tensor>& inputs = *out;
    inputs.clear();
    inputs.reserve(info.inputs.size());
    for (size_t k = 0; k < info.inputs.size(); ++k) {
      const Executor::InputSource& src = info.inputs[k];
      if (src.kind == Executor::InputSource::kFeed) {
        inputs.push_back(args_.feed_values[src.index]);
      } else if (src.kind == Executor::InputSource::kVariable) {
        auto var = executor_->VariableOfNode(args_.resources, src.index);
        if (!var.ok()) return var.status().WithContext(info.node->Describe());
        std::lock_guard<std::mutex> var_lock((*var)->mu);
        if (!(*var)->initialized) {
          return FailedPrecondition(info.node->Describe() +
                                    ": attempting to use uninitialized value '" +
                                    (*var)->name() + "': run its initializer (an Assign) first");
        }
        inputs.push_back((*var)->value);
      } else if (src.kind == Executor::InputSource::kNode) {
        const int slot = output_base_[src.index] + src.output;
        // The last consumer takes the step's reference instead of sharing it.
        if (--uses_left_[slot] == 0) {
          inputs.push_back(std::move(outputs_[slot]));
          outputs_[slot] = Tensor();
        } else {
          inputs.push_back(outputs_[slot]);
        }
      } else {
        inputs.emplace_back();
      }
    }
    return Status::OK();
  }

  // Ok, or Internal when the kernel left an output that something uses unset.
  static Status CheckOutputs(const Executor::NodeInfo& info, KernelContext& ctx) {
    if (!ctx.status().ok()) return ctx.status();
    for (int k = 0; k < info.node->num_outputs(); ++k) {
      if (!ctx.outputs()[k].IsInitialized() && info.uses_per_output[k] > 0) {
        return Internal(info.node->Describe() + ": kernel produced no output " +
                        std::to_string(k));
      }
    }
    return Status::OK();
  }

  // Precondition: lock held. Records node i's completion: its outputs, the consumers
  // it makes ready, or the step's error.
  void RecordDone(int i, KernelContext* ctx, int64_t start_us, const Status& status) {
    const Executor::NodeInfo& info = executor_->nodes()[i];
    if (args_.collect_stats) {
      NodeExecStats stats;
      stats.node_name = info.node->name();
      stats.op = info.node->op();
      stats.device = executor_->spec().device_name;
      stats.start_micros = start_us;
      stats.end_micros = SteadyMicros();
      stats.thread_id = std::hash<std::thread::id>()(std::this_thread::get_id());
      result_.step_stats.push_back(std::move(stats));
    }
    --outstanding_;
    if (!status.ok()) {
      if (result_.status.ok()) result_.status = status;
      DropReady();
    } else if (result_.status.ok()) {
      for (int k = 0; k < info.node->num_outputs(); ++k) {
        if (info.uses_per_output[k] > 0) {
          outputs_[output_base_[i] + k] = std::move(ctx->outputs()[k]);
        }
      }
      for (int consumer : info.consumers) {
        if (--pending_[consumer] == 0) {
          // A slot before ready_head_ has been taken: reusing it puts the node first.
          if (executor_->nodes()[consumer].sends_first && ready_head_ > 0) {
            ready_[--ready_head_] = consumer;
          } else {
            ready_.push_back(consumer);
          }
          ++outstanding_;
        }
      }
    }
  }

  // The completion of an asynchronous kernel, on whatever thread it fired.
  void NodeDone(int i, KernelContext* ctx, int64_t start_us) {
    const Status status = CheckOutputs(executor_->nodes()[i], *ctx);
    std::unique_lock<std::mutex> lock(mu_);
    RecordDone(i, ctx, start_us, status);
    if (running_loop_) return;  // the running loop picks up the new ready nodes
    if (ReadyEmpty()) {
      if (outstanding_ == 0) Finish(lock);
      return;
    }
    running_loop_ = true;
    RunLoop(lock);
  }

  // Precondition: lock held, step over. Calls done_ without the lock.
  void Finish(std::unique_lock<std::mutex>& lock) {
    if (finished_) return;
    finished_ = true;
    if (result_.status.ok()) {
      const auto& sources = executor_->fetch_sources();
      result_.fetches.resize(sources.size());
      for (size_t f = 0; f < sources.size(); ++f) {
        const Executor::InputSource& src = sources[f];
        result_.fetches[f] = src.kind == Executor::InputSource::kFeed
                                 ? args_.feed_values[src.index]
                                 : outputs_[output_base_[src.index] + src.output];
      }
    }
    outputs_.clear();
    StepResult result = std::move(result_);
    Executor::DoneCallback done = std::move(done_);
    lock.unlock();
    done(std::move(result));
  }

  const Executor* executor_;
  StepArgs args_;
  Executor::DoneCallback done_;

  std::mutex mu_;
  std::vector<int> pending_;
  // Output k of node i is slot output_base_[i] + k of outputs_ and uses_left_ (the
  // executor's, immutable).
  const int* output_base_ = nullptr;
  std::vector<Tensor> outputs_;
  std::vector<int> uses_left_;
  // The vectors of the last synchronous node's context, emptied, for the next one
  // (only the running loop touches them).
  std::vector<Tensor> spare_inputs_;
  std::vector<Tensor> spare_outputs_;
  // Ready nodes, taken from ready_head_ on: entries before it have been taken.
  std::vector<int> ready_;
  size_t ready_head_ = 0;
  int outstanding_ = 0;
  bool running_loop_ = false;
  bool finished_ = false;
  bool timed_ = false;  // a node's start time is needed (record_executed or collect_stats)
  // False when the executor has no asynchronous kernel: the running loop then holds
  // mu_ through every node, kernels included (Executor::has_async_kernels).
  bool lock_per_node_ = true;
  StepResult result_;
};

void StepHandle::Abort(const Status& status) {
  if (state_) state_->Abort(status);
}

Executor::~Executor() = default;

StatusOr<std::unique_ptr<Executor>> Executor::Create(ExecutorSpec spec,
                                                     const KernelLookup& kernels) {
  std::unique_ptr<Executor> ex(new Executor(std::move(spec)));
  const ExecutorSpec& s = ex->spec_;
  std::unordered_map<const Node*, int> local;
  for (const Node* n : s.nodes) {
    if (!local.emplace(n, static_cast<int>(local.size())).second) {
      return InvalidArgument(n->Describe() + " appears twice in an executor's node set");
    }
  }
  auto feed_index = [&](const Node* node, int output) -> int {
    for (size_t f = 0; f < s.feeds.size(); ++f) {
      if (s.feeds[f].node == node && s.feeds[f].index == output) return static_cast<int>(f);
    }
    return -1;
  };

  ex->infos_.resize(s.nodes.size());
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    NodeInfo& info = ex->infos_[i];
    info.node = s.nodes[i];
    info.uses_per_output.assign(info.node->num_outputs(), 0);
    AF_ASSIGN_OR_RETURN(info.kernel, kernels(*info.node));
    if (info.kernel->IsAsync()) ex->has_async_kernels_ = true;
  }
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    NodeInfo& info = ex->infos_[i];
    const Node* node = info.node;
    for (int k = 0; k < node->num_inputs(); ++k) {
      const Endpoint& in = node->input(k);
      InputSource src;
      if (node->IsRefInput(k)) {
        src.kind = InputSource::kRef;
      } else if (int f = feed_index(in.node, in.index); f >= 0) {
        src.kind = InputSource::kFeed;
        src.index = f;
      } else {
        auto it = local.find(in.node);
        if (it == local.end()) {
          return InvalidArgument(node->Describe() + ": input '" + in.ToString() +
                                 "' is neither fed nor in the executor's node set");
        }
        if (in.node->op() == "Variable") {
          src.kind = InputSource::kVariable;
          src.index = it->second;
          info.inputs.push_back(src);
          continue;
        }
        src.kind = InputSource::kNode;
        src.index = it->second;
        src.output = in.index;
        ex->infos_[it->second].consumers.push_back(static_cast<int>(i));
        ex->infos_[it->second].uses_per_output[in.index]++;
        info.initial_pending++;
      }
      info.inputs.push_back(src);
    }
    for (const Node* dep : node->control_inputs()) {
      auto it = local.find(dep);
      if (it == local.end()) {
        return InvalidArgument(node->Describe() + ": control input '" + dep->name() +
                               "' is not in the executor's node set");
      }
      ex->infos_[it->second].consumers.push_back(static_cast<int>(i));
      info.initial_pending++;
    }
  }
  for (const Endpoint& fetch : s.fetches) {
    InputSource src;
    if (int f = feed_index(fetch.node, fetch.index); f >= 0) {
      src.kind = InputSource::kFeed;
      src.index = f;
    } else {
      auto it = local.find(fetch.node);
      if (it == local.end()) {
        return InvalidArgument("fetch '" + fetch.ToString() +
                               "' is neither fed nor in the executor's node set");
      }
      src.index = it->second;
      src.output = fetch.index;
      ex->infos_[it->second].uses_per_output[fetch.index]++;
    }
    ex->fetch_sources_.push_back(src);
  }
  for (NodeInfo& info : ex->infos_) {
    const std::string& op = info.node->op();
    const bool carrier = (op == "Const" || op == "Identity" || op == "NoOp") &&
                         !info.consumers.empty() &&
                         std::all_of(info.consumers.begin(), info.consumers.end(), [&](int c) {
                           return ex->infos_[c].node->op() == "_Send";
                         });
    info.sends_first = op == "_Send" || carrier;
  }
  for (NodeInfo& info : ex->infos_) {
    if (info.node->op() != "Variable") continue;
    bool used = info.uses_per_output[0] > 0 || !info.consumers.empty();
    info.scheduled = used;
  }
  StepTemplate& initial = ex->template_;
  const size_t n = ex->infos_.size();
  initial.pending.resize(n);
  initial.output_base.resize(n + 1);
  int slots = 0;
  for (size_t i = 0; i < n; ++i) {
    const NodeInfo& info = ex->infos_[i];
    initial.pending[i] = info.initial_pending;
    initial.output_base[i] = slots;
    slots += info.node->num_outputs();
    initial.uses_left.insert(initial.uses_left.end(), info.uses_per_output.begin(),
                             info.uses_per_output.end());
    if (info.initial_pending == 0 && info.scheduled) initial.ready.push_back(static_cast<int>(i));
  }
  initial.output_base[n] = slots;
  return ex;
}

StatusOr<std::shared_ptr<VariableResource>> Executor::VariableOfNode(ResourceManager* resources,
                                                                     int index) const {
  return variable_cache_.Get(resources, *infos_[index].node, static_cast<size_t>(index));
}

StepHandle Executor::RunAsync(StepArgs args, DoneCallback done) const {
  auto state = std::make_shared<StepState>(this, std::move(args), std::move(done));
  StepHandle handle(state);
  state->Start();
  return handle;
}

StepResult Executor::Run(StepArgs args) const {
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    StepResult result;
  };
  auto waiter = std::make_shared<Waiter>();
  RunAsync(std::move(args), [waiter](StepResult result) {
    std::lock_guard<std::mutex> lock(waiter->mu);
    waiter->result = std::move(result);
    waiter->done = true;
    waiter->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(waiter->mu);
  waiter->cv.wait(lock, [&] { return waiter->done; });
  return std::move(waiter->result);
}

}  // namespace actorflow
