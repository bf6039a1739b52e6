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
  // Notice a dead peer's connection within seconds rather than never.
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds(1)});
  if (tls.enabled()) {
    cfg.load<caf::openssl::manager>();
    cfg.set("openssl.certificate", tls.certificate);
    cfg.set("openssl.key", tls.key);
    if (!tls.ca.empty()) cfg.set("openssl.cafile", tls.ca);
  }
  RegisterMessageTypes(cfg);
}

}  // namespace actorflow
