#include "actors/socket_acceptor.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

#include "actors/bulk_socket.h"

namespace actorflow {
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
      return Unavailable(options_.what + " cannot resolve host '" + host + "': " +
                         gai_strerror(rc));
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
      return Unavailable(options_.what + " cannot listen on " + host + ": " +
                         std::strerror(errno));
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    endpoint_ = host + ":" + std::to_string(port_);
    acceptor_ = std::thread([this] { AcceptLoop(); });
    return Status::OK();
  }

  uint16_t port() const override { return port_; }
  std::string endpoint() const override { return endpoint_; }
  int64_t turned_away() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return turned_away_;
  }

 private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    bool finished = false;
  };

  void AcceptLoop() {
    NameThisThread(options_.accept_thread_name);
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
        ++turned_away_;
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      connections_.emplace_back();
      auto it = std::prev(connections_.end());
      it->fd = fd;
      it->thread = std::thread([this, it] { ServeOne(&*it); });
    }
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
  uint16_t port_ = 0;
  std::string endpoint_;
  std::thread acceptor_;
  mutable std::mutex mu_;
  bool stopping_ = false;
  std::condition_variable stop_cv_;
  std::list<Connection> connections_;
  int64_t turned_away_ = 0;
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
