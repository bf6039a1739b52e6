// BulkSender (actors/transport/bulk_channel.h): a writer thread and one kept-open connection
// per destination process.
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/transport/bulk_channel.h"
#include "actors/transport/bulk_socket.h"
#include "actors/transport/shared_segments.h"

namespace actorflow {

using bulk_internal::Clock;
using bulk_internal::ConnectWithin;
using bulk_internal::EncodeHead;
using bulk_internal::IsUnixSocket;
using bulk_internal::kBulkLocalName;
using bulk_internal::kSegmentFdAttached;
using bulk_internal::NameThisThread;
using bulk_internal::Segment;
using bulk_internal::SegmentPool;
using bulk_internal::WriteFull;

struct BulkSender::Impl {
  struct Pending {
    BulkFrame frame;
    Fallback fallback;
  };
  // One destination process: its queue, connection and writer thread.
  struct Writer {
    std::string endpoint;
    std::deque<Pending> queue;
    std::condition_variable cv;
    std::thread thread;
    // Touched only by the writer thread: the connection, and its shared segments
    // when it is host-local and sharing is on.
    int fd = -1;
    std::unique_ptr<SegmentPool> pool;
    Clock::time_point retry_at{};
    std::atomic<int> segments{0};  // pool's, for stats()
  };
  enum class Written { kWhole, kShared, kFailed };

  explicit Impl(BulkSenderOptions o)
      : options(o), wake_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Impl() {
    if (wake_fd >= 0) close(wake_fd);
  }

  // Signals wake_fd for good: every writer's connect or write returns at once, and
  // its frame goes to the fallback.
  void WakeWriters() {
    if (wake_fd < 0) return;
    const uint64_t one = 1;
    // Can fail only with EAGAIN, when the counter is already signalled.
    [[maybe_unused]] const ssize_t written = write(wake_fd, &one, sizeof(one));
  }

  void WriteLoop(Writer* w) {
    NameThisThread("af.bulk.send");
    std::unique_lock<std::mutex> lock(mu);
    const auto idle = std::chrono::milliseconds(options.idle_close_ms);
    for (;;) {
      if (!w->cv.wait_for(lock, idle, [&] { return stopping || !w->queue.empty(); })) {
        Retire(w);
        lock.unlock();
        Disconnect(w);
        return;
      }
      if (stopping) break;
      Pending p = std::move(w->queue.front());
      w->queue.pop_front();
      lock.unlock();
      const Written written = WriteOne(w, p.frame);
      const auto bytes = static_cast<int64_t>(p.frame.tensor.TotalBytes());
      if (written == Written::kFailed) p.fallback(std::move(p.frame));
      lock.lock();
      if (written != Written::kFailed) {
        ++stats.frames;
        stats.bytes += bytes;
        if (written == Written::kShared) ++stats.shared_frames;
      } else {
        ++stats.fallbacks;
      }
    }
    // Stopping: what is still queued goes over the fallback.
    std::deque<Pending> left;
    left.swap(w->queue);
    stats.fallbacks += static_cast<int64_t>(left.size());
    lock.unlock();
    for (auto& p : left) p.fallback(std::move(p.frame));
    Disconnect(w);
  }

  static void Disconnect(Writer* w) {
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    w->pool.reset();  // the receiver keeps its maps of what it still holds
    w->segments = 0;
  }

  // Takes an idle writer out of `writers` (called with mu held), so that a peer that
  // went away (a restarted task listens on a new port) leaves no thread or connection
  // behind; a later Send to its endpoint starts a new writer.
  void Retire(Writer* w) {
    auto it = writers.find(w->endpoint);
    retired.push_back(std::move(it->second));
    writers.erase(it);
  }

  // Joins the threads of retired writers (called with mu held; a retired writer's
  // thread no longer takes mu).
  void JoinRetiredLocked() {
    for (auto& w : retired) {
      if (w->thread.joinable()) w->thread.join();
    }
    retired.clear();
  }

