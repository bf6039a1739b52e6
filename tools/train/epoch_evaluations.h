// Evaluation after every epoch of a training run (`actorflow train --dataset ...`):
// each epoch's test accuracy and the training seconds at its end, evaluations
// excluded, for the JSON result's "accuracy_by_epoch" and "seconds_by_epoch".
//
//   EpochEvaluations epochs(/*enabled=*/true, steps_per_epoch);
//   classifier->Train(input, steps, [&](const TrainProgress& p) {
//     epochs.AfterStep(p.step, [&] { return classifier->Evaluate(test); });
//   });
//
// Thread safety: one thread (the one that trains).
#ifndef ACTORFLOW_TOOLS_TRAIN_EPOCH_EVALUATIONS_H_
#define ACTORFLOW_TOOLS_TRAIN_EPOCH_EVALUATIONS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/status.h"
#include "training/estimators/dnn_classifier.h"

namespace actorflow {
namespace cli {

// Sets "accuracy_by_epoch" and "seconds_by_epoch" (rounded to milliseconds) in `out`,
// one entry per evaluated epoch: what one process and a cluster's chief report.
void SetByEpochJson(const std::vector<double>& accuracies, const std::vector<double>& seconds,
                    nlohmann::ordered_json* out);

class EpochEvaluations {
 public:
  // Disabled: AfterStep does nothing. The training clock starts here.
  EpochEvaluations(bool enabled, int64_t steps_per_epoch);

  // After training step `step` (counted from 1 in the Train call): at the end of an
  // epoch, runs `evaluate` and records it. Its first error is kept (status()) and no
  // evaluation runs after it.
  void AfterStep(int64_t step, const std::function<StatusOr<EvalResult>()>& evaluate);

  const Status& status() const { return status_; }
  // Whether the last evaluation came after step `steps_run` (the run's last step),
  // so that it is the run's final evaluation: final().
  bool HasFinal(int64_t steps_run) const {
    return !evaluations_.empty() && last_step_ == steps_run;
  }
  const EvalResult& final() const { return evaluations_.back(); }

  // "accuracy_by_epoch", "seconds_by_epoch", "samples_per_second" (`samples` trained
  // over trained.seconds) and "input_wait_fraction" (trained.input_seconds over
  // trained.seconds).
  void AddJson(const TrainResult& trained, int64_t samples, nlohmann::ordered_json* out) const;

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  int64_t steps_per_epoch_;
  Clock::time_point started_;
  Clock::duration evaluating_{0};
  std::vector<EvalResult> evaluations_;
  std::vector<double> seconds_;  // training seconds at each evaluated epoch's end
  int64_t last_step_ = 0;
  Status status_;
};

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_EPOCH_EVALUATIONS_H_
