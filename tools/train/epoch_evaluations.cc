#include "tools/train/epoch_evaluations.h"

#include <cmath>

namespace actorflow {
namespace cli {

EpochEvaluations::EpochEvaluations(bool enabled, int64_t steps_per_epoch)
    : enabled_(enabled && steps_per_epoch > 0),
      steps_per_epoch_(steps_per_epoch),
      started_(Clock::now()) {}

void EpochEvaluations::AfterStep(int64_t step,
                                 const std::function<StatusOr<EvalResult>()>& evaluate) {
  if (!enabled_ || !status_.ok() || step % steps_per_epoch_ != 0) return;
  const Clock::time_point now = Clock::now();
  seconds_.push_back(std::chrono::duration<double>(now - started_ - evaluating_).count());
  StatusOr<EvalResult> eval = evaluate();
  evaluating_ += Clock::now() - now;
  if (!eval.ok()) {
    status_ = eval.status().WithContext("evaluation after epoch " +
                                        std::to_string(step / steps_per_epoch_));
    return;
  }
  evaluations_.push_back(*eval);
  last_step_ = step;
}

void SetByEpochJson(const std::vector<double>& accuracies, const std::vector<double>& seconds,
                    nlohmann::ordered_json* out) {
  (*out)["accuracy_by_epoch"] = accuracies;
  nlohmann::ordered_json rounded = nlohmann::ordered_json::array();
  // Milliseconds are all a reader can use of them.
  for (double s : seconds) rounded.push_back(std::round(s * 1000.0) / 1000.0);
  (*out)["seconds_by_epoch"] = rounded;
}

void EpochEvaluations::AddJson(const TrainResult& trained, int64_t samples,
                               nlohmann::ordered_json* out) const {
  std::vector<double> accuracies;
  for (const EvalResult& e : evaluations_) accuracies.push_back(e.accuracy);
  SetByEpochJson(accuracies, seconds_, out);
  (*out)["samples_per_second"] =
      trained.seconds > 0 ? static_cast<double>(samples) / trained.seconds : 0.0;
  (*out)["input_wait_fraction"] =
      trained.seconds > 0 ? trained.input_seconds / trained.seconds : 0.0;
}

}  // namespace cli
}  // namespace actorflow
