// StopAtStepHook, StepCounterHook, LoggingTensorHook, NanTensorHook and the helpers
// every hook shares (the savers are in saver_hooks.cc).
#include "training/monitored/hooks.h"

#include <cmath>
#include <iostream>
#include <sstream>

#include "graph/cooperative.h"
#include "training/optimizers/variables.h"

namespace actorflow {

StatusOr<std::string> GlobalStepTensor(const Graph& graph, const std::string& who) {
  auto step = GetGlobalStep(graph);
  if (!step.ok()) {
    return FailedPrecondition(who +
                              " needs the graph's global step (CreateGlobalStep, "
                              "training/optimizers/variables.h): " +
                              step.status().message());
  }
  return step->name();
}

StatusOr<int64_t> StepValue(const Tensor& step) {
  if (step.dtype() == DType::kInt32) {
    auto v = step.scalar<int32_t>();
    if (!v.ok()) return v.status().WithContext("the global step");
    return static_cast<int64_t>(*v);
  }
  auto v = step.scalar<int64_t>();
  if (!v.ok()) return v.status().WithContext("the global step");
  return *v;
}

StatusOr<int64_t> ReadGlobalStep(Session* session, const std::string& global_step) {
  std::vector<Tensor> out;
  Status s = session->Run({}, {global_step}, {}, &out);
  if (!s.ok()) return s.WithContext("reading the global step '" + global_step + "'");
  return StepValue(out[0]);
}

bool SecondOrStepTimer::ShouldTrigger(int64_t step) const {
  if (!last_step_) return true;
  if (step == *last_step_) return false;
  if (every_steps_ > 0) return step >= *last_step_ + every_steps_;
  if (every_secs_ > 0) {
    return CooperativeNowMicros() - last_time_us_ >= every_secs_ * 1000000;
  }
  return false;
}

std::optional<SecondOrStepTimer::Elapsed> SecondOrStepTimer::Update(int64_t step) {
  const int64_t now_us = CooperativeNowMicros();
  std::optional<Elapsed> elapsed;
  if (last_step_) {
    elapsed = Elapsed{static_cast<double>(now_us - last_time_us_) / 1e6, step - *last_step_};
  }
  last_step_ = step;
  last_time_us_ = now_us;
  return elapsed;
}

// --- StopAtStepHook -------------------------------------------------------------------

std::shared_ptr<StopAtStepHook> StopAtStepHook::ForNumSteps(int64_t num_steps) {
  return std::shared_ptr<StopAtStepHook>(new StopAtStepHook(num_steps, -1));
}

std::shared_ptr<StopAtStepHook> StopAtStepHook::AtLastStep(int64_t last_step) {
  return std::shared_ptr<StopAtStepHook>(new StopAtStepHook(-1, last_step));
}

Status StopAtStepHook::Begin(Graph* graph) {
  if (num_steps_ < 0 && last_step_ < 0) {
    return InvalidArgument("StopAtStepHook: num_steps and last_step must be >= 0");
  }
  AF_ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(*graph, "StopAtStepHook"));
  return Status::OK();
}

Status StopAtStepHook::AfterCreateSession(Session* session, Coordinator*) {
  if (num_steps_ < 0) return Status::OK();
  AF_ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(session, global_step_));
  last_step_ = step + num_steps_;
  return Status::OK();
}

Status StopAtStepHook::BeforeRun(SessionRunContext*, SessionRunArgs* args) {
  args->fetches.push_back(global_step_);
  return Status::OK();
}

Status StopAtStepHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  AF_ASSIGN_OR_RETURN(int64_t read, StepValue(values.results[0]));
  // The step was read during the run, perhaps before this run's increment.
  if (read + 1 < last_step_) return Status::OK();
  AF_ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(context->session(), global_step_));
  if (step >= last_step_) context->RequestStop();
  return Status::OK();
}

// --- StepCounterHook ------------------------------------------------------------------

