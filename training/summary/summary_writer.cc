#include "training/summary/summary_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "training/summary/event_file.h"

namespace actorflow {
namespace {

double WallTimeSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Create(const std::string& logdir) {
  if (logdir.empty()) return InvalidArgument("summary logdir is empty");
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) {
    return FailedPrecondition("cannot create summary logdir " + logdir + ": " + ec.message());
  }
  const double now = WallTimeSeconds();
  const std::string base = (std::filesystem::path(logdir) /
                            ("events.out.tfevents." +
                             std::to_string(static_cast<long long>(now)) + "." + HostName()))
                               .string();
  // Two writers opened in one second in one directory get distinct files
  // (TensorBoard reads every file whose name contains "tfevents").
  std::string path = base;
  std::FILE* file = nullptr;
  for (int suffix = 1; file == nullptr; ++suffix) {
    file = std::fopen(path.c_str(), "wbx");
    if (file != nullptr) break;
    if (errno != EEXIST || suffix > 1000) {
      return FailedPrecondition("cannot write summaries in logdir " + logdir + ": " + path +
                                ": " + std::strerror(errno));
    }
    path = base + "." + std::to_string(suffix);
  }
  std::unique_ptr<SummaryWriter> writer(new SummaryWriter(path, file));
  std::lock_guard<std::mutex> lock(writer->mu_);
  AF_RETURN_IF_ERROR(writer->WriteRecordLocked(EncodeFileVersionEvent(now)));
  AF_RETURN_IF_ERROR(writer->FlushLocked());
  return StatusOr<std::unique_ptr<SummaryWriter>>(std::move(writer));
}

SummaryWriter::SummaryWriter(std::string path, std::FILE* file)
    : path_(std::move(path)), file_(file), last_flush_(std::chrono::steady_clock::now()) {}

SummaryWriter::~SummaryWriter() {
  std::lock_guard<std::mutex> lock(mu_);
  static_cast<void>(FlushLocked());  // a destructor cannot report; Flush() can
  std::fclose(file_);
}

Status SummaryWriter::AddScalar(const std::string& tag, float value, int64_t step) {
  return AddScalars({{tag, value}}, step);
}

Status SummaryWriter::AddScalars(const std::vector<std::pair<std::string, float>>& scalars,
                                 int64_t step) {
  const std::string event = EncodeScalarsEvent(WallTimeSeconds(), step, scalars);
  std::lock_guard<std::mutex> lock(mu_);
  AF_RETURN_IF_ERROR(WriteRecordLocked(event));
  const double since_flush =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_flush_).count();
  if (unflushed_records_ >= kFlushEveryRecords || since_flush >= kFlushEverySeconds) {
    return FlushLocked();
  }
  return Status::OK();
}

Status SummaryWriter::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return FlushLocked();
}

Status SummaryWriter::WriteRecordLocked(const std::string& event) {
  if (!error_.ok()) return error_;
  const std::string record = FrameRecord(event);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) {
    error_ = Internal("cannot write summary event file " + path_ + ": " + std::strerror(errno));
    return error_;
  }
  ++unflushed_records_;
  return Status::OK();
}

Status SummaryWriter::FlushLocked() {
  if (!error_.ok()) return error_;
  if (std::fflush(file_) != 0) {
    error_ = Internal("cannot flush summary event file " + path_ + ": " + std::strerror(errno));
    return error_;
  }
  unflushed_records_ = 0;
  last_flush_ = std::chrono::steady_clock::now();
  return Status::OK();
}

}  // namespace actorflow
