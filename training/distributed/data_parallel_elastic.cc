// WorkerDriver's elastic loop (training/distributed/data_parallel.h): a worker of a synchronous
// training whose membership changes while it runs.
#include <algorithm>
#include <chrono>
#include <string>

#include "graph/steady_clock.h"
#include "training/distributed/data_parallel.h"
#include "training/checkpoint/ps_checkpoint.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;

bool IsPause(const Status& status) {
  return status.code() == Code::kUnavailable &&
         status.message().find(kTrainingPausedText) != std::string::npos;
}

// The global batch of `worker` in the version `membership` describes.
int64_t BatchIndexOf(int worker, const MembershipView& membership) {
  const auto& members = membership.members;
  auto rank = std::find(members.begin(), members.end(), worker);
  return membership.applied_gradients + (rank - members.begin());
}

}  // namespace

Status WorkerDriver::CheckSameModel(const ParameterSnapshot& snapshot) {
  AF_ASSIGN_OR_RETURN(ParameterMap mine, model_->InitialValues());
  for (const auto& [name, value] : mine) {
    auto theirs = snapshot.values.find(name);
    if (theirs == snapshot.values.end()) {
      return InvalidArgument("this worker's model has variable '" + name + "' " +
                             value.shape().ToString() +
                             ", which the training on the ps does not have: a worker must join "
                             "with the same model");
    }
    if (theirs->second.shape() != value.shape() || theirs->second.dtype() != value.dtype()) {
      return InvalidArgument("variable '" + name + "' is " + value.DebugString() +
                             " in this worker's model but " + theirs->second.DebugString() +
                             " on the ps: a worker must join with the same model");
    }
  }
  for (const auto& [name, value] : snapshot.values) {
    if (!mine.count(name)) {
      return InvalidArgument("the training on the ps has variable '" + name +
                             "', which this worker's model does not have: a worker must join "
                             "with the same model");
    }
  }
  return Status::OK();
}

