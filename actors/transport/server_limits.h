// What a task accepts from its peers and clients: the transport's limits (how big
// one message may be, how many accepted connections may be open at once) and the
// services' limits (how many nodes a session's graph may have, how many bytes one
// fed tensor may hold). `actorflow server` sets them from its flags
// (--max-message-bytes, --max-connections, --max-graph-nodes, --max-tensor-bytes),
// whose names the refusals quote, so that a user knows which flag to raise.
//
// The transport refuses by closing the connection (actors/transport/guarded_transport.h): a
// frame over the limit is never allocated. The services refuse one request with
// ResourceExhausted and go on serving.
//
// CAF-free. Thread safety: plain values and pure functions.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_SERVER_LIMITS_H_
#define ACTORFLOW_ACTORS_TRANSPORT_SERVER_LIMITS_H_

#include <cstdint>
#include <string>

#include "graph/status.h"

namespace actorflow {

// 1 GiB: a message holds one step's feeds or fetches, a partition's graph or a
// variable pulled from a parameter shard; the largest tensors the benchmarks move
// across processes are 16 MiB, so this leaves room for models 60x bigger while a
// corrupt length is still refused before it is allocated. BASP cannot carry more
// than 4 GiB in one message anyway.
inline constexpr int64_t kDefaultMaxMessageBytes = int64_t{1} << 30;
// Accepted connections open at once: each task of a cluster holds one to each
// other task, each client one to its master's task.
inline constexpr int64_t kDefaultMaxConnections = 1024;
// Half of a message, so that a fed tensor at the limit still fits in one.
inline constexpr int64_t kDefaultMaxTensorBytes = int64_t{512} << 20;
inline constexpr int64_t kDefaultMaxGraphNodes = 1000000;
// The first message of every connection is CAF's handshake (node id, application
// id, the published actor's interface): a few hundred bytes. A peer that announces
// more in its first message is not a CAF node; refusing it before the handshake
// bounds what a stranger can make a task allocate to this much per connection.
inline constexpr int64_t kMaxHandshakeBytes = int64_t{64} << 10;
// An accepted connection must complete CAF's handshake within this long: a CAF
// peer does in milliseconds; one that sends part of a header and stalls (or
// nothing) would otherwise hold its slot for good.
inline constexpr int64_t kDefaultHandshakeTimeoutMs = 10000;
// With --max-connections connections open, a new one takes the slot of the oldest
// that has not completed its handshake after this long (a stalled stranger), so
// that stalled connections cannot keep a real client out.
inline constexpr int64_t kHandshakeGraceMs = 500;
// The failure detector's timeout. A connection that brings nothing (not even CAF's
// heartbeats, HeartbeatIntervalMs below) for SilenceTimeoutMs of it is closed: its
// peer is hung, partitioned or dead, and every actor of that peer this process
// monitors goes down (the reason: remote_link_unreachable). The same default as a
// master's heartbeat timeout (SessionOptions::heartbeat_timeout_in_ms): a lost peer
// is named within 2.75 s (the silence, plus one heartbeat interval). A single
// message that takes longer than the silence to arrive whole is taken for a lost
// peer too: on links that slow, raise it (--heartbeat-timeout-ms).
inline constexpr int64_t kDefaultPeerTimeoutMs = 2000;
// The process's default for TransportLimits::peer_timeout_ms and the servers'
// heartbeat timeout: kDefaultPeerTimeoutMs, unless `--heartbeat-timeout-ms` set it
// (tools/actorflow.cc, before any actor system starts). Thread-safe.
int64_t DefaultPeerTimeoutMs();
void SetDefaultPeerTimeoutMs(int64_t timeout_ms);

// How often a watcher with heartbeat timeout `timeout_ms` pings (a master its
// tasks, a client its master) and how often CAF's heartbeats go out: an eighth of
// it, so that a ping unanswered is noticed within 1.125 timeouts of the hang; never
// more than 250 ms apart, so that a peer with a shorter timeout than this process's
// still hears from it in time (each end closes on its own timeout).
inline constexpr int64_t HeartbeatIntervalMs(int64_t timeout_ms) {
  const int64_t eighth = timeout_ms / 8 > 10 ? timeout_ms / 8 : 10;
  return eighth < 250 ? eighth : 250;
}
// How long a connection may stay silent before the transport closes it: a quarter
// more than the timeout. Where a watcher pings, its "no heartbeat answer" (which
// names the cause) comes first; the transport's closing covers every other
// relationship (a worker and its parameter shards) within 1.375 timeouts.
inline constexpr int64_t SilenceTimeoutMs(int64_t timeout_ms) {
  return timeout_ms + timeout_ms / 4;
}

// The shortest heartbeat timeout a flag may set: with heartbeats at least 10 ms
// apart (HeartbeatIntervalMs), a shorter one would leave fewer than five
// heartbeats per timeout, and a busy peer would be taken for a lost one.
inline constexpr int64_t kMinPeerTimeoutMs = 50;
// InvalidArgument naming `flag` for a timeout below kMinPeerTimeoutMs (zero and
// negative values included: they would make detection impossible).
Status ValidatePeerTimeoutMs(const std::string& flag, int64_t timeout_ms);

struct TransportLimits {
  // A message (BASP payload) announced with more bytes closes its connection.
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
  // Connections accepted beyond this many open ones are closed at once, unless one
  // of them has gone kHandshakeGraceMs without completing its handshake: that one
  // is closed instead.
  int64_t max_connections = kDefaultMaxConnections;
  // An accepted connection without a completed handshake after this long is closed.
  int64_t handshake_timeout_ms = kDefaultHandshakeTimeoutMs;
  // The failure detector of every connection (see kDefaultPeerTimeoutMs); 0: a silent
  // connection is never closed for its silence.
  int64_t peer_timeout_ms = DefaultPeerTimeoutMs();
};

struct RequestLimits {
  // A session's graph with more nodes is refused (open_atom).
  int64_t max_graph_nodes = kDefaultMaxGraphNodes;
  // A step whose fed tensor has more bytes is refused (remote_step_atom).
  int64_t max_tensor_bytes = kDefaultMaxTensorBytes;
};

// InvalidArgument naming the flag when a limit is not positive.
Status ValidateLimits(const TransportLimits& transport, const RequestLimits& requests);

// ResourceExhausted "graph has N nodes, over --max-graph-nodes M" when over.
Status CheckGraphNodes(int64_t nodes, const RequestLimits& limits);
// ResourceExhausted "feed 'NAME' has N bytes, over --max-tensor-bytes M" when over.
Status CheckFedTensorBytes(const std::string& feed, int64_t bytes, const RequestLimits& limits);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_SERVER_LIMITS_H_
