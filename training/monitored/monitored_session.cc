#include "training/monitored/monitored_session.h"

#include <chrono>
#include <exception>
#include <iostream>
#include <set>
#include <unordered_map>

#include "graph/output_fetches.h"
#include "training/data/coordinator.h"
#include "training/monitored/hooks.h"
#include "training/monitored/session_manager.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

std::string HookName(const SessionRunHook& hook) {
  try {
    return hook.name();
  } catch (...) {
    return "<a hook whose name() threw>";
  }
}

// Runs one callback of `hook`: its error, or what it threw, named after the hook.
template <typename Fn>
Status CallHook(const SessionRunHook& hook, const char* callback, Fn&& fn) {
  const std::string prefix = "hook '" + HookName(hook) + "'";
  try {
    Status s = fn();
    if (s.ok()) return s;
    return Status(s.code(), prefix + " failed in " + callback + ": " + s.message());
  } catch (const std::exception& e) {
    return Internal(prefix + " threw in " + callback + ": " + e.what());
  } catch (...) {
    return Internal(prefix + " threw in " + callback +
                    ": an exception that is not a std::exception");
  }
}

Status CheckOption(int64_t value, const char* name) {
  if (value >= 0) return Status::OK();
  return InvalidArgument(std::string("MonitoredTrainingSessionOptions.") + name +
                         " must be >= 0, got " + std::to_string(value));
}

Status CheckOptions(const MonitoredTrainingSessionOptions& o) {
  AF_RETURN_IF_ERROR(CheckOption(o.save_checkpoint_steps, "save_checkpoint_steps"));
  AF_RETURN_IF_ERROR(CheckOption(o.save_checkpoint_secs, "save_checkpoint_secs"));
  AF_RETURN_IF_ERROR(CheckOption(o.save_summaries_steps, "save_summaries_steps"));
  AF_RETURN_IF_ERROR(CheckOption(o.log_step_count_steps, "log_step_count_steps"));
  AF_RETURN_IF_ERROR(CheckOption(o.step_timeout_ms, "step_timeout_ms"));
  AF_RETURN_IF_ERROR(CheckOption(o.wait_for_model_ms, "wait_for_model_ms"));
  AF_RETURN_IF_ERROR(CheckOption(o.stop_grace_period_ms, "stop_grace_period_ms"));
  for (const auto* list : {&o.hooks, &o.chief_only_hooks}) {
    for (size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i] == nullptr) {
        return InvalidArgument(std::string("MonitoredTrainingSessionOptions.") +
                               (list == &o.hooks ? "hooks" : "chief_only_hooks") + "[" +
                               std::to_string(i) + "] is null");
      }
    }
  }
  return Status::OK();
}

}  // namespace

MonitoredTrainingSession::MonitoredTrainingSession(Graph* graph,
                                                   MonitoredTrainingSessionOptions options)
    : graph_(graph),
      options_(std::move(options)),
      scaffold_(std::make_shared<Scaffold>(options_.scaffold)),
      coord_(std::make_unique<Coordinator>()) {}

StatusOr<std::unique_ptr<MonitoredTrainingSession>> MonitoredTrainingSession::Create(
    Graph* graph, OpenSession open_session, MonitoredTrainingSessionOptions options) {
  if (graph == nullptr) return InvalidArgument("MonitoredTrainingSession::Create: no graph");
  if (!open_session) {
    return InvalidArgument("MonitoredTrainingSession::Create: no function to open the session");
  }
  AF_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<MonitoredTrainingSession> mts(
      new MonitoredTrainingSession(graph, std::move(options)));
  Status s = mts->Initialize(open_session);
  if (!s.ok()) {
    // Nothing ran for the hooks to end: stop what was started and drop it.
    mts->closed_ = true;
    mts->coord_->RequestStop();
    if (mts->session_ != nullptr) mts->session_->Close();
    mts->coord_->Join(mts->options_.stop_grace_period_ms);
    return s;
  }
  return StatusOr<std::unique_ptr<MonitoredTrainingSession>>(std::move(mts));
}

