// Plain TCP over loopback for floor_bench: what two processes on this machine reach
// with nothing but sockets, the floor under any runtime's cross-process figures.
//
// One server process (ServeTcp) answers one connection at a time; the client's first
// byte names what the connection is for (TcpCase), so that one child process serves
// every case. Every client wait is bounded: connects retry for at most
// kTcpDeadline, blocking reads and writes time out after it (SO_RCVTIMEO,
// SO_SNDTIMEO), polling loops check it. No CAF here.
//
// Thread safety: every function belongs to the thread that calls it.
#ifndef ACTORFLOW_TOOLS_BENCH_FLOOR_TCP_H_
#define ACTORFLOW_TOOLS_BENCH_FLOOR_TCP_H_

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "graph/status.h"

namespace actorflow {
namespace bench {

constexpr std::chrono::seconds kTcpDeadline{10};
constexpr size_t kPingBytes = 64;  // one round trip's message, each way

enum class TcpCase : char {
  kEcho = 'E',         // echoes kPingBytes messages; blocking reads and writes
  kPollingEcho = 'P',  // the same, busy-polling a non-blocking socket
  kSink = 'S',         // reads everything until EOF, then answers the byte count
};

// Listens on 127.0.0.1 (a free port), prints "port N" on stdout, then serves
// connections one after the other until the process is killed. Returns only when
// the listener cannot be set up.
Status ServeTcp();

// Median microseconds of `round_trips` ping-pongs of kPingBytes on a fresh
// connection to 127.0.0.1:port (after a short warm-up), TCP_NODELAY; `polling`:
// both sides busy-poll non-blocking sockets instead of blocking in read().
StatusOr<double> TcpRoundTripUs(int port, int round_trips, bool polling);

// GB/s (1e9 bytes) of blocks of `block_bytes` written back to back for about
// `seconds` to 127.0.0.1:port, counted until the server confirmed every byte.
StatusOr<double> TcpGbPerS(int port, size_t block_bytes, double seconds);

}  // namespace bench
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_BENCH_FLOOR_TCP_H_
