#include "actors/transport/shared_segments.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <thread>

namespace actorflow {
namespace bulk_internal {
namespace {

constexpr size_t kParallelCopyMinBytes = size_t{4} << 20;
constexpr size_t kCopyChunkBytes = size_t{1} << 20;
// Segments are made in whole MiB, so that tensors of nearby sizes reuse them.
constexpr size_t kSegmentGranule = size_t{1} << 20;
// The seals a receiver requires: the file can neither shrink under its map (which
// would turn a read into SIGBUS) nor have its seals changed.
constexpr int kRequiredSeals = F_SEAL_SHRINK | F_SEAL_SEAL;

// One copy split into 1 MiB chunks that the caller and the helper take in turn.
struct CopyJob {
  CopyJob(char* d, const char* s, size_t bytes)
      : dst(d), src(s), n(bytes), chunks((bytes + kCopyChunkBytes - 1) / kCopyChunkBytes) {}
  void Work() {
    for (size_t c; (c = next.fetch_add(1)) < chunks;) {
      const size_t offset = c * kCopyChunkBytes;
      std::memcpy(dst + offset, src + offset, std::min(kCopyChunkBytes, n - offset));
      if (done.fetch_add(1) + 1 == chunks) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      }
    }
  }
  void WaitDone() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done.load() == chunks; });
  }
  char* const dst;
  const char* const src;
  const size_t n;
  const size_t chunks;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex mu;
  std::condition_variable cv;
};

// The process's one copy helper: it takes chunks of whatever copy is in progress; a
// caller never waits for it to start, since the caller takes chunks too.
class CopyHelper {
 public:
  CopyHelper() : thread_([this] { Loop(); }) {}
  ~CopyHelper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Copy(char* dst, const char* src, size_t n) {
    auto job = std::make_shared<CopyJob>(dst, src, n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(job);
    }
    cv_.notify_one();
    job->Work();
    job->WaitDone();
  }

