// CsvReaderRead: TensorFlow's TextLineReader + decode_csv in one op (actorflow
// tensors hold numbers only, so a line never travels as a string). The reader's
// position (the files handed to it, the open file, the line number) is a resource
// of the device, shared by every step that runs the node; when the open file is
// exhausted it dequeues the next file index from the filename queue through the
// task's QueueService, so waiting for a file never blocks a thread.
//
// The filenames come from the graph, hence from whoever sent it: each one goes
// through the context's FileAccessPolicy (kernels/file_access.h) before it is opened,
// and an error names the file, line and column of a bad record but never quotes it.
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <istream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ext/stdio_filebuf.h>

#include "kernels/cpu/queue_kernel_util.h"
#include "kernels/file_access.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

class CsvReaderState : public Resource {
 public:
  explicit CsvReaderState(std::string name) : name_(std::move(name)) {}
  std::string DebugString() const override { return "CsvReader(" + name_ + ")"; }

  std::mutex mu;
  std::deque<int32_t> files;  // handed out by the filename queue, not opened yet
  // The open file: a buffer over a descriptor OpenRegularFileForReading gave (it
  // closes it), read through `in`.
  std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> file;
  std::istream in{nullptr};
  bool open = false;
  std::string path;
  int64_t line_number = 0;

 private:
  std::string name_;
};

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// Parses one field into element 0 of `out` (a scalar of its dtype).
bool ParseField(const std::string& text, DType dtype, Tensor* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE) return false;
  switch (dtype) {
    case DType::kFloat32: *out = Tensor::Scalar(static_cast<float>(value)); return true;
    case DType::kFloat64: *out = Tensor::Scalar(value); return true;
    case DType::kInt32:
    case DType::kInt64: {
      // "2" and "2.0" are integers; "2.5" is not.
      if (value != static_cast<double>(static_cast<int64_t>(value))) return false;
      if (dtype == DType::kInt32) {
        if (value < -2147483648.0 || value > 2147483647.0) return false;
        *out = Tensor::Scalar(static_cast<int32_t>(value));
      } else {
        *out = Tensor::Scalar(static_cast<int64_t>(value));
      }
      return true;
    }
    case DType::kBool: return false;
  }
  return false;
}

