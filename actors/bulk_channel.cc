#include "actors/bulk_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/received_tensor.h"
#include "placement/cluster_spec.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x4B424641;  // "AFBK" in a little-endian dump
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
constexpr uint32_t kMaxRank = 64;
constexpr size_t kPrefixBytes = 16;  // magic, header bytes, payload bytes

// Names the calling thread (at most 15 characters), so that profiles tell the
// channel's threads from the actor threads that started them.
void NameThisThread(const char* name) { pthread_setname_np(pthread_self(), name); }

// Milliseconds left until `deadline` for poll (0 when past it).
int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1 << 30)));
}

// Waits until fd is ready for `events`. With no deadline (nullptr) it waits until
// the socket is ready or shut down. False when the deadline passed, poll failed, or
// `stop_fd` (an eventfd, -1 for none) became readable: a sender that shuts down
// wakes every wait of its writers at once.
bool WaitReady(int fd, short events, const Clock::time_point* deadline, int stop_fd = -1) {
  for (;;) {
    pollfd p[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    int r = poll(p, stop_fd >= 0 ? 2 : 1, deadline ? MillisLeft(*deadline) : -1);
    if (r > 0) return stop_fd < 0 || p[1].revents == 0;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Reads exactly n bytes, every wait bounded by `deadline` (null: unbounded, for an
// idle connection between frames). False on EOF, error, shutdown or deadline.
bool ReadFull(int fd, void* out, size_t n, const Clock::time_point* deadline) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    if (!WaitReady(fd, POLLIN, deadline)) return false;
    ssize_t got = recv(fd, p, n, MSG_DONTWAIT);
    if (got == 0) return false;
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Writes every byte of the iovecs (advanced in place), within `deadline` and until
// `stop_fd` is signalled.
bool WriteFull(int fd, std::vector<iovec> iov, Clock::time_point deadline, int stop_fd) {
  size_t first = 0;
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = iov.size() - first;
    ssize_t put = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (put < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
      if (!WaitReady(fd, POLLOUT, &deadline, stop_fd)) return false;
      continue;
    }
    auto left = static_cast<size_t>(put);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return true;
}

template <class T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Reads header fields in order; any read past the end marks the header bad.
class HeaderReader {
 public:
  explicit HeaderReader(const std::string& bytes) : bytes_(bytes) {}
  template <class T>
  T Get() {
    T value{};
    if (!ok_ || bytes_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return value;
    }
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    auto n = Get<uint32_t>();
    if (!ok_ || bytes_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool ok_whole() const { return ok_ && pos_ == bytes_.size(); }
  bool ok() const { return ok_; }

 private:
  const std::string& bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// The prefix and header of `frame` (everything before its payload), in one buffer.
std::string EncodeHead(const BulkFrame& frame) {
  std::string head;
  Put<uint32_t>(head, kMagic);
  Put<uint32_t>(head, 0);  // the header's size, filled in below
  Put<uint64_t>(head, static_cast<uint64_t>(frame.tensor.TotalBytes()));
  Put<int64_t>(head, frame.step_id);
  Put<int32_t>(head, static_cast<int32_t>(frame.tensor.dtype()));
  const auto& dims = frame.tensor.shape().dims();
  Put<uint32_t>(head, static_cast<uint32_t>(dims.size()));
  for (int64_t d : dims) Put<int64_t>(head, d);
  Put<uint32_t>(head, static_cast<uint32_t>(frame.device.size()));
  head += frame.device;
  Put<uint32_t>(head, static_cast<uint32_t>(frame.key.size()));
  head += frame.key;
  const auto header_bytes = static_cast<uint32_t>(head.size() - kPrefixBytes);
  std::memcpy(&head[4], &header_bytes, sizeof(header_bytes));
  return head;
}

// A host as the resolver takes it: a bracketed IPv6 address ("[::1]", as cluster
// specs write it) without its brackets.
std::string ResolvableHost(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

// A connected, non-blocking TCP socket to endpoint, or -1 (unreachable, refused,
// not connected within the deadline, or `stop_fd` signalled).
int ConnectWithin(const std::string& endpoint, Clock::time_point deadline, int stop_fd) {
  StatusOr<TaskAddress> parts = ParseHostPort(endpoint);
  if (!parts.ok()) return -1;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string host = ResolvableHost(parts->host);
  const std::string port = std::to_string(parts->port);
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int r = connect(fd, a->ai_addr, a->ai_addrlen);
    bool connected = r == 0;
    if (!connected && errno == EINPROGRESS && WaitReady(fd, POLLOUT, &deadline, stop_fd)) {
      int err = 0;
      socklen_t len = sizeof(err);
      connected = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    if (!connected) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

// ---------------------------------------------------------------------------------
// Receiver

class BulkReceiverImpl : public BulkReceiver {
 public:
  BulkReceiverImpl(BulkReceiverOptions options, Deliver deliver)
      : options_(options), deliver_(std::move(deliver)) {}

  ~BulkReceiverImpl() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      stop_cv_.notify_all();
      // Shutting a socket down wakes the thread polling it (accept and recv alike).
      if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
      for (auto& c : connections_) shutdown(c.fd, SHUT_RDWR);
    }
    if (acceptor_.joinable()) acceptor_.join();
    std::list<Connection> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      left.swap(connections_);
    }
    for (auto& c : left) c.thread.join();
    for (auto& c : left) close(c.fd);
    if (listen_fd_ >= 0) close(listen_fd_);
  }

  Status Listen(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    int rc = getaddrinfo(ResolvableHost(host).c_str(), "0", &hints, &found);
    if (rc != 0) {
      return Unavailable("bulk channel cannot resolve host '" + host + "': " + gai_strerror(rc));
    }
    for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) {
        listen_fd_ = fd;
      } else {
        close(fd);
      }
    }
    freeaddrinfo(found);
    if (listen_fd_ < 0) {
      return Unavailable("bulk channel cannot listen on " + host + ": " + std::strerror(errno));
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    // The host as the task's spec names it: other tasks reach the main port by it too.
    endpoint_ = host + ":" + std::to_string(port_);
    acceptor_ = std::thread([this] { AcceptLoop(); });
    return Status::OK();
  }

  uint16_t port() const override { return port_; }
  std::string endpoint() const override { return endpoint_; }
  BulkChannelStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    bool finished = false;
  };

  void AcceptLoop() {
    NameThisThread("af.bulk.accept");
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      const int accept_errno = errno;
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) {
        if (fd >= 0) close(fd);
        return;
      }
      if (fd < 0) {
        if (accept_errno == EMFILE || accept_errno == ENFILE) {
          // Out of descriptors: the connection stays in the backlog and accept would
          // fail again at once, so wait for descriptors to be freed (or for Stop).
          stop_cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
          continue;
        }
        if (accept_errno == EINTR || accept_errno == ECONNABORTED) continue;
        return;
      }
      ReapFinishedLocked();
      if (static_cast<int>(connections_.size()) >= options_.max_connections) {
        close(fd);
        ++stats_.refused;
        continue;
      }
      connections_.emplace_back();
      auto it = std::prev(connections_.end());
      it->fd = fd;
      it->thread = std::thread([this, it] { ReadLoop(&*it); });
    }
  }

  // Joins the threads of connections whose peers went away (called with mu_ held;
  // a finished thread no longer takes mu_).
  void ReapFinishedLocked() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!it->finished) {
        ++it;
        continue;
      }
      it->thread.join();
      close(it->fd);
      it = connections_.erase(it);
    }
  }

  void ReadLoop(Connection* c) {
    NameThisThread("af.bulk.recv");
    for (;;) {
      Status s = ReadOneFrame(c->fd);
      if (!s.ok()) break;
    }
    // The peer sees the end at once; the descriptor is closed when the thread is
    // joined, so that no other connection can reuse it while this one is listed.
    shutdown(c->fd, SHUT_RDWR);
    std::lock_guard<std::mutex> lock(mu_);
    c->finished = true;
  }

  // Reads and delivers one frame. Not OK ends the connection: the peer closed it
  // (Cancelled) or sent a malformed or late frame (counted as refused).
  Status ReadOneFrame(int fd) {
    char prefix[kPrefixBytes];
    // Between frames the wait is open-ended (an idle connection); once a frame has
    // begun, the rest must come within frame_timeout_ms.
    char first = 0;
    if (!ReadFull(fd, &first, 1, nullptr)) return Cancelled("bulk connection closed");
    auto deadline = Clock::now() + std::chrono::milliseconds(options_.frame_timeout_ms);
    prefix[0] = first;
    if (!ReadFull(fd, prefix + 1, kPrefixBytes - 1, &deadline)) return Refuse("truncated frame");
    uint32_t magic, header_bytes;
    uint64_t payload_bytes;
    std::memcpy(&magic, prefix, 4);
    std::memcpy(&header_bytes, prefix + 4, 4);
    std::memcpy(&payload_bytes, prefix + 8, 8);
    if (magic != kMagic) return Refuse("bad magic");
    if (header_bytes > kMaxHeaderBytes) return Refuse("header too large");
    if (payload_bytes > static_cast<uint64_t>(options_.max_tensor_bytes)) {
      return Refuse("payload over the limit");
    }
    std::string header(header_bytes, '\0');
    if (!ReadFull(fd, header.data(), header.size(), &deadline)) return Refuse("truncated header");
    HeaderReader in(header);
    BulkFrame frame;
    frame.step_id = in.Get<int64_t>();
    auto dtype = in.Get<int32_t>();
    auto rank = in.Get<uint32_t>();
    if (!in.ok() || rank > kMaxRank) return Refuse("bad rank");
    std::vector<int64_t> dims(rank);
    for (auto& d : dims) d = in.Get<int64_t>();
    frame.device = in.GetString();
    frame.key = in.GetString();
    if (!in.ok_whole()) return Refuse("header does not parse");
    Status fits = CheckReceivedTensor(dtype, dims, payload_bytes, -1);
    if (!fits.ok()) return Refuse(fits.message());
    // Every byte is read below: no zero fill.
    frame.tensor = Tensor::Uninitialized(static_cast<DType>(dtype), Shape(dims));
    if (payload_bytes > 0 && !ReadFull(fd, frame.tensor.raw_data(), payload_bytes, &deadline)) {
      return Refuse("truncated payload");
    }
    Status bools = CheckReceivedBools(frame.tensor);
    if (!bools.ok()) return Refuse(bools.message());
    // Counted before it is handed on: whoever sees the tensor's effect (a step that
    // used it ended) sees it counted.
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.frames;
      stats_.bytes += static_cast<int64_t>(payload_bytes);
    }
    if (!deliver_(std::move(frame)).ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      --stats_.frames;
      stats_.bytes -= static_cast<int64_t>(payload_bytes);
      ++stats_.refused;  // the frame is dropped; the connection stays usable
    }
    return Status::OK();
  }

  Status Refuse(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.refused;
    return InvalidArgument("bulk frame refused: " + why);
  }

  const BulkReceiverOptions options_;
  const Deliver deliver_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::string endpoint_;
  std::thread acceptor_;
  mutable std::mutex mu_;
  bool stopping_ = false;
  std::condition_variable stop_cv_;
  std::list<Connection> connections_;
  BulkChannelStats stats_;
};

}  // namespace

