// How this process's connections ended, so that a lost peer can be named with its
// cause. CAF reports a peer's actors down with one reason (remote_link_unreachable)
// whether the peer's end closed the connection or the failure detector closed it
// after a silence; the guarded transport (guarded_connections.h), which sees both,
// records each end here, and whoever names a lost peer asks. CAF-free; thread-safe
// (one process-wide record of the last 64 ends).
#ifndef ACTORFLOW_ACTORS_TRANSPORT_CONNECTION_ENDS_H_
#define ACTORFLOW_ACTORS_TRANSPORT_CONNECTION_ENDS_H_

#include <chrono>
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

// A clause for a failure message naming how the connection to `peer` ended, from
// the ends recorded within `within` before now: those of `peer` ("host:port") when
// there are any, else those of the last 250 ms (a listener knows its peers'
// ephemeral ports, not their task addresses) when they agree. E.g. "its connection closed (its
// process ended, or its host reset the connection)", "nothing came from it for
// 2.6 s, not even heartbeats (it hung, or its link was cut)"; "its connection
// closed or went silent" when no recorded end tells.
std::string ConnectionLossCause(const std::string& peer,
                                std::chrono::milliseconds within = std::chrono::seconds(1));

// Forgets every recorded end (tests).
void ForgetConnectionEnds();

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_CONNECTION_ENDS_H_
