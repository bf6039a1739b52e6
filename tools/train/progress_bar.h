// Training progress for the command line: on a terminal, one line redrawn in place
// (carriage return) with a bar, the step, the loss, steps/s and the ETA; on anything
// else (a pipe, a file), a plain line every ~10% of the steps, so that logs stay
// short and readable.
//
//   ProgressBar bar(std::cout, /*total_steps=*/1000, /*interactive=*/isatty(1));
//   for (...) bar.Update(step, loss);
//   bar.Finish();
//
// The loss shown is the mean of the batch losses since the previous report. The clock
// only decides when a terminal line is redrawn (at most every 100 ms) and the rates;
// what is printed on a non-terminal depends on the steps alone.
//
// Thread safety: one thread at a time.
#ifndef ACTORFLOW_TOOLS_TRAIN_PROGRESS_BAR_H_
#define ACTORFLOW_TOOLS_TRAIN_PROGRESS_BAR_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace actorflow {
namespace cli {

class ProgressBar {
 public:
  // total_steps <= 0: unknown (no bar, percentage or ETA; a line every 100 steps).
  ProgressBar(std::ostream& out, int64_t total_steps, bool interactive);

  // Reports that step `step` (1-based, of this run) ended with batch loss `loss`.
  void Update(int64_t step, double loss);
  // Draws the final state (on a terminal, ends the redrawn line).
  void Finish();

 private:
  void Print();
  std::string Line() const;

  std::ostream& out_;
  int64_t total_steps_;
  bool interactive_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  int64_t step_ = 0;
  int64_t next_report_step_ = 0;  // non-terminal: the step of the next line
  double loss_sum_ = 0.0;         // since the previous report
  int64_t loss_count_ = 0;
  double shown_loss_ = 0.0;
  bool finished_ = false;
};

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_PROGRESS_BAR_H_
