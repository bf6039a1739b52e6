// How this process's connections ended, so that a lost peer can be named with its
// cause. CAF reports a peer's actors down with one reason (remote_link_unreachable)
// whether the peer's end closed the connection or the failure detector closed it
// after a silence; the guarded transport (guarded_connections.h), which sees both,
// records each end here, and whoever names a lost peer asks. CAF-free; thread-safe
// (one process-wide record of the last 64 ends).
#ifndef ACTORFLOW_ACTORS_TRANSPORT_CONNECTION_ENDS_H_
#define ACTORFLOW_ACTORS_TRANSPORT_CONNECTION_ENDS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace actorflow {

enum class ConnectionEnd {
  // The peer's end closed or reset it: its process ended, or its host reset it.
  kClosedByPeer,
  // This process closed it after nothing came for the failure detector's silence
  // (not even heartbeats): the peer hung, or the link between them was cut.
  kClosedAfterSilence,
};

// Records that the connection to `peer` ("ADDR:PORT" of its socket's other end)
// ended `how`, `silent_for` after the last bytes it brought.
void NoteConnectionEnded(const std::string& peer, ConnectionEnd how,
                         std::chrono::milliseconds silent_for);

// A live connection's record: when its last bytes came. CAF's failure detector may
// take a silent connection's actors down before it closes the connection (and the
// transport records the end), so a loss named in between is told by the live
// connection's silence. The transport registers each connection and calls
// BytesArrived on every read (one relaxed store); the registration ends with the
// last owner of the returned pointer.
class ConnectionClock {
 public:
  ConnectionClock(std::string peer, int64_t silent_after_ms);
  void BytesArrived();
  std::chrono::milliseconds SilentFor() const;
  const std::string& peer() const { return peer_; }
  // Whether it has been silent for at least its failure detector's timeout (and
  // has not ended: its end, once recorded, tells instead).
  bool Silent() const;
  void Ended() { ended_.store(true, std::memory_order_relaxed); }

 private:
  const std::string peer_;
  const int64_t silent_after_ms_;  // 0: never taken for silent
  std::atomic<int64_t> last_bytes_ns_;
  std::atomic<bool> ended_{false};
};
std::shared_ptr<ConnectionClock> RegisterConnection(const std::string& peer,
                                                    int64_t silent_after_ms);

// A clause for a failure message naming how the connection to `peer` ended, from
// the ends recorded within `within` before now: those of `peer` ("host:port") when
// there are any, else those of the last 250 ms (a listener knows its peers'
// ephemeral ports, not their task addresses) when they agree; without a recorded
// end, the live connections silent past their timeout (those of `peer`, else all
// of them when exactly one is). E.g. "its connection closed (its
// process ended, or its host reset the connection)", "nothing came from it for
// 2.6 s, not even heartbeats (it hung, or its link was cut)"; "its connection
// closed or went silent" when no recorded end tells.
std::string ConnectionLossCause(const std::string& peer,
                                std::chrono::milliseconds within = std::chrono::seconds(1));

// Forgets every recorded end (tests).
void ForgetConnectionEnds();

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_CONNECTION_ENDS_H_
