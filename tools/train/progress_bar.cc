#include "tools/train/progress_bar.h"

#include <algorithm>
#include <cstdio>

namespace actorflow {
namespace cli {
namespace {

constexpr int kProgressBarWidth = 24;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

// "4.2s", "3m05s".
std::string FormatBarSeconds(double seconds) {
  char buffer[32];
  if (seconds < 60) {
    std::snprintf(buffer, sizeof(buffer), "%.1fs", seconds);
  } else {
    const int total = static_cast<int>(seconds + 0.5);
    std::snprintf(buffer, sizeof(buffer), "%dm%02ds", total / 60, total % 60);
  }
  return buffer;
}

}  // namespace

ProgressBar::ProgressBar(std::ostream& out, int64_t total_steps, bool interactive)
    : out_(out),
      total_steps_(total_steps),
      interactive_(interactive),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  next_report_step_ = total_steps_ > 0 ? std::max<int64_t>(1, total_steps_ / 10) : 100;
}

void ProgressBar::Update(int64_t step, double loss) {
  step_ = step;
  loss_sum_ += loss;
  ++loss_count_;
  if (interactive_) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ >= kRedrawInterval || (total_steps_ > 0 && step_ >= total_steps_)) {
      last_draw_ = now;
      Print();
    }
    return;
  }
  if (step_ >= next_report_step_) {
    Print();
    const int64_t every = total_steps_ > 0 ? std::max<int64_t>(1, total_steps_ / 10) : 100;
    while (next_report_step_ <= step_) next_report_step_ += every;
  }
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  if (interactive_) {
    Print();
    out_ << "\n";
    out_.flush();
  } else if (loss_count_ > 0) {
    Print();  // the steps since the last 10% line
  }
}

void ProgressBar::Print() {
  if (loss_count_ > 0) {
    shown_loss_ = loss_sum_ / static_cast<double>(loss_count_);
    loss_sum_ = 0.0;
    loss_count_ = 0;
  }
  if (interactive_) {
    out_ << "\r" << Line() << "\033[K";  // clear what a longer earlier line left
  } else {
    out_ << Line() << "\n";
  }
  out_.flush();
}

std::string ProgressBar::Line() const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(step_) / elapsed : 0.0;
  std::string line;
  char buffer[160];
  if (total_steps_ > 0) {
    const double fraction =
        std::min(1.0, static_cast<double>(step_) / static_cast<double>(total_steps_));
    if (interactive_) {
      const int filled = static_cast<int>(fraction * kProgressBarWidth);
      line = "[" + std::string(filled, '#') + std::string(kProgressBarWidth - filled, '.') + "] ";
    }
    std::snprintf(buffer, sizeof(buffer), "%3d%% step %lld/%lld", static_cast<int>(fraction * 100),
                  static_cast<long long>(step_), static_cast<long long>(total_steps_));
  } else {
    std::snprintf(buffer, sizeof(buffer), "step %lld", static_cast<long long>(step_));
  }
  line += buffer;
  std::snprintf(buffer, sizeof(buffer), "  loss %.4f  %.0f steps/s", shown_loss_, rate);
  line += buffer;
  if (total_steps_ > 0 && rate > 0) {
    const double remaining = static_cast<double>(std::max<int64_t>(0, total_steps_ - step_)) / rate;
    line += "  ETA " + FormatBarSeconds(remaining);
  }
  return line;
}

}  // namespace cli
}  // namespace actorflow
