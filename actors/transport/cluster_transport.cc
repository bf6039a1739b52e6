#include "actors/transport/cluster_transport.h"

#include <chrono>

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "actors/transport/guarded_transport.h"
#include "actors/protocol/messages.h"
#include "actors/transport/transport_security.h"

namespace actorflow {

void ConfigureClusterTransport(caf::actor_system_config& cfg, const TransportLimits& limits) {
  const TlsConfig tls = TransportSecurity();
  // Over TLS as well: the connections are made by the guarded backend
  // (PublishOnTransport); with a CA (or a cluster secret) their peers are
  // authenticated by mutual TLS before BASP reads a byte from them.
  LoadGuardedMiddleman(cfg, limits);
  // The failure detector: each side sends a heartbeat every eighth of the peer
  // timeout; a connection silent for SilenceTimeoutMs is closed, and the actors
  // behind it go down for whoever monitors them (a hung, partitioned or dead peer
  // is named like a killed one). Off: CAF's heartbeat each second, and a silent
  // connection is kept for a day.
  const int64_t peer_ms = limits.peer_timeout_ms > 0 ? limits.peer_timeout_ms : 0;
  const auto heartbeat =
      std::chrono::milliseconds(peer_ms > 0 ? HeartbeatIntervalMs(peer_ms) : 1000);
  const std::chrono::milliseconds silence =
      peer_ms > 0 ? std::chrono::milliseconds(SilenceTimeoutMs(peer_ms)) : std::chrono::hours(24);
  cfg.set("middleman.heartbeat-interval", caf::timespan{heartbeat});
  cfg.set("middleman.connection-timeout", caf::timespan{silence});
  if (tls.enabled()) {
    cfg.load<caf::openssl::manager>();
    cfg.set("openssl.certificate", tls.certificate);
    cfg.set("openssl.key", tls.key);
    if (!tls.ca.empty()) cfg.set("openssl.cafile", tls.ca);
  }
  RegisterMessageTypes(cfg);
}

void ForgetConnectedActor(caf::actor_system& system, const caf::actor_addr& found) {
  if (system.has_openssl_manager()) return ForgetOverGuardedTls(system, found);
  // The middleman actor drops the cached results whose actor a down message names;
  // a system message, so outside its typed interface.
  caf::anon_send(caf::actor_cast<caf::actor>(system.middleman().actor_handle()),
                 caf::down_msg{found, caf::exit_reason::unreachable});
}

}  // namespace actorflow
