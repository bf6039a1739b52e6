#include "actors/transport/socket_acceptor.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

#include "actors/transport/bulk_socket.h"

namespace actorflow {

bool LocalSocketAddress(const std::string& local_name, const std::string& endpoint,
                        sockaddr_un* address, socklen_t* length) {
  const std::string name = "actorflow/" + local_name + "/" + endpoint;
  *address = sockaddr_un{};
  address->sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, then the name (not NUL-terminated); no file,
  // so nothing is left behind by a process that dies.
  if (name.size() + 1 > sizeof(address->sun_path)) return false;
  std::memcpy(address->sun_path + 1, name.data(), name.size());
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return true;
}

namespace {

using bulk_internal::NameThisThread;
using bulk_internal::ResolvableHost;

class SocketAcceptorImpl : public SocketAcceptor {
 public:
  SocketAcceptorImpl(SocketAcceptorOptions options, Serve serve)
      : options_(std::move(options)), serve_(std::move(serve)) {}

  ~SocketAcceptorImpl() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      stop_cv_.notify_all();
      // The eventfd wakes the accept loop's poll; shutting a connection down wakes
      // the thread reading it.
      if (stop_fd_ >= 0) {
        const uint64_t one = 1;
        ssize_t ignored = write(stop_fd_, &one, sizeof(one));
        (void)ignored;
      }
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
    if (local_fd_ >= 0) close(local_fd_);
    if (stop_fd_ >= 0) close(stop_fd_);
  }

  Status Listen(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    int rc = getaddrinfo(ResolvableHost(host).c_str(), "0", &hints, &found);
    if (rc != 0) {
      return Unavailable(options_.what + " cannot resolve host '" + host + "': " +
                         gai_strerror(rc));
    }
    for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) {
        listen_fd_ = fd;
      } else {
        close(fd);
      }
    }
    freeaddrinfo(found);
    if (listen_fd_ < 0) {
      return Unavailable(options_.what + " cannot listen on " + host + ": " +
                         std::strerror(errno));
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    endpoint_ = host + ":" + std::to_string(port_);
    stop_fd_ = eventfd(0, EFD_CLOEXEC);
    if (stop_fd_ < 0) {
      return Unavailable(options_.what + " cannot make its stop signal: " + std::strerror(errno));
    }
    if (!options_.local_name.empty()) ListenLocally();
    acceptor_ = std::thread([this] { AcceptLoop(); });
    return Status::OK();
  }

  uint16_t port() const override { return port_; }
  std::string endpoint() const override { return endpoint_; }
  int64_t turned_away() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return turned_away_;
  }
  int64_t local_connections() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return local_connections_;
  }

 private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    bool finished = false;
  };

  // The host-local socket beside the TCP one; without it (a name too long, or taken,
  // which a live listener of the same endpoint would mean) peers use TCP.
  void ListenLocally() {
    sockaddr_un address;
    socklen_t length = 0;
    if (!LocalSocketAddress(options_.local_name, endpoint_, &address, &length)) return;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || listen(fd, 64) != 0) {
      close(fd);
      return;
    }
    local_fd_ = fd;
  }

  void AcceptLoop() {
    NameThisThread(options_.accept_thread_name);
    for (;;) {
      pollfd p[3] = {{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}, {local_fd_, POLLIN, 0}};
      if (poll(p, local_fd_ >= 0 ? 3 : 2, -1) < 0 && errno != EINTR) return;
      for (int i = 1; i < 3; ++i) {
        if (p[i].fd < 0 || p[i].revents == 0) continue;
        if (!AcceptOne(p[i].fd, /*local=*/i == 2)) return;
      }
      if (p[0].revents != 0) return;
    }
  }

  // Takes one waiting connection of listening socket `listen_fd`; false when the
  // acceptor stops or the socket failed.
  bool AcceptOne(int listen_fd, bool local) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    const int accept_errno = errno;
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) {
      if (fd >= 0) close(fd);
      return false;
    }
    if (fd < 0) {
      if (accept_errno == EMFILE || accept_errno == ENFILE) {
        // Out of descriptors: the connection stays in the backlog and accept would
        // fail again at once, so wait for descriptors to be freed (or for Stop).
        stop_cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
        return true;
      }
      return accept_errno == EINTR || accept_errno == ECONNABORTED ||
             accept_errno == EAGAIN || accept_errno == EWOULDBLOCK;
    }
    ReapFinishedLocked();
    if (static_cast<int>(connections_.size()) >= options_.max_connections) {
      close(fd);
      ++turned_away_;
      return true;
    }
    if (local) {
      ++local_connections_;
    } else {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    connections_.emplace_back();
    auto it = std::prev(connections_.end());
    it->fd = fd;
    it->thread = std::thread([this, it] { ServeOne(&*it); });
    return true;
  }

  // Joins the threads of connections that ended (called with mu_ held; a finished
  // thread no longer takes mu_).
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

  void ServeOne(Connection* c) {
    NameThisThread(options_.connection_thread_name);
    serve_(c->fd);
    // The peer sees the end at once; the descriptor is closed when the thread is
    // joined, so that no other connection can reuse it while this one is listed.
    shutdown(c->fd, SHUT_RDWR);
    std::lock_guard<std::mutex> lock(mu_);
    c->finished = true;
  }

  const SocketAcceptorOptions options_;
  const Serve serve_;
  int listen_fd_ = -1;
  int local_fd_ = -1;  // the host-local socket, or -1
  int stop_fd_ = -1;   // an eventfd: written once when the acceptor stops
  uint16_t port_ = 0;
  std::string endpoint_;
  std::thread acceptor_;
  mutable std::mutex mu_;
  bool stopping_ = false;
  std::condition_variable stop_cv_;
  std::list<Connection> connections_;
  int64_t turned_away_ = 0;
  int64_t local_connections_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<SocketAcceptor>> SocketAcceptor::Listen(const std::string& host,
                                                                 SocketAcceptorOptions options,
                                                                 Serve serve) {
  auto acceptor = std::make_unique<SocketAcceptorImpl>(std::move(options), std::move(serve));
  AF_RETURN_IF_ERROR(acceptor->Listen(host));
  return std::unique_ptr<SocketAcceptor>(std::move(acceptor));
}

}  // namespace actorflow
