// BulkReceiver (actors/bulk_channel.h): an acceptor thread and a thread per
// connection, each reading whole frames into new tensors.
#include "actors/bulk_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/bulk_socket.h"
#include "actors/received_tensor.h"

namespace actorflow {
namespace {

using bulk_internal::Clock;
using bulk_internal::kMagic;
using bulk_internal::kMaxHeaderBytes;
using bulk_internal::kMaxRank;
using bulk_internal::kPrefixBytes;
using bulk_internal::NameThisThread;
using bulk_internal::ReadFull;
using bulk_internal::ResolvableHost;

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

}  // namespace actorflow