StepCounterHook::StepCounterHook(StepCounterHookOptions options)
    : options_(std::move(options)), timer_(options_.every_n_steps, 0) {}

Status StepCounterHook::Begin(Graph* graph) {
  if (options_.every_n_steps <= 0) {
    return InvalidArgument("StepCounterHook: every_n_steps must be > 0, got " +
                           std::to_string(options_.every_n_steps));
  }
  AF_ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(*graph, "StepCounterHook"));
  return Status::OK();
}

Status StepCounterHook::BeforeRun(SessionRunContext*, SessionRunArgs* args) {
  args->fetches.push_back(global_step_);
  return Status::OK();
}

Status StepCounterHook::AfterRun(SessionRunContext*, const SessionRunValues& values) {
  AF_ASSIGN_OR_RETURN(int64_t step, StepValue(values.results[0]));
  if (!timer_.ShouldTrigger(step)) return Status::OK();
  const std::optional<SecondOrStepTimer::Elapsed> elapsed = timer_.Update(step);
  if (!elapsed || elapsed->seconds <= 0) return Status::OK();
  const double rate = static_cast<double>(elapsed->steps) / elapsed->seconds;
  std::ostream& out = options_.out != nullptr ? *options_.out : std::cerr;
  out << "global_step/sec: " << rate << "\n";
  if (options_.writer != nullptr) {
    AF_RETURN_IF_ERROR(
        options_.writer->AddScalar("global_step/sec", static_cast<float>(rate), step));
  }
  return Status::OK();
}

// --- LoggingTensorHook ----------------------------------------------------------------

LoggingTensorHook::LoggingTensorHook(std::vector<std::string> tensors, int64_t every_n_iter,
                                     std::ostream* out)
    : tensors_(std::move(tensors)), every_n_iter_(every_n_iter), out_(out) {}

Status LoggingTensorHook::Begin(Graph*) {
  if (every_n_iter_ <= 0) {
    return InvalidArgument("LoggingTensorHook: every_n_iter must be > 0, got " +
                           std::to_string(every_n_iter_));
  }
  if (tensors_.empty()) return InvalidArgument("LoggingTensorHook: no tensor to log");
  return Status::OK();
}

Status LoggingTensorHook::BeforeRun(SessionRunContext*, SessionRunArgs* args) {
  logging_ = iteration_ % every_n_iter_ == 0;
  if (logging_) args->fetches = tensors_;
  return Status::OK();
}

Status LoggingTensorHook::AfterRun(SessionRunContext*, const SessionRunValues& values) {
  ++iteration_;
  if (!logging_) return Status::OK();
  std::ostringstream line;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    line << (i == 0 ? "" : ", ") << tensors_[i] << " = " << values.results[i].SummarizeValue();
  }
  (out_ != nullptr ? *out_ : std::cerr) << line.str() << "\n";
  return Status::OK();
}

// --- NanTensorHook --------------------------------------------------------------------

Status NanTensorHook::BeforeRun(SessionRunContext*, SessionRunArgs* args) {
  args->fetches.push_back(loss_tensor_);
  return Status::OK();
}

Status NanTensorHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  const Tensor& loss = values.results[0];
  if (loss.dtype() != DType::kFloat32 && loss.dtype() != DType::kFloat64) return Status::OK();
  bool nan = false;
  for (int64_t i = 0; i < loss.NumElements() && !nan; ++i) {
    nan = std::isnan(loss.ElementAsDouble(i));
  }
  if (!nan) return Status::OK();
  const std::string message =
      "NaN loss during training: tensor '" + loss_tensor_ + "' is " + loss.SummarizeValue(8);
  if (fail_on_nan_loss_) return InvalidArgument(message);
  std::cerr << message << "; stopping (fail_on_nan_loss is false)\n";
  context->RequestStop();
  return Status::OK();
}

}  // namespace actorflow