  // Writes one frame whole, connecting first if needed: through shared memory when
  // it can, else inline. kFailed (and the connection closed, further tries paused for
  // retry_after_ms) on any failure.
  Written WriteOne(Writer* w, const BulkFrame& frame) {
    const auto now = Clock::now();
    if (w->fd < 0) {
      if (now < w->retry_at) return Written::kFailed;
      w->fd = ConnectWithin(w->endpoint,
                            now + std::chrono::milliseconds(options.connect_timeout_ms), wake_fd,
                            options.host_local ? kBulkLocalName : "");
      if (w->fd >= 0 && options.shared_memory && IsUnixSocket(w->fd)) {
        w->pool = std::make_unique<SegmentPool>(static_cast<size_t>(options.shared_pool_bytes));
      }
    }
    // Reading the receiver's releases may find the connection closed (w->fd < 0).
    Segment* segment = w->fd >= 0 ? SharedSegmentFor(w, frame) : nullptr;
    if (w->fd >= 0) {
      const auto deadline = Clock::now() + std::chrono::milliseconds(options.write_timeout_ms);
      std::string head;
      std::vector<iovec> iov;
      int pass_fd = -1;
      if (segment != nullptr) {
        // The bytes are wholly in the segment before its head is written.
        bulk_internal::CopyInParallel(segment->data, frame.tensor.raw_data(),
                                      frame.tensor.TotalBytes());
        if (!segment->peer_has_fd) pass_fd = segment->fd;
        head = EncodeHead(frame, segment->id, segment->peer_has_fd ? 0 : kSegmentFdAttached);
        iov.push_back({head.data(), head.size()});
      } else {
        head = EncodeHead(frame);
        iov.push_back({head.data(), head.size()});
        if (frame.tensor.TotalBytes() > 0) {
          iov.push_back({frame.tensor.raw_data(), frame.tensor.TotalBytes()});
        }
      }
      if (WriteFull(w->fd, std::move(iov), deadline, wake_fd, pass_fd)) {
        if (segment == nullptr) return Written::kWhole;
        segment->peer_has_fd = true;
        return Written::kShared;
      }
      // A partly written frame leaves the stream mid-frame: the connection goes, and
      // the receiver drops the truncated frame.
      Disconnect(w);
    }
    w->retry_at = Clock::now() + std::chrono::milliseconds(options.retry_after_ms);
    return Written::kFailed;
  }

  // The segment frame's bytes go to, marked in use, or null to write them inline.
  // Reads the receiver's releases first; a connection that turns out closed or that
  // sent anything else is closed (w->fd < 0).
  Segment* SharedSegmentFor(Writer* w, const BulkFrame& frame) {
    const size_t bytes = frame.tensor.TotalBytes();
    if (!w->pool || bytes < static_cast<size_t>(options.shared_min_bytes) ||
        frame.tensor.dtype() == DType::kBool ||
        frame.tensor.memory_kind() != MemoryKind::kHost) {
      return nullptr;
    }
    if (!w->pool->DrainReleases(w->fd)) {
      Disconnect(w);
      return nullptr;
    }
    Segment* segment = w->pool->Acquire(bytes);
    w->segments = w->pool->segments();
    return segment;
  }

  const BulkSenderOptions options;
  // Readable once Shutdown began (-1 if no eventfd could be made: then a writer in
  // a blocked write ends only at its write timeout).
  const int wake_fd;
  mutable std::mutex mu;
  bool stopping = false;
  std::map<std::string, std::unique_ptr<Writer>> writers;
  std::vector<std::unique_ptr<Writer>> retired;
  BulkChannelStats stats;
};

BulkSender::BulkSender(BulkSenderOptions options) : impl_(std::make_unique<Impl>(options)) {}

BulkSender::~BulkSender() { Shutdown(); }

void BulkSender::Send(const std::string& endpoint, BulkFrame frame, Fallback fallback) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (impl_->stopping) {
    ++impl_->stats.fallbacks;
    lock.unlock();
    fallback(std::move(frame));
    return;
  }
  impl_->JoinRetiredLocked();
  auto& slot = impl_->writers[endpoint];
  if (!slot) {
    slot = std::make_unique<Impl::Writer>();
    slot->endpoint = endpoint;
    Impl::Writer* w = slot.get();
    w->thread = std::thread([impl = impl_.get(), w] { impl->WriteLoop(w); });
  }
  slot->queue.push_back(Impl::Pending{std::move(frame), std::move(fallback)});
  slot->cv.notify_one();
}

void BulkSender::Shutdown() {
  std::vector<Impl::Writer*> writers;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    impl_->WakeWriters();
    for (auto& [endpoint, w] : impl_->writers) {
      w->cv.notify_one();
      writers.push_back(w.get());
    }
  }
  for (auto* w : writers) w->thread.join();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->JoinRetiredLocked();
}

int BulkSender::writers() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int>(impl_->writers.size());
}

BulkChannelStats BulkSender::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  BulkChannelStats stats = impl_->stats;
  for (const auto& [endpoint, w] : impl_->writers) stats.shared_segments += w->segments;
  return stats;
}

}  // namespace actorflow
