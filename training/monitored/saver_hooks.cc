// CheckpointSaverHook and SummarySaverHook (declared in hooks.h).
#include <utility>

#include "training/monitored/hooks.h"

namespace actorflow {

// --- CheckpointSaverHook --------------------------------------------------------------

CheckpointSaverHook::CheckpointSaverHook(CheckpointSaverHookOptions options)
    : options_(std::move(options)), timer_(options_.save_steps, options_.save_secs) {}

Status CheckpointSaverHook::Begin(Graph* graph) {
  if (options_.checkpoint_dir.empty()) {
    return InvalidArgument("CheckpointSaverHook: checkpoint_dir is empty");
  }
  if ((options_.save_steps > 0) == (options_.save_secs > 0)) {
    return InvalidArgument("CheckpointSaverHook: exactly one of save_steps (" +
                           std::to_string(options_.save_steps) + ") and save_secs (" +
                           std::to_string(options_.save_secs) + ") must be > 0");
  }
  AF_ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(*graph, "CheckpointSaverHook"));
  if (options_.saver == nullptr && options_.scaffold == nullptr) {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Saver> saver, Saver::Create(graph, SaverOptions()));
    options_.saver = std::move(saver);
  }
  return Status::OK();
}

Status CheckpointSaverHook::AfterCreateSession(Session* session, Coordinator*) {
  if (options_.saver == nullptr) options_.saver = options_.scaffold->saver();
  if (options_.saver == nullptr) {
    return FailedPrecondition("CheckpointSaverHook: the graph has no global variable to save");
  }
  AF_ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(session, global_step_));
  return Save(session, step);
}

Status CheckpointSaverHook::BeforeRun(SessionRunContext*, SessionRunArgs* args) {
  args->fetches.push_back(global_step_);
  return Status::OK();
}

Status CheckpointSaverHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  AF_ASSIGN_OR_RETURN(int64_t stale, StepValue(values.results[0]));
  // The fetched step may precede this run's increment: confirm before saving.
  if (!timer_.ShouldTrigger(stale + 1)) return Status::OK();
  AF_ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(context->session(), global_step_));
  if (!timer_.ShouldTrigger(step)) return Status::OK();
  return Save(context->session(), step);
}

Status CheckpointSaverHook::End(Session* session) {
  AF_ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(session, global_step_));
  if (timer_.last_step() == step) return Status::OK();
  return Save(session, step);
}

Status CheckpointSaverHook::Save(Session* session, int64_t step) {
  timer_.Update(step);
  auto saved = options_.saver->Save(session, options_.checkpoint_dir, step);
  // A checkpoint of this step exists: an earlier chief's, or the step did not move.
  if (!saved.ok() && saved.status().code() != Code::kAlreadyExists) {
    return saved.status().WithContext("saving a checkpoint of global step " + std::to_string(step));
  }
  saved_steps_.push_back(step);
  return Status::OK();
}

// --- SummarySaverHook -----------------------------------------------------------------

SummarySaverHook::SummarySaverHook(SummarySaverHookOptions options)
    : options_(std::move(options)), timer_(options_.save_steps, 0) {}

Status SummarySaverHook::Begin(Graph* graph) {
  if (options_.save_steps <= 0) {
    return InvalidArgument("SummarySaverHook: save_steps must be > 0, got " +
                           std::to_string(options_.save_steps));
  }
  AF_ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(*graph, "SummarySaverHook"));
  for (const auto& [tag, tensor] : options_.scalars) {
    auto parsed = ParseTensorName(tensor);
    if (!parsed.ok() || graph->FindNode(parsed->first) == nullptr) {
      return NotFound("SummarySaverHook: the tensor '" + tensor + "' of summary '" + tag +
                      "' is not in the graph");
    }
  }
  if (options_.writer == nullptr) {
    if (options_.output_dir.empty()) {
      return InvalidArgument("SummarySaverHook: neither a writer nor an output_dir");
    }
    AF_ASSIGN_OR_RETURN(std::unique_ptr<SummaryWriter> writer,
                        SummaryWriter::Create(options_.output_dir));
    options_.writer = std::move(writer);
  }
  return Status::OK();
}

Status SummarySaverHook::BeforeRun(SessionRunContext*, SessionRunArgs* args) {
  requested_ = !options_.scalars.empty() && (!next_step_ || timer_.ShouldTrigger(*next_step_));
  args->fetches.push_back(global_step_);
  if (requested_) {
    for (const auto& [tag, tensor] : options_.scalars) args->fetches.push_back(tensor);
  }
  return Status::OK();
}

Status SummarySaverHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  AF_ASSIGN_OR_RETURN(int64_t stale, StepValue(values.results[0]));
  int64_t step = stale + 1;
  if (requested_) {
    // Written at the step after this run's increment, as TensorFlow does.
    AF_ASSIGN_OR_RETURN(step, ReadGlobalStep(context->session(), global_step_));
    timer_.Update(step);
    std::vector<std::pair<std::string, float>> scalars;
    size_t k = 1;
    for (const auto& [tag, tensor] : options_.scalars) {
      const Tensor& value = values.results[k++];
      if (value.NumElements() != 1 || value.dtype() == DType::kBool) {
        return InvalidArgument("SummarySaverHook: summary '" + tag +
                               "' needs a one-element numeric tensor, but '" + tensor + "' is " +
                               value.DebugString());
      }
      scalars.emplace_back(tag, static_cast<float>(value.ElementAsDouble(0)));
    }
    AF_RETURN_IF_ERROR(options_.writer->AddScalars(scalars, step));
  }
  next_step_ = step + 1;
  return Status::OK();
}

Status SummarySaverHook::End(Session*) { return options_.writer->Flush(); }

}  // namespace actorflow