class CsvReaderReadKernel : public Kernel {
 public:
  explicit CsvReaderReadKernel(const Node& node)
      : Kernel(node),
        filenames_(node.attr<std::vector<std::string>>("filenames")),
        filename_queue_{node.attr<std::string>("queue_container"),
                        node.attr<std::string>("queue_name")},
        skip_header_lines_(node.attr<int64_t>("skip_header_lines")),
        container_(node.attr<std::string>("container")),
        shared_(!node.attr<std::string>("shared_name").empty()),
        shared_name_(shared_ ? node.attr<std::string>("shared_name") : node.name()) {
    parsed_ = ParseComponentAttrs(node, "record_types", &types_, nullptr);
  }
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}

  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (!parsed_.ok()) return FailAndDone(ctx, parsed_, done);
    if (ctx->queues() == nullptr) return FailAndDone(ctx, NoQueueService(node()), done);
    if (ctx->resources() == nullptr) {
      return FailAndDone(ctx, Internal("no ResourceManager to hold the reader"), done);
    }
    // Without a shared_name the reader's position belongs to this session (as in
    // TensorFlow 1): another client's graph with a reader of the same name on the same
    // server starts its own files, never inside this one's.
    const bool private_to_session = !shared_ && ctx->session_scope() != 0;
    auto state = ctx->resources()->LookupOrCreate<CsvReaderState>(
        private_to_session ? SessionContainer(ctx->session_scope()) : container_,
        private_to_session ? container_ + "/" + shared_name_ : shared_name_,
        [this]() -> std::shared_ptr<Resource> { return std::make_shared<CsvReaderState>(shared_name_); });
    if (!state.ok()) return FailAndDone(ctx, state.status(), done);
    Read(ctx, *state, std::move(done));
  }

 private:
  // Reads the next record, asking the filename queue for the next file as needed.
  void Read(KernelContext* ctx, std::shared_ptr<CsvReaderState> state,
            std::function<void()> done) {
    bool finished = false;  // a record was decoded, or an error recorded
    {
      std::lock_guard<std::mutex> lock(state->mu);
      while (!finished) {
        std::string line;
        if (state->open && std::getline(state->in, line)) {
          ++state->line_number;
          if (Trim(line).empty()) continue;
          Decode(ctx, *state, line);
          finished = true;
          break;
        }
        if (state->open) {
          state->in.rdbuf(nullptr);
          state->file.reset();  // closes the descriptor
          state->open = false;
        }
        if (state->files.empty()) break;
        Status opened = OpenNext(ctx->file_access(), *state);
        if (!opened.ok()) {
          ctx->SetStatus(opened.WithContext(ctx->node().Describe()));
          finished = true;
        }
      }
    }
    // `done` runs outside the lock: it may go on with the step on this thread.
    if (finished) return done();
    // No file left: wait for the filename queue (OutOfRange once it is closed and empty).
    ctx->queues()->Dequeue(
        ctx->step_id(), InSession(filename_queue_, *ctx), -1, 0,
        [this, ctx, state, done](const Status& s, std::vector<Tensor> components) {
          if (!s.ok()) return FailAndDone(ctx, s, done);
          if (components.size() != 1 || components[0].dtype() != DType::kInt32 ||
              components[0].NumElements() != 1) {
            return FailAndDone(ctx,
                               InvalidArgument("the filename queue '" + filename_queue_.Key() +
                                               "' must hold int32 [] file indices"),
                               done);
          }
          {
            std::lock_guard<std::mutex> lock(state->mu);
            state->files.push_back(components[0].data<int32_t>()[0]);
          }
          Read(ctx, state, done);
        });
  }

  // Precondition: state.mu held, state.files not empty. A file `files` refuses is
  // never opened (PermissionDenied naming it).
  Status OpenNext(const FileAccessPolicy* files, CsvReaderState& state) const {
    const int32_t index = state.files.front();
    state.files.pop_front();
    if (index < 0 || index >= static_cast<int32_t>(filenames_.size())) {
      return InvalidArgument("the filename queue gave file index " + std::to_string(index) +
                             ", but the reader has " + std::to_string(filenames_.size()) +
                             " filenames");
    }
    state.path = filenames_[index];
    AF_ASSIGN_OR_RETURN(const std::string allowed, ResolveFilePath(files, state.path));
    AF_ASSIGN_OR_RETURN(const int fd, OpenRegularFileForReading(allowed, state.path));
    state.file = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd, std::ios::in);
    state.in.rdbuf(state.file.get());  // also clears the stream's state
    state.open = true;
    state.line_number = 0;
    std::string skipped;
    for (int64_t i = 0; i < skip_header_lines_ && std::getline(state.in, skipped); ++i) {
      ++state.line_number;
    }
    return Status::OK();
  }

  void Decode(KernelContext* ctx, const CsvReaderState& state, const std::string& line) const {
    const std::string where = state.path + ":" + std::to_string(state.line_number);
    std::vector<std::string> fields;
    std::vector<size_t> columns;
    size_t start = 0;
    while (true) {
      const size_t comma = line.find(',', start);
      fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      columns.push_back(start + 1);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (fields.size() != types_.size()) {
      ctx->Fail(Code::kInvalidArgument, where + ": expected " + std::to_string(types_.size()) +
                                            " fields (record_types), found " +
                                            std::to_string(fields.size()));
      return;
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      Tensor value;
      const std::string text = Trim(fields[i]);
      if (!ParseField(text, types_[i], &value)) {
        // The field's text is not quoted: the file may hold what the graph's sender
        // must not read (the reader would otherwise echo any file line by line).
        ctx->Fail(Code::kInvalidArgument,
                  where + ":" + std::to_string(columns[i]) + ": field " + std::to_string(i + 1) +
                      (text.empty() ? " is empty, not a " : " is not a ") +
                      DTypeName(types_[i]) + " number");
        return;
      }
      ctx->set_output(static_cast<int>(i), std::move(value));
    }
  }

  std::vector<std::string> filenames_;
  QueueRef filename_queue_;
  int64_t skip_header_lines_;
  std::string container_;
  bool shared_;  // a shared_name was given: shared across sessions by it
  std::string shared_name_;
  std::vector<DType> types_;
  Status parsed_;
};

[[maybe_unused]] const bool kReaderKernelsRegistered = [] {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    KernelRegistration r("CsvReaderRead", kDeviceCpu, dtype,
                         MakeKernelFactory<CsvReaderReadKernel>());
  }
  return true;
}();

}  // namespace
}  // namespace actorflow
