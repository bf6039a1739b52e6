// The progress of the W worker threads of `actorflow train --cluster local:...` on a
// terminal: one bar per worker, redrawn in place. This class only turns the workers'
// steps and a clock value into the text to write, so that the frames are testable
// without a terminal or a real clock; the caller writes the text and supplies `now`.
//
//   MultiProgress bars(/*workers=*/2, /*batch_size=*/32, start);
//   out << bars.Update(worker, step, planned, loss, Clock::now());  // often ""
//   ...
//   out << bars.Finish(Clock::now());
//
// A frame is W lines, one per worker in index order, each ending in "\n":
//
//   worker 0 [##########..........]  50% 200/400  1523 ex/s  loss 0.4312  ETA 2.6s
//
// (the bar, the step of the planned steps, the examples per second since the start,
// the mean loss of the steps since the previous frame and the time left at that
// rate). Every frame after the first starts with ESC[<W>A (cursor up W lines) and
// each line with "\r" and ends with ESC[K (erase the rest of a longer earlier line),
// so that it overwrites the previous frame. Update returns a frame at most every
// kRedrawInterval (the first one at once) and "" otherwise; Finish returns the final
// frame whatever the time, once (then ""). After a frame the cursor is on the line
// below it, so text written after Finish follows the bars.
//
// Thread safety: none; the caller serializes the calls (the workers report from
// their own threads).
#ifndef ACTORFLOW_TOOLS_TRAIN_MULTI_PROGRESS_H_
#define ACTORFLOW_TOOLS_TRAIN_MULTI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace actorflow {
namespace cli {

class MultiProgress {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kRedrawInterval{100};

  // `workers` lines (at least 1); `batch_size` rows per step (for examples/s);
  // `start`: when the run started (the rates and ETAs count from it).
  MultiProgress(int workers, int64_t batch_size, Clock::time_point start);

  // Worker `worker` (0..workers-1; others are ignored) ended step `step` (1-based) of
  // `planned` (<= 0: unknown) with batch loss `loss`. Returns a frame or "".
  std::string Update(int worker, int64_t step, int64_t planned, double loss,
                     Clock::time_point now);

  // The final frame (once; "" afterwards).
  std::string Finish(Clock::time_point now);

 private:
  struct Worker {
    int64_t step = 0;
    int64_t planned = 0;
    double loss_sum = 0.0;  // since the previous frame
    int64_t loss_count = 0;
    double shown_loss = 0.0;
    bool reported = false;
  };

  std::string Frame(Clock::time_point now);
  std::string Line(int index, const Worker& w, double elapsed_seconds) const;

  std::vector<Worker> workers_;
  int64_t batch_size_;
  Clock::time_point start_;
  Clock::time_point last_frame_;
  bool drawn_ = false;
  bool finished_ = false;
};

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_MULTI_PROGRESS_H_
