#include "actors/cluster_transport.h"

#include <chrono>

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "actors/messages.h"
#include "actors/transport_security.h"

namespace actorflow {

void ConfigureClusterTransport(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  // Notice a dead peer's connection within seconds rather than never.
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds(1)});
  const TlsConfig tls = TransportSecurity();
  if (tls.enabled()) {
    cfg.load<caf::openssl::manager>();
    cfg.set("openssl.certificate", tls.certificate);
    cfg.set("openssl.key", tls.key);
    if (!tls.ca.empty()) cfg.set("openssl.cafile", tls.ca);
  }
  RegisterMessageTypes(cfg);
}

}  // namespace actorflow
