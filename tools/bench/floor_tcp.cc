#include "tools/bench/floor_tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench/bench_util.h"

namespace actorflow {
namespace bench {
namespace {

constexpr int kWarmUpRoundTrips = 200;
constexpr size_t kMaxSinkBuffer = size_t{64} << 20;

// Closes a socket when it goes out of scope.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Moves all `n` bytes through `fd`: send when `out`, else recv. A blocking socket
// waits in the kernel (bounded by SO_RCVTIMEO / SO_SNDTIMEO); with `poll` the socket
// is never waited on, and the loop gives up once `deadline` passed. False on EOF, an
// error, or a timeout.
bool MoveAll(int fd, char* p, size_t n, bool out, bool poll, Clock::time_point deadline) {
  const int flags = (out ? MSG_NOSIGNAL : 0) | (poll ? MSG_DONTWAIT : 0);
  for (unsigned spins = 1; n > 0; ++spins) {
    const ssize_t r = out ? send(fd, p, n, flags) : recv(fd, p, n, flags);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0 && !out) return false;  // EOF
    const bool would_block = errno == EAGAIN || errno == EWOULDBLOCK;
    if (r < 0 && errno != EINTR && !(poll && would_block)) return false;
    if (poll && (spins & 1023) == 0 && Clock::now() > deadline) return false;
  }
  return true;
}

bool ReadFull(int fd, void* data, size_t n) {
  return MoveAll(fd, static_cast<char*>(data), n, false, false, Clock::time_point());
}
bool WriteFull(int fd, const void* data, size_t n) {
  return MoveAll(fd, static_cast<char*>(const_cast<void*>(data)), n, true, false,
                 Clock::time_point());
}
bool PollReadFull(int fd, char* p, size_t n, Clock::time_point deadline) {
  return MoveAll(fd, p, n, false, true, deadline);
}
bool PollWriteFull(int fd, const char* p, size_t n, Clock::time_point deadline) {
  return MoveAll(fd, const_cast<char*>(p), n, true, true, deadline);
}

void SetNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// One connection of the server; an error ends only this connection.
void ServeConnection(int fd) {
  char kind = 0;
  if (!ReadFull(fd, &kind, 1)) return;
  char ping[kPingBytes];
  switch (static_cast<TcpCase>(kind)) {
    case TcpCase::kEcho:
      while (ReadFull(fd, ping, kPingBytes) && WriteFull(fd, ping, kPingBytes)) {
      }
      return;
    case TcpCase::kPollingEcho: {
      // The client's end of the connection ends the loop; no deadline of our own.
      const auto never = Clock::time_point::max();
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      while (PollReadFull(fd, ping, kPingBytes, never) &&
             PollWriteFull(fd, ping, kPingBytes, never)) {
      }
      return;
    }
    case TcpCase::kSink: {
      uint64_t block = 0;
      if (!ReadFull(fd, &block, sizeof(block))) return;
      std::vector<char> buffer(std::clamp<uint64_t>(block, 1, kMaxSinkBuffer));
      uint64_t total = 0;
      while (true) {
        const ssize_t r = recv(fd, buffer.data(), buffer.size(), 0);
        if (r > 0) {
          total += static_cast<uint64_t>(r);
        } else if (r == 0) {
          break;
        } else if (errno != EINTR) {
          return;
        }
      }
      WriteFull(fd, &total, sizeof(total));
      return;
    }
  }
}

// A connection to 127.0.0.1:port for `kind`: refused connects are retried until
// kTcpDeadline; reads and writes time out after it.
StatusOr<int> Connect(int port, TcpCase kind) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const auto deadline = Clock::now() + kTcpDeadline;
  auto backoff = std::chrono::milliseconds(1);
  int fd = -1;
  while (true) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Unavailable(Errno("socket"));
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
    const int error = errno;
    close(fd);
    if (error != ECONNREFUSED && error != EINTR) {
      return Unavailable("connecting to 127.0.0.1:" + std::to_string(port) + ": " +
                         std::strerror(error));
    }
    if (Clock::now() + backoff > deadline) {
      return Unavailable("nothing accepted connections on 127.0.0.1:" + std::to_string(port) +
                         " within " + std::to_string(kTcpDeadline.count()) + " s");
    }
    std::this_thread::sleep_for(backoff);  // a retry's pause, bounded by the deadline
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
  SetNoDelay(fd);
  timeval limit{};
  limit.tv_sec = kTcpDeadline.count();
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  const char k = static_cast<char>(kind);
  if (!WriteFull(fd, &k, 1)) {
    close(fd);
    return Unavailable(Errno("writing to 127.0.0.1:" + std::to_string(port)));
  }
  return fd;
}

}  // namespace

Status ServeTcp() {
  Socket listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.fd() < 0) return Unavailable(Errno("socket"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener.fd(), 4) != 0 ||
      getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Unavailable(Errno("listening on 127.0.0.1"));
  }
  std::printf("port %d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  while (true) {
    const int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return Unavailable(Errno("accept"));
    }
    Socket connection(fd);
    SetNoDelay(fd);
    ServeConnection(fd);
  }
}

StatusOr<double> TcpRoundTripUs(int port, int round_trips, bool polling) {
  AF_ASSIGN_OR_RETURN(int fd, Connect(port, polling ? TcpCase::kPollingEcho : TcpCase::kEcho));
  Socket socket(fd);
  if (polling) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  char ping[kPingBytes], pong[kPingBytes];
  std::memset(ping, 'p', sizeof(ping));
  std::vector<double> us;
  us.reserve(static_cast<size_t>(round_trips));
  for (int i = -kWarmUpRoundTrips; i < round_trips; ++i) {
    const auto start = Clock::now();
    const auto deadline = start + kTcpDeadline;
    const bool ok = polling ? PollWriteFull(fd, ping, kPingBytes, deadline) &&
                                  PollReadFull(fd, pong, kPingBytes, deadline)
                            : WriteFull(fd, ping, kPingBytes) && ReadFull(fd, pong, kPingBytes);
    if (!ok) {
      return Unavailable("the echo on 127.0.0.1:" + std::to_string(port) +
                         " did not answer within " + std::to_string(kTcpDeadline.count()) + " s");
    }
    if (i >= 0) us.push_back(1e6 * SecondsSince(start));
  }
  return Summarize(us).median;
}

StatusOr<double> TcpGbPerS(int port, size_t block_bytes, double seconds) {
  AF_ASSIGN_OR_RETURN(int fd, Connect(port, TcpCase::kSink));
  Socket socket(fd);
  const uint64_t header = block_bytes;
  const std::vector<char> block(block_bytes, 'b');
  const std::string where = "the sink on 127.0.0.1:" + std::to_string(port);
  if (!WriteFull(fd, &header, sizeof(header))) return Unavailable(Errno("writing to " + where));
  uint64_t sent = 0;
  const auto start = Clock::now();
  while (SecondsSince(start) < seconds) {
    if (!WriteFull(fd, block.data(), block.size()))
      return Unavailable(Errno("writing to " + where));
    sent += block_bytes;
  }
  shutdown(fd, SHUT_WR);
  uint64_t received = 0;
  if (!ReadFull(fd, &received, sizeof(received))) {
    return Unavailable(where + " did not confirm the bytes within " +
                       std::to_string(kTcpDeadline.count()) + " s");
  }
  const double elapsed = SecondsSince(start);
  if (received != sent) {
    return Internal(where + " received " + std::to_string(received) + " bytes of " +
                    std::to_string(sent));
  }
  return static_cast<double>(sent) / elapsed / 1e9;
}

}  // namespace bench
}  // namespace actorflow
