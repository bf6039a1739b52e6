#include "tests/raw_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace actorflow {
namespace subprocess {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

void PutBigEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

std::unique_ptr<RawConnection> RawConnection::Open(int port, std::chrono::milliseconds timeout) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return nullptr;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      close(fd);
      return nullptr;
    }
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t len = sizeof(error);
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
      close(fd);
      return nullptr;
    }
  }
  return std::unique_ptr<RawConnection>(new RawConnection(fd));
}

RawConnection::~RawConnection() { Close(); }

void RawConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::string RawConnection::LocalAddress() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (fd_ < 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

bool RawConnection::Send(const std::string& bytes) {
  size_t sent = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (sent < bytes.size()) {
    ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, MillisLeft(deadline)) != 1) return false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
  return true;
}

int64_t RawConnection::ReadOnce(Clock::time_point deadline) {
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    int ready = poll(&p, 1, MillisLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready != 1) return -1;
    char buf[65536];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) return n;
    if (n == 0) return 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
    return 0;  // reset: closed by the server
  }
}

bool RawConnection::WaitForGreeting(std::chrono::milliseconds timeout) {
  return ReadOnce(Clock::now() + timeout) > 0;
}

bool RawConnection::WaitForClose(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    int64_t n = ReadOnce(deadline);
    if (n == 0) return true;
    if (n < 0) return false;
  }
}

std::string BaspHeader(uint8_t operation, uint32_t payload_len, uint64_t operation_data,
                       uint64_t source_actor, uint64_t dest_actor) {
  std::string header;
  header.push_back(static_cast<char>(operation));
  header.push_back('\0');  // padding
  header.push_back('\0');  // padding
  header.push_back('\0');  // flags
  PutBigEndian(payload_len, 4, &header);
  PutBigEndian(operation_data, 8, &header);
  PutBigEndian(source_actor, 8, &header);
  PutBigEndian(dest_actor, 8, &header);
  return header;
}

namespace {

// The KiB value of the line of /proc/PID/status that starts with `key` ("VmRSS:").
int64_t StatusKiB(pid_t pid, const std::string& key) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream fields(line.substr(key.size()));
    int64_t kib = -1;
    fields >> kib;
    return kib;
  }
  return -1;
}

}  // namespace

int64_t ResidentKiB(pid_t pid) { return StatusKiB(pid, "VmRSS:"); }

int64_t PeakResidentKiB(pid_t pid) { return StatusKiB(pid, "VmHWM:"); }

}  // namespace subprocess
}  // namespace actorflow
