#include "actors/transport/peer_history.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;

struct ReachedPeers {
  std::mutex mu;
  std::map<std::string, Clock::time_point> last_reached;
};

ReachedPeers& Peers() {
  static ReachedPeers* peers = new ReachedPeers();  // never destroyed: used at exit
  return *peers;
}

}  // namespace

void NotePeerReached(const std::string& address) {
  ReachedPeers& peers = Peers();
  std::lock_guard<std::mutex> lock(peers.mu);
  peers.last_reached[address] = Clock::now();
}

std::optional<std::chrono::milliseconds> SincePeerReached(const std::string& address) {
  ReachedPeers& peers = Peers();
  std::lock_guard<std::mutex> lock(peers.mu);
  auto it = peers.last_reached.find(address);
  if (it == peers.last_reached.end()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - it->second);
}

void ForgetReachedPeers() {
  ReachedPeers& peers = Peers();
  std::lock_guard<std::mutex> lock(peers.mu);
  peers.last_reached.clear();
}

std::string ProbeTcpConnect(const std::string& host, uint16_t port,
                            std::chrono::milliseconds wait) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return std::string("cannot resolve ") + host + ": " + ::gai_strerror(rc);
  }
  std::string cause = "no address for " + host;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      cause = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc == 0) {
      ::close(fd);
      cause.clear();
      break;
    }
    if (errno != EINPROGRESS) {
      cause = std::strerror(errno);
      ::close(fd);
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, static_cast<int>(wait.count()));
    if (rc == 0) {
      cause = "no answer within " + std::to_string(wait.count()) + " ms";
      ::close(fd);
      continue;
    }
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    ::close(fd);
    if (error == 0) {
      cause.clear();
      break;
    }
    cause = std::strerror(error);
  }
  ::freeaddrinfo(found);
  return cause;
}

std::string SecondsText(std::chrono::milliseconds d) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(d.count()) / 1000.0);
  return text;
}

}  // namespace actorflow
