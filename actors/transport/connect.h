// Connecting to another node's published actor with a deadline. CAF's
// `middleman().remote_actor` blocks and can wait indefinitely on a peer that accepts
// TCP but never completes the handshake (a port that is not an actorflow server), so
// each attempt runs on a helper thread and the caller waits at most until the
// deadline, retrying refused connections (a task still starting) until then.
//
// Blocking: call only from a thread that may block (a client thread, a detached
// actor), never from an event-based actor's handler. Includes CAF (through the
// front's protocol): include only from actors/*.cc and tools/*.cc.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_CONNECT_H_
#define ACTORFLOW_ACTORS_TRANSPORT_CONNECT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "actors/protocol/front_protocol.h"
#include "graph/status.h"

namespace actorflow {

using connect_atom = caf::atom_constant<caf::atom("connect")>;

// A helper that connects on its own thread (SpawnConnector):
//   (connect_atom, string host, uint16 port, int64 timeout_ms, string who)
//       -> (Status, FrontActor)   ConnectToServer's outcome; the actor then quits.
using ConnectorActor = caf::typed_actor<
    caf::replies_to<connect_atom, std::string, uint16_t, int64_t, std::string>::with<Status,
                                                                                       FrontActor>>;

// Connects to host:port and checks that an actorflow server answers: the published
// actor must have FrontActor's interface (CAF checks it at connect time) and answer
// a ping (PingForIdentity). Unavailable naming `who` (e.g. "/job:ps/task:0") and the
// address when the deadline passes before a handshake; DeadlineExceeded when the
// handshake succeeded but no ping was answered; FailedPrecondition when something
// else answers on that port.
// A refused connection is retried while the task may still be starting, with a line
// on standard error every 5 s naming who is missing and why; but an address that
// answered this process before and now refuses fails at once (the task is down or
// restarting: actors/transport/peer_history.h), naming the system's cause. A
// connection whose pings go unanswered for 2 s is made anew (ForgetConnectedActor,
// after a random pause of up to 100 ms): two processes connecting to each other at
// the same moment can each close the connection the other kept (see connect.cc).
StatusOr<FrontActor> ConnectToServer(caf::actor_system& system, const std::string& host,
                                     uint16_t port, std::chrono::milliseconds timeout,
                                     const std::string& who);

// The identity (e.g. "actorflow server /job:ps/replica:0/task:0") that `front`
// answers to a ping, asked up to `deadline` in slices of 2 s: a ping unanswered for a
// slice is sent again, so one lost message costs a slice, not the whole deadline.
// DeadlineExceeded naming `where` and the pings sent when none is answered by then;
// FailedPrecondition naming `where` for an error reply (something that speaks CAF but
// not the front protocol).
StatusOr<std::string> PingForIdentity(caf::actor_system& system, const FrontActor& front,
                                      std::chrono::steady_clock::time_point deadline,
                                      const std::string& where);

// Ends an actor system that made connection attempts: destroys it, unless one of
// its attempts is still blocked inside CAF (a peer that accepted the connection but
// never completed the handshake: a silent port, or a TLS peer that refused this one
// without closing), in which case the system is left to the process's exit, since
// its destructor would wait for that attempt forever, and then the caller goes on at
// once. A destructor that has not returned after 10 s (CAF still holding a detached
// actor: see connect.cc) is likewise left to finish, or not, on its own thread. Either
// way `system` is null afterwards.
void ShutDownClusterSystem(std::unique_ptr<caf::actor_system>& system);

// Spawns a detached ConnectorActor; it quits after one answer.
ConnectorActor SpawnConnector(caf::actor_system& system);

// Parses "actorflow://host:port"; InvalidArgument naming the target otherwise.
Status ParseTarget(const std::string& target, std::string* host, uint16_t* port);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_CONNECT_H_
