#include "kernels/direct_session.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "graph/prune.h"
#include "graph/steady_clock.h"
#include "kernels/executor.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

class DirectSession : public Session {
 public:
  DirectSession(const Graph* graph, const SessionOptions& options)
      : graph_(graph), options_(options) {}

  ~DirectSession() override { Close(); }

  Status Run(const RunOptions& run_options, const FeedList& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    AF_ASSIGN_OR_RETURN(std::shared_ptr<const Executor> executor,
                        GetExecutor(feeds, fetches, targets));
    StepArgs args;
    args.resources = &resources_;
    args.step_id = next_step_id_.fetch_add(1);
    // Per-node bookkeeping only for a caller that asked for run metadata.
    args.record_executed = metadata != nullptr;
    args.collect_stats =
        metadata != nullptr && run_options.trace_level == RunOptions::TraceLevel::kFullTrace;
    const auto& fed = executor->spec().feeds;
    args.feed_values.reserve(feeds.size());
    for (size_t i = 0; i < feeds.size(); ++i) {
      AF_RETURN_IF_ERROR(ValidateFeed(feeds[i].first, fed[i], feeds[i].second));
      args.feed_values.push_back(feeds[i].second);
    }

    const int64_t step_start = SteadyMicros();
    const int64_t timeout_ms = run_options.timeout_in_ms > 0
                                   ? run_options.timeout_in_ms
                                   : options_.default_step_timeout_in_ms;
    StepResult result = RunStep(executor, std::move(args), timeout_ms);
    if (metadata != nullptr) {
      metadata->executed_nodes = std::move(result.executed_nodes);
      metadata->step_stats = std::move(result.step_stats);
      for (NodeExecStats& s : metadata->step_stats) {
        s.start_micros -= step_start;
        s.end_micros -= step_start;
      }
    }
    AF_RETURN_IF_ERROR(result.status);
    if (outputs != nullptr) *outputs = std::move(result.fetches);
    return Status::OK();
  }

  Status Close() override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    executors_.clear();
    return Status::OK();
  }

 private:
  // Runs one step; waits at most `timeout_ms` (0 = no deadline), then aborts it and
  // returns DeadlineExceeded without waiting for kernels still in flight (the step's
  // callback keeps the executor alive until they finish).
  StepResult RunStep(std::shared_ptr<const Executor> executor, StepArgs args,
                     int64_t timeout_ms) {
    struct Waiter {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      StepResult result;
    };
    auto waiter = std::make_shared<Waiter>();
    const Executor* raw = executor.get();
    StepHandle handle = raw->RunAsync(std::move(args), [waiter, executor](StepResult r) {
      std::lock_guard<std::mutex> lock(waiter->mu);
      waiter->result = std::move(r);
      waiter->done = true;
      waiter->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(waiter->mu);
    auto is_done = [&] { return waiter->done; };
    if (timeout_ms <= 0) {
      waiter->cv.wait(lock, is_done);
    } else if (!waiter->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), is_done)) {
      lock.unlock();
      Status deadline = DeadlineExceeded("step exceeded its deadline of " +
                                         std::to_string(timeout_ms) + " ms");
      handle.Abort(deadline);
      StepResult timed_out;
      timed_out.status = deadline;
      return timed_out;
    }
    return std::move(waiter->result);
  }

  // The plan of a run signature, built on first use. The cache key is built in one
  // buffer: this runs on every step.
  StatusOr<std::shared_ptr<const Executor>> GetExecutor(const FeedList& feeds,
                                                        const std::vector<std::string>& fetches,
                                                        const std::vector<std::string>& targets) {
    size_t length = 2;
    for (const auto& f : feeds) length += f.first.size() + 1;
    for (const auto& f : fetches) length += f.size() + 1;
    for (const auto& t : targets) length += t.size() + 1;
    std::string key;
    key.reserve(length);
    for (const auto& f : feeds) key.append(f.first).push_back(',');
    key.push_back('|');
    for (const auto& f : fetches) key.append(f).push_back(',');
    key.push_back('|');
    for (const auto& t : targets) key.append(t).push_back(',');

    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return FailedPrecondition("Run on a closed session");
    auto it = executors_.find(key);
    if (it != executors_.end()) return it->second;

    std::vector<std::string> feed_names;
    feed_names.reserve(feeds.size());
    for (const auto& [name, value] : feeds) feed_names.push_back(name);
    AF_ASSIGN_OR_RETURN(RunSignature sig,
                        ResolveRunSignature(*graph_, feed_names, fetches, targets));
    AF_ASSIGN_OR_RETURN(std::vector<const Node*> nodes, PruneForRun(*graph_, sig));
    ExecutorSpec spec;
    spec.graph = graph_;
    spec.nodes = std::move(nodes);
    spec.feeds = sig.feeds;
    spec.fetches = sig.fetches;
    // Kernels are per node and shared by every plan of this session, so stateful
    // kernels (random generators) keep one sequence whatever is fetched.
    KernelLookup lookup = [this](const Node& node) -> StatusOr<Kernel*> {
      auto k = kernels_.find(node.id());
      if (k != kernels_.end()) return k->second.get();
      AF_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel,
                          KernelRegistry::Global().CreateKernel(node, kDeviceCpu));
      Kernel* raw = kernel.get();
      kernels_.emplace(node.id(), std::move(kernel));
      return raw;
    };
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                        Executor::Create(std::move(spec), lookup));
    std::shared_ptr<const Executor> shared(std::move(executor));
    executors_.emplace(key, shared);
    return shared;
  }

  const Graph* graph_;
  SessionOptions options_;
  ResourceManager resources_;
  std::atomic<int64_t> next_step_id_{1};

  std::mutex mu_;
  bool closed_ = false;
  std::unordered_map<std::string, std::shared_ptr<const Executor>> executors_;
  // Kernels outlive every executor that uses them (steps hold the executor alive
  // through shared_ptr only while the session lives).
  std::unordered_map<int, std::unique_ptr<Kernel>> kernels_;
};

}  // namespace

StatusOr<std::unique_ptr<Session>> NewDirectSession(const Graph* graph,
                                                    const SessionOptions& options) {
  if (graph == nullptr) return InvalidArgument("NewDirectSession: no graph");
  if (options.default_step_timeout_in_ms < 0) {
    return InvalidArgument("SessionOptions.default_step_timeout_in_ms must be >= 0, got " +
                           std::to_string(options.default_step_timeout_in_ms));
  }
  return std::unique_ptr<Session>(std::make_unique<DirectSession>(graph, options));
}

}  // namespace actorflow