Status MonitoredTrainingSession::Initialize(const OpenSession& open_session) {
  const MonitoredTrainingSessionOptions& o = options_;
  if (o.is_chief) {
    hooks_ = o.chief_only_hooks;
    const bool has_step = GetGlobalStep(*graph_).ok();
    const bool dir = !o.checkpoint_dir.empty();
    const bool count = has_step && o.log_step_count_steps > 0;
    const bool summaries =
        dir && o.save_summaries_steps > 0 && (has_step || !o.summary_scalars.empty());
    std::shared_ptr<SummaryWriter> writer;
    if (dir && (count || summaries)) {
      AF_ASSIGN_OR_RETURN(std::unique_ptr<SummaryWriter> created,
                          SummaryWriter::Create(o.checkpoint_dir));
      writer = std::move(created);
    }
    if (count) {
      hooks_.push_back(std::make_shared<StepCounterHook>(
          StepCounterHookOptions{o.log_step_count_steps, writer, nullptr}));
    }
    if (summaries) {
      hooks_.push_back(std::make_shared<SummarySaverHook>(SummarySaverHookOptions{
          o.checkpoint_dir, writer, o.save_summaries_steps, o.summary_scalars}));
    }
    if (dir && (o.save_checkpoint_steps > 0 || o.save_checkpoint_secs > 0)) {
      CheckpointSaverHookOptions saver;
      saver.checkpoint_dir = o.checkpoint_dir;
      saver.save_steps = o.save_checkpoint_steps;
      saver.save_secs = o.save_checkpoint_steps > 0 ? 0 : o.save_checkpoint_secs;
      saver.scaffold = scaffold_;
      hooks_.push_back(std::make_shared<CheckpointSaverHook>(saver));
    }
  }
  hooks_.insert(hooks_.end(), o.hooks.begin(), o.hooks.end());

  for (const auto& hook : hooks_) {
    AF_RETURN_IF_ERROR(CallHook(*hook, "Begin", [&] { return hook->Begin(graph_); }));
  }
  AF_RETURN_IF_ERROR(scaffold_->Finalize(graph_));
  AF_ASSIGN_OR_RETURN(session_, open_session());
  if (session_ == nullptr) {
    return Internal("MonitoredTrainingSession::Create: open_session returned no session");
  }
  PrepareOptions prepare;
  prepare.checkpoint_dir = o.checkpoint_dir;
  prepare.step_timeout_ms = o.step_timeout_ms;
  prepare.wait_for_model_ms = o.wait_for_model_ms;
  AF_RETURN_IF_ERROR(o.is_chief ? PrepareChiefSession(session_.get(), *scaffold_, prepare)
                                : WaitForSessionReady(session_.get(), *scaffold_, prepare));
  for (const auto& hook : hooks_) {
    AF_RETURN_IF_ERROR(CallHook(*hook, "AfterCreateSession", [&] {
      return hook->AfterCreateSession(session_.get(), coord_.get());
    }));
  }
  // TF1 finalizes the graph here: a node added later would make a remote session
  // open the graph again, ending the steps other threads (the hooks') run.
  finalized_nodes_ = graph_->num_nodes();
  return Status::OK();
}

MonitoredTrainingSession::~MonitoredTrainingSession() {
  if (closed_) return;
  Status s = Close();
  if (!s.ok()) std::cerr << "MonitoredTrainingSession: closing in its destructor: " << s << "\n";
}

Status MonitoredTrainingSession::Run(const FeedList& feeds, const std::vector<std::string>& fetches,
                                     const std::vector<std::string>& targets,
                                     std::vector<Tensor>* outputs) {
  Status s = RunHooked(feeds, fetches, targets, outputs);
  // OutOfRange ends training cleanly (ShouldStop); any other error skips End at Close.
  last_run_failed_ = !s.ok() && s.code() != Code::kOutOfRange;
  return s;
}

