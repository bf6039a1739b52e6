#include "actors/transport/bulk_socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "actors/transport/shared_segments.h"
#include "actors/transport/socket_acceptor.h"
#include "placement/cluster_spec.h"

namespace actorflow {
namespace bulk_internal {
namespace {

template <class T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Milliseconds left until `deadline` for poll (0 when past it).
int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1 << 30)));
}

// recv() that appends the descriptors passed with the bytes to `fds`.
ssize_t ReceiveKeepingFds(int fd, char* out, size_t n, std::vector<int>* fds) {
  iovec iov{out, n};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t got = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got <= 0) return got;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int passed;
      std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds->push_back(passed);
    }
  }
  return got;
}

}  // namespace

// Names the calling thread (at most 15 characters), so that profiles tell the
// channel's threads from the actor threads that started them.
void NameThisThread(const char* name) { pthread_setname_np(pthread_self(), name); }


// Waits until fd is ready for `events`. With no deadline (nullptr) it waits until
// the socket is ready or shut down. False when the deadline passed, poll failed, or
// `stop_fd` (an eventfd, -1 for none) became readable: a sender that shuts down
// wakes every wait of its writers at once.
bool WaitReady(int fd, short events, const Clock::time_point* deadline, int stop_fd) {
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
// It reads first and waits only when nothing is there: a frame's bytes usually are
// (its reader polled for its first byte), and a poll per read was half the system
// calls of a step's round trip.
bool ReadFull(int fd, void* out, size_t n, const Clock::time_point* deadline,
              std::vector<int>* passed_fds) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    ssize_t got = passed_fds ? ReceiveKeepingFds(fd, p, n, passed_fds)
                             : recv(fd, p, n, MSG_DONTWAIT);
    if (got == 0) return false;
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
      if (!WaitReady(fd, POLLIN, deadline)) return false;
      continue;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Writes every byte of the iovecs (advanced in place), within `deadline` and until
// `stop_fd` is signalled.
bool WriteFull(int fd, std::vector<iovec> iov, Clock::time_point deadline, int stop_fd,
               int pass_fd) {
  size_t first = 0;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = iov.size() - first;
    if (pass_fd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    ssize_t put = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (put > 0) pass_fd = -1;  // the descriptor went with these bytes
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

// The prefix and header of `frame` (everything before its payload), in one buffer.
std::string EncodeHead(const BulkFrame& frame, int64_t segment_id, uint32_t segment_flags) {
  std::string head;
  Put<uint32_t>(head, segment_id >= 0 ? kSegmentMagic : kMagic);
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
  if (segment_id >= 0) {
    Put<uint32_t>(head, static_cast<uint32_t>(segment_id));
    Put<uint32_t>(head, segment_flags);
  }
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

// The host-local socket of the acceptor at endpoint, connected, or -1 (none on this
// host, or its backlog is full).
int ConnectLocally(const std::string& endpoint, const std::string& local_name) {
  sockaddr_un address;
  socklen_t length = 0;
  if (!LocalSocketAddress(local_name, endpoint, &address, &length)) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  // A Unix stream connect completes at once or fails (EAGAIN: backlog full).
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int ConnectWithin(const std::string& endpoint, Clock::time_point deadline, int stop_fd,
                  const std::string& local_name) {
  StatusOr<TaskAddress> parts = ParseHostPort(endpoint);
  if (!parts.ok()) return -1;
  if (!local_name.empty()) {
    int fd = ConnectLocally(endpoint, local_name);
    if (fd >= 0) return fd;
  }
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

}  // namespace bulk_internal
}  // namespace actorflow
