// Raw TCP connections to a server on 127.0.0.1, for tests that send it what no CAF
// node would: random bytes, an HTTP request, forged or truncated BASP frames, floods
// of connections, connections that never say anything. Plus the one number those
// tests watch: a process's resident memory.
//
// Every wait is bounded by a deadline (poll), never a sleep.
//
// Thread safety: a RawConnection belongs to one thread.
#ifndef ACTORFLOW_TESTS_RAW_PEER_H_
#define ACTORFLOW_TESTS_RAW_PEER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace actorflow {
namespace subprocess {

class RawConnection {
 public:
  // Connects to 127.0.0.1:port; null when no connection is made within `timeout`.
  static std::unique_ptr<RawConnection> Open(int port, std::chrono::milliseconds timeout);
  ~RawConnection();  // closes the socket
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // "127.0.0.1:PORT" of this end: what the server names as the peer.
  std::string LocalAddress() const;
  // Writes all of `bytes`; false when the server closed the connection first.
  bool Send(const std::string& bytes);
  // Waits for the first bytes the server sends (CAF's server writes its handshake
  // when it accepts): true when some arrived within `timeout`, false when the server
  // closed the connection without a byte, or the time passed.
  bool WaitForGreeting(std::chrono::milliseconds timeout);
  // Reads (and drops) until the server closes the connection: true when it did
  // within `timeout`.
  bool WaitForClose(std::chrono::milliseconds timeout);
  void Close();

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  // Reads once within `deadline`: bytes read, 0 at end of stream (or a reset), -1
  // when nothing arrived in time.
  int64_t ReadOnce(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
};

// A header of CAF 0.17's BASP, 32 bytes in network byte order: operation, two
// padding bytes, flags, payload length, operation data, source and destination
// actor ids. Operation 0 is the server's handshake, 1 the client's.
std::string BaspHeader(uint8_t operation, uint32_t payload_len, uint64_t operation_data = 0,
                       uint64_t source_actor = 0, uint64_t dest_actor = 0);

// VmRSS of process `pid` in KiB (from /proc/PID/status); -1 when it cannot be read.
int64_t ResidentKiB(pid_t pid);
// VmHWM (the peak of VmRSS) of process `pid` in KiB; -1 when it cannot be read.
int64_t PeakResidentKiB(pid_t pid);

}  // namespace subprocess
}  // namespace actorflow

#endif  // ACTORFLOW_TESTS_RAW_PEER_H_
