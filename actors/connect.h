// Connecting to another node's published actor with a deadline. CAF's
// `middleman().remote_actor` blocks and can wait indefinitely on a peer that accepts
// TCP but never completes the handshake (a port that is not an actorflow server), so
// each attempt runs on a helper thread and the caller waits at most until the
// deadline, retrying refused connections (a task still starting) until then.
//
// Blocking: call only from a thread that may block (a client thread, a detached
// actor), never from an event-based actor's handler.
#ifndef ACTORFLOW_ACTORS_CONNECT_H_
#define ACTORFLOW_ACTORS_CONNECT_H_

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/fwd.hpp>
#include <caf/actor.hpp>

#include "graph/status.h"

namespace actorflow {

// Connects to host:port and checks, with a ping, that an actorflow server answers.
// Unavailable naming `who` (e.g. "/job:ps/task:0") and the address when the deadline
// passes; FailedPrecondition when something else answers on that port.
StatusOr<caf::actor> ConnectToServer(caf::actor_system& system, const std::string& host,
                                     uint16_t port, std::chrono::milliseconds timeout,
                                     const std::string& who);

// Spawns a detached actor answering (connect_atom, host, port, timeout_ms, who) with
// (Status, front actor); it quits after one answer.
caf::actor SpawnConnector(caf::actor_system& system);

// Parses "actorflow://host:port"; InvalidArgument naming the target otherwise.
Status ParseTarget(const std::string& target, std::string* host, uint16_t* port);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CONNECT_H_
