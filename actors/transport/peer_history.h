// What this process has seen of the peers it connects to, so that a failed
// connection can be named rather than waited out. A peer that refuses while the
// cluster starts may still be starting (TensorFlow 1.x waits for it); one that
// answered this process before and now refuses is down, or restarting, and a wait
// on it would only hide that. CAF-free; thread-safe (one process-wide record).
#ifndef ACTORFLOW_ACTORS_TRANSPORT_PEER_HISTORY_H_
#define ACTORFLOW_ACTORS_TRANSPORT_PEER_HISTORY_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace actorflow {

// Records that the actorflow server at "host:port" answered a connection now.
void NotePeerReached(const std::string& address);

// How long ago the server at "host:port" last answered a connection of this
// process; nullopt when it never did.
std::optional<std::chrono::milliseconds> SincePeerReached(const std::string& address);

// Forgets every address (tests).
void ForgetReachedPeers();

// Why a TCP connection to host:port fails, found by trying one within `wait`: the
// system's words for its errno ("Connection refused", "No route to host", ...),
// "no answer within N ms" when it neither connects nor fails in time, or "" when it
// connects (something listens there now).
std::string ProbeTcpConnect(const std::string& host, uint16_t port,
                            std::chrono::milliseconds wait);

// "1.3 s": milliseconds as seconds with one decimal, for failure messages.
std::string SecondsText(std::chrono::milliseconds d);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_PEER_HISTORY_H_
