#include "tools/train/train_summaries.h"

#include <algorithm>
#include <filesystem>

namespace actorflow {
namespace cli {

TrainSummaries::TrainSummaries(std::string logdir, int64_t batch_size, double learning_rate,
                               std::ostream& warnings)
    : logdir_(std::move(logdir)),
      warnings_(warnings),
      batch_size_(batch_size),
      learning_rate_(learning_rate) {}

void TrainSummaries::SetBatchAndRate(int64_t batch_size, double learning_rate) {
  std::lock_guard<std::mutex> lock(mu_);
  batch_size_ = batch_size;
  learning_rate_ = learning_rate;
}

void TrainSummaries::Progress(int worker, int64_t step, int64_t planned_steps, double loss) {
  if (!enabled()) return;
  const int64_t planned = std::max<int64_t>(planned_steps, 1);
  const int64_t tenth = std::max<int64_t>(planned / 10, 1);
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_) return;
  Window& w = windows_[worker];
  w.loss_sum += loss;
  ++w.count;
  if (step % tenth != 0 && step != planned) return;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - w.start).count();
  std::vector<std::pair<std::string, float>> scalars = {
      {"loss", static_cast<float>(w.loss_sum / w.count)},
      {"learning_rate", static_cast<float>(learning_rate_)}};
  if (seconds > 0) {
    scalars.emplace_back("examples_per_sec",
                         static_cast<float>(static_cast<double>(w.count * batch_size_) / seconds));
  }
  w = Window();
  w.start = now;
  SummaryWriter* writer = WriterLocked(worker);
  if (writer == nullptr) return;
  const Status written = writer->AddScalars(scalars, step);
  if (!written.ok()) WarnLocked(written);
}

void TrainSummaries::End(int worker, int64_t step,
                         const std::vector<std::pair<std::string, float>>& scalars) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  SummaryWriter* writer = WriterLocked(worker);
  if (writer == nullptr) return;
  Status written = writer->AddScalars(scalars, step);
  if (written.ok()) written = writer->Flush();
  if (!written.ok()) WarnLocked(written);
}

SummaryWriter* TrainSummaries::WriterLocked(int worker) {
  if (failed_) return nullptr;
  auto it = writers_.find(worker);
  if (it != writers_.end()) return it->second.get();
  const std::string run =
      (std::filesystem::path(logdir_) / ("worker_" + std::to_string(worker))).string();
  StatusOr<std::unique_ptr<SummaryWriter>> writer = SummaryWriter::Create(run);
  if (!writer.ok()) {
    WarnLocked(writer.status());
    return nullptr;
  }
  return (writers_[worker] = std::move(*writer)).get();
}

void TrainSummaries::WarnLocked(const Status& status) {
  if (failed_) return;
  failed_ = true;
  warnings_ << "warning: --logdir: " << status.ToString() << "; training goes on without logs\n";
  warnings_.flush();
}

}  // namespace cli
}  // namespace actorflow
