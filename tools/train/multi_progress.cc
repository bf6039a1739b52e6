#include "tools/train/multi_progress.h"

#include <algorithm>
#include <cstdio>

namespace actorflow {
namespace cli {
namespace {

constexpr int kBarWidth = 20;

// "4.2s", "3m05s".
std::string FormatSeconds(double seconds) {
  char buffer[32];
  if (seconds < 60) {
    std::snprintf(buffer, sizeof(buffer), "%.1fs", seconds);
  } else {
    const long long total = static_cast<long long>(seconds + 0.5);
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds", total / 60, total % 60);
  }
  return buffer;
}

}  // namespace

constexpr std::chrono::milliseconds MultiProgress::kRedrawInterval;

MultiProgress::MultiProgress(int workers, int64_t batch_size, Clock::time_point start)
    : workers_(std::max(1, workers)),
      batch_size_(batch_size),
      start_(start),
      last_frame_(start) {}

std::string MultiProgress::Update(int worker, int64_t step, int64_t planned, double loss,
                                  Clock::time_point now) {
  if (finished_ || worker < 0 || worker >= static_cast<int>(workers_.size())) return "";
  Worker& w = workers_[worker];
  w.step = step;
  w.planned = planned;
  w.loss_sum += loss;
  ++w.loss_count;
  w.reported = true;
  if (drawn_ && now - last_frame_ < kRedrawInterval) return "";
  return Frame(now);
}

std::string MultiProgress::Finish(Clock::time_point now) {
  if (finished_) return "";
  finished_ = true;
  return Frame(now);
}

std::string MultiProgress::Frame(Clock::time_point now) {
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string frame;
  // The previous frame's W lines are overwritten: up to its first line.
  if (drawn_) frame = "\033[" + std::to_string(workers_.size()) + "A";
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = workers_[i];
    if (w.loss_count > 0) {
      w.shown_loss = w.loss_sum / static_cast<double>(w.loss_count);
      w.loss_sum = 0.0;
      w.loss_count = 0;
    }
    frame += "\r" + Line(static_cast<int>(i), w, elapsed) + "\033[K\n";
  }
  drawn_ = true;
  last_frame_ = now;
  return frame;
}

std::string MultiProgress::Line(int index, const Worker& w, double elapsed_seconds) const {
  char buffer[160];
  std::snprintf(buffer, sizeof(buffer), "worker %d ", index);
  std::string line = buffer;
  const double fraction =
      w.planned > 0
          ? std::min(1.0, static_cast<double>(w.step) / static_cast<double>(w.planned))
          : 0.0;
  const int filled = static_cast<int>(fraction * kBarWidth);
  line += "[" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "] ";
  if (!w.reported) return line + "waiting for its first step";
  if (w.planned > 0) {
    std::snprintf(buffer, sizeof(buffer), "%3d%% %lld/%lld", static_cast<int>(fraction * 100),
                  static_cast<long long>(w.step), static_cast<long long>(w.planned));
  } else {
    std::snprintf(buffer, sizeof(buffer), "step %lld", static_cast<long long>(w.step));
  }
  line += buffer;
  const double steps_per_second =
      elapsed_seconds > 0 ? static_cast<double>(w.step) / elapsed_seconds : 0.0;
  std::snprintf(buffer, sizeof(buffer), "  %.0f ex/s  loss %.4f",
                steps_per_second * static_cast<double>(batch_size_), w.shown_loss);
  line += buffer;
  if (w.planned > 0 && steps_per_second > 0) {
    const double left = static_cast<double>(std::max<int64_t>(0, w.planned - w.step));
    line += "  ETA " + FormatSeconds(left / steps_per_second);
  }
  return line;
}

}  // namespace cli
}  // namespace actorflow
