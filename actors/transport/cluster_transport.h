// How an actor system of this process talks to other tasks: CAF's middleman, over
// TLS when transport security is on (actors/transport/transport_security.h). Every actor
// system that publishes or connects goes through here, so that one setting covers
// servers, clients and model servers alike. Includes CAF: actors/*.cc and tools/*.cc.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_CLUSTER_TRANSPORT_H_
#define ACTORFLOW_ACTORS_TRANSPORT_CLUSTER_TRANSPORT_H_

#include <cstdint>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "actors/transport/guarded_transport.h"
#include "actors/transport/server_limits.h"

namespace actorflow {

// Loads the middleman (and, with TLS, CAF's OpenSSL module with the process's
// certificate, key and CA), the failure detector (BASP heartbeats and the silence
// after which a connection is closed: `limits.peer_timeout_ms`), and the wire's
// message types.
// The middleman's backend enforces `limits` on connections and what peers send, over
// plain TCP and TLS alike (actors/transport/guarded_transport.h).
void ConfigureClusterTransport(caf::actor_system_config& cfg,
                               const TransportLimits& limits = TransportLimits());

// Publishes `actor` on host:port (0: any free port) over its system's transport,
// with SO_REUSEADDR (a restarted task binds its port again at once).
template <class Handle>
caf::expected<uint16_t> PublishOnTransport(const Handle& actor, uint16_t port,
                                           const std::string& host) {
  caf::actor_system& system = actor.home_system();
  if (system.has_openssl_manager()) {
    return PublishOverGuardedTls(system, caf::actor_cast<caf::strong_actor_ptr>(actor),
                                 system.message_types(actor), port, host);
  }
  return system.middleman().publish(actor, port, host.c_str(), /*reuse=*/true);
}

// Connects to the actor published at host:port over the system's transport.
// Blocking (see actors/transport/connect.h).
template <class Handle>
caf::expected<Handle> ConnectOnTransport(caf::actor_system& system, const std::string& host,
                                         uint16_t port) {
  if (system.has_openssl_manager()) {
    auto found = ConnectOverGuardedTls(system, system.message_types(caf::detail::type_list<Handle>{}),
                                       host, port);
    if (!found) return std::move(found.error());
    return caf::actor_cast<Handle>(std::move(*found));
  }
  return system.middleman().remote_actor<Handle>(host, port);
}

// Makes the next ConnectOnTransport to the node of `found` (an actor that
// ConnectOnTransport returned) open a new connection. CAF's middleman keeps what it
// found at a host and port until that actor is down, and hands it out again without
// connecting; a found actor whose route was lost while it stayed alive for CAF (see
// ConnectToServer) would be handed out for ever.
void ForgetConnectedActor(caf::actor_system& system, const caf::actor_addr& found);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_CLUSTER_TRANSPORT_H_
