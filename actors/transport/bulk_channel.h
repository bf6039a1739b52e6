// A byte channel beside CAF's transport for large tensors between the processes of a
// plain (non-TLS) cluster.
//
// Why: CAF's raw-byte path copies each message into its broker's buffer and sends it
// from the broker's one thread; on loopback it moves a 16 MiB tensor at about half
// the rate of a TCP stream (tools/bench/floor_bench.cc). Here a writer thread per
// destination process writes a tensor's header and its bytes straight from the
// tensor's buffer in one sendmsg, and the receiver reads the bytes straight into the
// buffer of the tensor it hands on. Device actors only queue a frame (never block);
// the receiving device gets the tensor as the same local message a CAF delivery is.
//
// Frame (host byte order; a cluster's processes share one architecture, as CAF's
// raw tensor block already assumes):
//   u32 magic "AFBK" | u32 header bytes | u64 payload bytes | header | payload
//   header: i64 step id | i32 dtype | u32 rank | i64 dims[rank] |
//           u32 device name bytes | device name | u32 key bytes | key
//
// Reliability: a frame that cannot be written whole (no connection within the
// connect deadline, a write past its deadline, the peer gone) goes to the caller's
// fallback, which sends it over CAF: a tensor is never dropped by the channel. The
// receiver refuses a malformed frame (bad magic, sizes over its limits, a header that
// does not describe its payload, a bool byte other than 0/1) by closing that
// connection; the process goes on. Trust: the channel is used only where the CAF
// port itself takes plain, unauthenticated connections; with transport security on,
// servers do not open it and tensors stay on CAF's TLS path.
//
// CAF-free. Thread safety: every method may be called from any thread.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_BULK_CHANNEL_H_
#define ACTORFLOW_ACTORS_TRANSPORT_BULK_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// One tensor on its way to a device of another process.
struct BulkFrame {
  std::string device;  // the receiving device's full name
  int64_t step_id = 0;
  std::string key;  // RendezvousKey::ToString()
  Tensor tensor;
};

struct BulkReceiverOptions {
  // A frame announcing a larger payload closes its connection.
  int64_t max_tensor_bytes = int64_t{512} << 20;
  // Connections beyond this many open ones are closed at once.
  int max_connections = 64;
  // Once a frame has begun, the rest of it must arrive within this long.
  int64_t frame_timeout_ms = 30000;
};

struct BulkChannelStats {
  int64_t frames = 0;     // delivered (receiver) or written whole (sender)
  int64_t bytes = 0;      // their payload bytes
  int64_t refused = 0;    // receiver: connections closed on a malformed frame
  int64_t fallbacks = 0;  // sender: frames handed to the fallback
  // receiver: connections from this host's processes on its host-local socket
  // (actors/transport/socket_acceptor.h), which same-host senders use instead of TCP
  int64_t local_connections = 0;
  // of `frames`: those whose bytes went through shared memory (same host)
  int64_t shared_frames = 0;
  // sender: shared-memory segments mapped now, over its destinations
  int64_t shared_segments = 0;
};

// Listens on host (any free port) and hands every whole, valid frame to `deliver`,
// on the connection's own thread. `deliver` must not block; a non-OK answer (say, an
// unknown device) drops that frame and is counted in `refused`.
class BulkReceiver {
 public:
  using Deliver = std::function<Status(BulkFrame frame)>;
  // Unavailable naming host when it cannot listen.
  static StatusOr<std::unique_ptr<BulkReceiver>> Listen(const std::string& host,
                                                        BulkReceiverOptions options,
                                                        Deliver deliver);
  virtual ~BulkReceiver() = default;  // closes every connection and joins its threads
  virtual uint16_t port() const = 0;
  virtual std::string endpoint() const = 0;  // "host:port", what senders connect to
  virtual BulkChannelStats stats() const = 0;
};

struct BulkSenderOptions {
  int64_t connect_timeout_ms = 2000;
  // A frame not written whole within this long goes to its fallback.
  int64_t write_timeout_ms = 30000;
  // After a failed connection or write, frames to that endpoint go straight to their
  // fallback for this long before the channel connects again.
  int64_t retry_after_ms = 1000;
  // A writer with nothing to send for this long closes its connection and ends.
  int64_t idle_close_ms = 60000;
  // Reach a receiver of this host through its host-local socket rather than TCP
  // (actors/transport/socket_acceptor.h); false: always TCP.
  bool host_local = true;
  // On a host-local connection, tensors of at least shared_min_bytes (bool ones
  // excepted) are copied once into shared memory the receiver maps
  // (actors/transport/shared_segments.h), up to shared_pool_bytes per destination;
  // beyond that, or when every segment is still held by the receiver, inline.
  bool shared_memory = true;
  int64_t shared_min_bytes = int64_t{64} << 10;
  int64_t shared_pool_bytes = int64_t{256} << 20;
};

class BulkSender {
 public:
  // Runs on the writer's thread (or the caller's, after Shutdown) with a frame the
  // channel could not write whole; must not block.
  using Fallback = std::function<void(BulkFrame frame)>;
  explicit BulkSender(BulkSenderOptions options = BulkSenderOptions());
  ~BulkSender();  // Shutdown()
  BulkSender(const BulkSender&) = delete;
  BulkSender& operator=(const BulkSender&) = delete;

  // Queues `frame` for the receiver at endpoint ("host:port") and returns at once.
  // Frames to one endpoint are written in the order they were queued.
  void Send(const std::string& endpoint, BulkFrame frame, Fallback fallback);
  // Hands every queued frame to its fallback, closes the connections and joins the
  // writers; later Sends go straight to their fallback. A frame being written (or
  // its connection being made) is cut off at once and goes to its fallback too, so
  // Shutdown does not wait for a peer that stopped reading. Idempotent.
  void Shutdown();
  BulkChannelStats stats() const;
  // Destinations with a writer now (idle ones end after idle_close_ms).
  int writers() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_BULK_CHANNEL_H_