Status MonitoredTrainingSession::RunHooked(const FeedList& feeds,
                                           const std::vector<std::string>& fetches,
                                           const std::vector<std::string>& targets,
                                           std::vector<Tensor>* outputs) {
  if (closed_) return FailedPrecondition("MonitoredTrainingSession: Run after Close");
  if (graph_->num_nodes() != finalized_nodes_) {
    return FailedPrecondition(
        "MonitoredTrainingSession: the graph grew from " + std::to_string(finalized_nodes_) +
        " to " + std::to_string(graph_->num_nodes()) +
        " nodes after the session was created; the graph is final then (as TF1 finalizes it): "
        "build every op, evaluation ones included, before creating the monitored session");
  }
  SessionRunContext context(session_.get(), fetches, targets);
  std::vector<SessionRunArgs> args(hooks_.size());
  for (size_t h = 0; h < hooks_.size(); ++h) {
    AF_RETURN_IF_ERROR(CallHook(*hooks_[h], "BeforeRun",
                                [&] { return hooks_[h]->BeforeRun(&context, &args[h]); }));
  }
  // Merged: the caller's fetches first (their order is the outputs'), then each new
  // name a hook asks for; a hook's values come from wherever its names landed.
  std::vector<std::string> all_fetches = fetches;
  std::unordered_map<std::string, size_t> slot_of;
  for (size_t i = 0; i < fetches.size(); ++i) slot_of.emplace(fetches[i], i);
  std::vector<std::vector<size_t>> hook_slots(hooks_.size());
  std::vector<std::string> all_targets = targets;
  std::set<std::string> target_set(targets.begin(), targets.end());
  FeedList all_feeds = feeds;
  std::set<std::string> fed;
  for (const auto& feed : feeds) fed.insert(feed.first);
  for (size_t h = 0; h < hooks_.size(); ++h) {
    for (const std::string& name : args[h].fetches) {
      auto [it, added] = slot_of.emplace(name, all_fetches.size());
      if (added) all_fetches.push_back(name);
      hook_slots[h].push_back(it->second);
    }
    for (const std::string& name : args[h].targets) {
      if (target_set.insert(name).second) all_targets.push_back(name);
    }
    for (const auto& feed : args[h].feeds) {
      if (!fed.insert(feed.first).second) {
        return InvalidArgument("hook '" + HookName(*hooks_[h]) + "' feeds '" + feed.first +
                               "', which the caller or an earlier hook feeds already");
      }
      all_feeds.push_back(feed);
    }
  }

  RunOptions options;
  options.timeout_in_ms = options_.step_timeout_ms;
  std::vector<Tensor> values;
  const auto start = std::chrono::steady_clock::now();
  Status s = session_->Run(options, all_feeds, all_fetches, all_targets, &values, nullptr);
  if (!s.ok()) {
    if (s.code() == Code::kOutOfRange) {
      stop_requested_ = true;
      coord_->RequestStop(s, "MonitoredTrainingSession::Run");
    }
    if (s.code() == Code::kDeadlineExceeded) {
      const std::chrono::duration<double, std::milli> elapsed =
          std::chrono::steady_clock::now() - start;
      return StepDeadlineError(s, elapsed.count());
    }
    return s;
  }
  if (outputs != nullptr) {
    outputs->assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(fetches.size()));
  }
  for (size_t h = 0; h < hooks_.size(); ++h) {
    SessionRunValues mine;
    for (size_t slot : hook_slots[h]) mine.results.push_back(values[slot]);
    AF_RETURN_IF_ERROR(
        CallHook(*hooks_[h], "AfterRun", [&] { return hooks_[h]->AfterRun(&context, mine); }));
  }
  if (context.stop_requested()) stop_requested_ = true;
  return Status::OK();
}

Status MonitoredTrainingSession::StepDeadlineError(const Status& s, double elapsed_ms) const {
  const int64_t deadline = options_.step_timeout_ms;
  const std::string ms = std::to_string(deadline) + " ms";
  // The runtime's timers start after this clock did: a step that used up the whole
  // deadline passed this one; an earlier end is a blocking op's own timeout.
  if (deadline > 0 && elapsed_ms >= 0.95 * static_cast<double>(deadline)) {
    return DeadlineExceeded("the step passed the monitored session's step deadline of " + ms +
                            " (MonitoredTrainingSessionOptions.step_timeout_ms): " + s.message());
  }
  return DeadlineExceeded(
      "the step ended with DeadlineExceeded after " + std::to_string(int64_t(elapsed_ms)) +
      " ms, before the monitored session's step deadline of " +
      (deadline > 0 ? ms : std::string("none")) + " (a blocking op's own timeout): " + s.message());
}

Status MonitoredTrainingSession::Run(const std::vector<std::pair<Output, Tensor>>& feeds,
                                     const std::vector<Output>& fetches,
                                     std::vector<Tensor>* outputs) {
  FeedList feed_list;
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (!feeds[i].first.valid()) return EmptyOutputError("feed", i);
    feed_list.emplace_back(feeds[i].first.name(), feeds[i].second);
  }
  AF_ASSIGN_OR_RETURN(OutputFetches split, SplitOutputFetches(fetches));
  std::vector<Tensor> values;
  AF_RETURN_IF_ERROR(Run(feed_list, split.fetch_names, split.target_names, &values));
  split.PlaceValues(std::move(values), outputs);
  return Status::OK();
}

bool MonitoredTrainingSession::ShouldStop() const {
  return stop_requested_.load() || coord_->ShouldStop();
}

Status MonitoredTrainingSession::Close() {
  if (closed_) return close_status_;
  closed_ = true;
  Status first;
  auto keep = [&first](const Status& s) {
    if (first.ok() && !s.ok()) first = s;
  };
  if (!last_run_failed_) {
    for (const auto& hook : hooks_) {
      keep(CallHook(*hook, "End", [&] { return hook->End(session_.get()); }));
    }
  }
  coord_->RequestStop();
  keep(session_->Close());
  keep(coord_->Join(options_.stop_grace_period_ms));
  close_status_ = first;
  return first;
}

StatusOr<int64_t> MonitoredTrainingSession::global_step() {
  if (closed_) return FailedPrecondition("MonitoredTrainingSession: global_step after Close");
  AF_ASSIGN_OR_RETURN(Output step, GetGlobalStep(*graph_));
  return ReadGlobalStep(session_.get(), step.name());
}

}  // namespace actorflow