 private:
  void Loop() {
    pthread_setname_np(pthread_self(), "af.bulk.copy");
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      std::shared_ptr<CopyJob> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job->Work();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<CopyJob>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

std::string IdName(uint32_t id) { return "segment " + std::to_string(id); }

}  // namespace

void CopyInParallel(void* dst, const void* src, size_t n) {
  if (n == 0) return;  // dst and src may be null then
  if (n < kParallelCopyMinBytes) {
    std::memcpy(dst, src, n);
    return;
  }
  static CopyHelper helper;
  helper.Copy(static_cast<char*>(dst), static_cast<const char*>(src), n);
}

bool IsUnixSocket(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  return getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
         address.ss_family == AF_UNIX;
}

SegmentPool::~SegmentPool() {
  for (auto& s : by_id_) Unmap(&s);
}

void SegmentPool::Unmap(Segment* s) {
  if (s->data == nullptr) return;
  munmap(s->data, s->capacity);
  close(s->fd);
  mapped_ -= s->capacity;
  *s = Segment{s->id};
}

int SegmentPool::segments() const {
  return static_cast<int>(
      std::count_if(by_id_.begin(), by_id_.end(), [](const Segment& s) { return s.data; }));
}

Segment* SegmentPool::Acquire(size_t bytes) {
  Segment* best = nullptr;
  for (auto& s : by_id_) {
    if (s.data && !s.in_use && s.capacity >= bytes && (!best || s.capacity < best->capacity)) {
      best = &s;
    }
  }
  if (best) {
    best->in_use = true;
    return best;
  }
  const size_t capacity = (bytes + kSegmentGranule - 1) / kSegmentGranule * kSegmentGranule;
  if (capacity == 0 || capacity > max_bytes_) return nullptr;
  for (auto& s : by_id_) {
    if (mapped_ + capacity <= max_bytes_) break;
    if (!s.in_use) Unmap(&s);
  }
  if (mapped_ + capacity > max_bytes_) return nullptr;
  auto slot = std::find_if(by_id_.begin(), by_id_.end(), [](const Segment& s) { return !s.data; });
  if (slot == by_id_.end()) {
    if (by_id_.size() < kMaxSegments) {
      by_id_.push_back(Segment{static_cast<uint32_t>(by_id_.size())});
      slot = by_id_.end() - 1;
    } else {
      // Every id is mapped: a free segment too small for this tensor gives up its id.
      slot = std::find_if(by_id_.begin(), by_id_.end(), [](const Segment& s) { return !s.in_use; });
      if (slot == by_id_.end()) return nullptr;
      Unmap(&*slot);
    }
  }
  int fd = memfd_create("actorflow-bulk", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return nullptr;
  void* data = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(capacity)) == 0 &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0) {
    // Populated now: a segment is made once and filled many times.
    data = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  }
  if (data == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  slot->fd = fd;
  slot->data = static_cast<char*>(data);
  slot->capacity = capacity;
  slot->in_use = true;
  slot->peer_has_fd = false;
  mapped_ += capacity;
  return &*slot;
}

bool SegmentPool::DrainReleases(int fd) {
  char buffer[512];
  for (;;) {
    const ssize_t got = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (got == 0) return false;
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    partial_.append(buffer, static_cast<size_t>(got));
    size_t pos = 0;
    for (; partial_.size() - pos >= kReleaseBytes; pos += kReleaseBytes) {
      uint32_t magic, id;
      std::memcpy(&magic, partial_.data() + pos, 4);
      std::memcpy(&id, partial_.data() + pos + 4, 4);
      if (magic != kReleaseMagic || id >= by_id_.size() || !by_id_[id].in_use) return false;
      by_id_[id].in_use = false;
    }
    partial_.erase(0, pos);
  }
}

ReleaseChannel::ReleaseChannel(int connection_fd)
    : fd_(fcntl(connection_fd, F_DUPFD_CLOEXEC, 0)) {}

ReleaseChannel::~ReleaseChannel() { Close(); }

void ReleaseChannel::Release(uint32_t id) {
  char message[kReleaseBytes];
  std::memcpy(message, &kReleaseMagic, 4);
  std::memcpy(message + 4, &id, 4);
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) return;
  // Never blocks: the sender drains releases before each segment frame, so at most
  // one per segment (64 x 8 bytes) waits in the socket. One that cannot go keeps its
  // segment from being written again, which is safe.
  [[maybe_unused]] const ssize_t sent =
      send(fd_, message, sizeof(message), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void ReleaseChannel::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

struct MappedSegments::Mapping {
  Mapping(void* d, size_t n) : data(d), size(n) {}
  ~Mapping() { munmap(data, size); }
  void* const data;
  const size_t size;
};

Status MappedSegments::Adopt(uint32_t id, int fd, size_t max_bytes) {
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  if (id >= kMaxSegments) {
    return InvalidArgument(IdName(id) + " is not below " + std::to_string(kMaxSegments));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return InvalidArgument(IdName(id) + " is not a memory file");
  }
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kRequiredSeals) != kRequiredSeals) {
    return InvalidArgument(IdName(id) + " is not sealed against shrinking");
  }
  if (st.st_size <= 0 || static_cast<uint64_t>(st.st_size) > max_bytes) {
    return InvalidArgument(IdName(id) + " has " + std::to_string(st.st_size) +
                           " bytes, outside 1.." + std::to_string(max_bytes));
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    return InvalidArgument(IdName(id) + " cannot be mapped: " + std::strerror(errno));
  }
  if (by_id_.size() <= id) by_id_.resize(id + 1);
  by_id_[id] = std::make_shared<Mapping>(data, size);
  return Status::OK();
}

StatusOr<Tensor> MappedSegments::TensorOn(uint32_t id, DType dtype, const Shape& shape,
                                          size_t bytes,
                                          std::shared_ptr<ReleaseChannel> releases) {
  if (id >= by_id_.size() || !by_id_[id]) {
    return InvalidArgument(IdName(id) + " was never mapped");
  }
  std::shared_ptr<Mapping> mapping = by_id_[id];
  if (bytes > mapping->size) {
    return InvalidArgument("a frame of " + std::to_string(bytes) + " bytes on " + IdName(id) +
                           " of " + std::to_string(mapping->size));
  }
  auto buffer = std::make_shared<TensorBuffer>(
      mapping->data, bytes,
      [mapping, releases = std::move(releases), id](void*) { releases->Release(id); },
      MemoryKind::kHost);
  return Tensor(dtype, shape, std::move(buffer));
}

}  // namespace bulk_internal
}  // namespace actorflow