Status WorkerDriver::RunElasticLoop(WorkerReport* report) {
  const int worker = worker_options_.worker;
  if (worker == 0) {
    AF_RETURN_IF_ERROR(client_->Register(worker));
    AF_RETURN_IF_ERROR(InitializeAsChief());
  }
  // A joiner's model is checked before it registers: a mismatched one never becomes a
  // member, so no version waits for it.
  AF_ASSIGN_OR_RETURN(ParameterSnapshot snapshot, client_->Pull(options_.timeout_ms));
  AF_RETURN_IF_ERROR(CheckSameModel(snapshot));
  if (worker != 0) {
    AF_RETURN_IF_ERROR(client_->Register(worker));
    AF_ASSIGN_OR_RETURN(snapshot, client_->Pull(options_.timeout_ms));
  }
  const int64_t total_batches = options_.epochs * elastic_batches_->batches_per_epoch();
  WorkerProgress progress;
  progress.worker = worker;
  progress.total_batches = total_batches;
  progress.planned_steps = total_batches;
  bool have_snapshot = true;
  int64_t highest_step = snapshot.global_step;
  int restore_waits = 0;  // pulls that may still time out waiting for a restore
  int64_t next_checkpoint = options_.checkpoint_every;
  // A ps task went down: its shards switch to their standbys (OK), or the error
  // stands.
  const auto fail_over = [&](const Status& error) -> Status {
    if (error.code() != Code::kUnavailable || IsPause(error)) return error;
    AF_ASSIGN_OR_RETURN(ParameterClient::FailOverReport switched,
                        client_->FailOver(options_.timeout_ms));
    if (switched.to_standby + switched.replaced == 0) return error;
    ++report->ps_failovers;
    std::string restored;
    if (switched.replaced > 0) {
      if (worker != 0) {
        restore_waits = 3;  // pulls wait for the chief's restore (bounded)
      } else {
        if (options_.model_dir.empty()) {
          return FailedPrecondition(error.message() + "; its shard has no standby and there is "
                                    "no checkpoint to restore it from (use --ps-replicas 2, or "
                                    "--checkpoint-dir with --checkpoint-every)");
        }
        AF_ASSIGN_OR_RETURN(PsCheckpointInfo info,
                            RestorePsCheckpoint(client_, options_.model_dir, options_.timeout_ms));
        restored = ", restored from " + info.prefix;
        report->updates_lost += std::max<int64_t>(0, highest_step - info.global_step);
      }
    }
    // Every shard goes to the newest version any of them reached: a standby behind
    // would otherwise make every synchronous pull wait for a version it may never
    // reach (the versions it skips are the updates lost).
    AF_ASSIGN_OR_RETURN(ParameterStats stats, client_->Stats(options_.timeout_ms));
    const int64_t floor = std::max(highest_step, stats.updates_applied);
    AF_RETURN_IF_ERROR(client_->AdvanceGlobalStep(floor, options_.timeout_ms));
    if (worker_options_.progress) {
      progress.failover = "failed over " + std::to_string(switched.to_standby) +
                          " parameter shard(s) to their standbys and replaced " +
                          std::to_string(switched.replaced) + restored + " (" + error.message() +
                          "); going on from global step " + std::to_string(floor);
      worker_options_.progress(progress);
      progress.failover.clear();
    }
    return Status::OK();
  };
  while (true) {
    if (stopped()) return Cancelled("stopped after " + std::to_string(report->steps) + " steps");
    if (!have_snapshot) {
      StatusOr<ParameterSnapshot> pulled = client_->Pull(options_.timeout_ms);
      if (!pulled.ok() && pulled.status().code() == Code::kDeadlineExceeded &&
          restore_waits > 0) {
        --restore_waits;  // the chief is still restoring the replaced shards
        continue;
      }
      if (!pulled.ok()) {
        AF_RETURN_IF_ERROR(fail_over(pulled.status()));
        continue;
      }
      restore_waits = 0;
      snapshot = std::move(pulled).value();
    }
    highest_step = std::max(highest_step, snapshot.global_step);
    have_snapshot = false;
    report->global_step = snapshot.global_step;
    if (snapshot.membership.applied_gradients >= total_batches) return Status::OK();
    Batch batch;
    const int64_t index = BatchIndexOf(worker, snapshot.membership);
    elastic_batches_->At(index, &batch);
    AF_ASSIGN_OR_RETURN(GradientStep step,
                        model_->ComputeGradients(snapshot.values, batch.features, batch.labels));
    ParameterSnapshot next;
    const Clock::time_point push_start = Clock::now();
    StatusOr<PushResult> pushed =
        client_->PushAndPull(snapshot, step.gradients, options_.timeout_ms, &next);
    report->longest_push_seconds = std::max(report->longest_push_seconds, SecondsSince(push_start));
    if (!pushed.ok() && IsPause(pushed.status())) {
      progress.paused = pushed.status().message();
      if (worker_options_.progress) worker_options_.progress(progress);
      continue;  // pulls afresh: the version may have moved while it waited
    }
    if (!pushed.ok() && pushed.status().code() == Code::kFailedPrecondition &&
        pushed.status().message().find(kRegisterAgainText) != std::string::npos) {
      // Evicted at a step deadline (it was too slow, or hung for a while): join again
      // and train from the current version.
      AF_RETURN_IF_ERROR(client_->Register(worker));
      continue;
    }
    if (!pushed.ok() && pushed.status().code() == Code::kAborted) {
      continue;  // the shards were restored while it waited: pull and compute again
    }
    if (!pushed.ok()) {
      AF_RETURN_IF_ERROR(fail_over(pushed.status()));
      continue;
    }
    progress.paused.clear();
    if (worker == 0 && options_.checkpoint_every > 0 && !options_.model_dir.empty() &&
        pushed->global_step >= next_checkpoint) {
      // The chief's coordinated cut, from which a shard without a standby is restored.
      StatusOr<PsCheckpointInfo> saved =
          SavePsCheckpoint(client_, options_.model_dir, -1, options_.timeout_ms);
      if (!saved.ok()) {
        AF_RETURN_IF_ERROR(fail_over(saved.status()));
        continue;
      }
      next_checkpoint = pushed->global_step + options_.checkpoint_every;
    }
    snapshot = std::move(next);
    have_snapshot = true;
    ++report->steps;
    if (pushed->applied) {
      ++report->applied;
    } else {
      ++report->dropped_stale;
    }
    report->last_loss = step.loss;
    report->global_step = pushed->global_step;
    if (worker_options_.progress) {
      progress.step = report->steps;
      progress.epoch = batch.epoch;
      progress.loss = step.loss;
      progress.global_step = pushed->global_step;
      progress.applied = pushed->applied;
      progress.staleness = pushed->staleness;
      progress.members = snapshot.membership.members;
      progress.membership_epoch = snapshot.membership.epoch;
      progress.aggregated = pushed->aggregated;
      progress.batch_index = index;
      worker_options_.progress(progress);
    }
  }
}

}  // namespace actorflow