StatusOr<std::unique_ptr<BulkReceiver>> BulkReceiver::Listen(const std::string& host,
                                                             BulkReceiverOptions options,
                                                             Deliver deliver) {
  auto receiver = std::make_unique<BulkReceiverImpl>(options, std::move(deliver));
  AF_RETURN_IF_ERROR(receiver->Listen(host));
  return std::unique_ptr<BulkReceiver>(std::move(receiver));
}

// ---------------------------------------------------------------------------------
// Sender

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
    int fd = -1;  // touched only by the writer thread
    Clock::time_point retry_at{};
  };

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
      const bool written = WriteOne(w, p.frame);
      const auto bytes = static_cast<int64_t>(p.frame.tensor.TotalBytes());
      if (!written) p.fallback(std::move(p.frame));
      lock.lock();
      if (written) {
        ++stats.frames;
        stats.bytes += bytes;
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

  // Writes one frame whole, connecting first if needed. False (and the connection
  // closed, further tries paused for retry_after_ms) on any failure.
  bool WriteOne(Writer* w, const BulkFrame& frame) {
    const auto now = Clock::now();
    if (w->fd < 0) {
      if (now < w->retry_at) return false;
      w->fd = ConnectWithin(
          w->endpoint, now + std::chrono::milliseconds(options.connect_timeout_ms), wake_fd);
    }
    if (w->fd >= 0) {
      std::string head = EncodeHead(frame);
      std::vector<iovec> iov{{head.data(), head.size()}};
      if (frame.tensor.TotalBytes() > 0) {
        iov.push_back({frame.tensor.raw_data(), frame.tensor.TotalBytes()});
      }
      if (WriteFull(w->fd, std::move(iov),
                    Clock::now() + std::chrono::milliseconds(options.write_timeout_ms),
                    wake_fd)) {
        return true;
      }
      // A partly written frame leaves the stream mid-frame: the connection goes, and
      // the receiver drops the truncated frame.
      Disconnect(w);
    }
    w->retry_at = Clock::now() + std::chrono::milliseconds(options.retry_after_ms);
    return false;
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
  return impl_->stats;
}

}  // namespace actorflow
