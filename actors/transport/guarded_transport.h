// CAF's middleman, guarded against hostile or broken peers: the transport of every
// actor system of this process (actors/transport/cluster_transport.h), over plain TCP
// or TLS.
//
// CAF's BASP reads a 32-byte header and then exactly the payload length the header
// announces, into a buffer it allocates (and zero-fills) first: an announced 4 GiB
// makes the process allocate 4 GiB before a byte of it arrived. Here the network
// backend is CAF's default multiplexer with its connections (scribes) and listeners
// (doormen) replaced by subclasses that:
//   - refuse a read of more than TransportLimits::max_message_bytes, and a first
//     message (CAF's handshake) of more than kMaxHandshakeBytes, by closing the
//     connection before anything is allocated; the BASP broker then drops the
//     connection's state as for any closed connection;
//   - recognise a first frame that is no BASP handshake (random bytes, an HTTP
//     request, a TLS hello) and make BASP refuse it as malformed;
//   - close accepted connections that have not completed CAF's handshake within
//     TransportLimits::handshake_timeout_ms (a thread wakes a few times per timeout
//     and posts the check to the multiplexer);
//   - with TransportLimits::max_connections open, give a new connection the slot of
//     the oldest one still without a handshake after kHandshakeGraceMs (closing
//     that one), or else close the new one at once, after writing it kBusyFrame: a
//     32-byte frame BASP refuses as malformed and the connecting side's transport
//     records, so that its ConnectToServer names the limit (TakeBusyRefusal) rather
//     than a failed handshake; and go on accepting.
// Each refusal is one line on stderr naming the peer and the limit, "actorflow
// transport: refused 127.0.0.1:40312: ...", at most 10 a second (a flood prints a
// count of the lines it did not print).
//
// Over TLS the same holds for TLS connections (guarded_tls.cc): the handshake timed
// out is TLS's and BASP's together, a connection over the limit gets kBusyFrame in
// place of a TLS hello, and the rest is read decrypted. Their peers are
// authenticated by the TLS handshake (mutual TLS) before BASP reads a byte.
//
// Assumes every connection of the actor system speaks BASP (actorflow starts no
// other CAF broker). Includes only CAF's forward declarations. Thread safety:
// LoadGuardedMiddleman is called on a config before its actor system starts; the
// backend runs on the middleman's thread.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_GUARDED_TRANSPORT_H_
#define ACTORFLOW_ACTORS_TRANSPORT_GUARDED_TRANSPORT_H_

#include <cstdint>
#include <set>
#include <string>

#include <caf/fwd.hpp>

#include "actors/transport/server_limits.h"

namespace actorflow {

// Loads CAF's middleman with the guarded backend into `cfg`, with `limits`; raises
// the process's soft limit of open files (up to the hard one) so that
// max_connections fit.
void LoadGuardedMiddleman(caf::actor_system_config& cfg, const TransportLimits& limits);

// Whether a server at `port` refused one of this process's connections because it
// had --max-connections open (the refusal is consumed). Keyed by port alone: a
// connect that fails asks at once, so two servers sharing a port number at the same
// moment is the only confusion.
bool TakeBusyRefusal(uint16_t port);

// With TLS (the system loads caf::openssl::manager and LoadGuardedMiddleman's
// backend): caf::openssl::publish and remote_actor, through guarded connections.
// `interface` is the actor's (or the expected handle's) message types. Blocking.
caf::expected<uint16_t> PublishOverGuardedTls(caf::actor_system& sys,
                                              const caf::strong_actor_ptr& whom,
                                              std::set<std::string> interface, uint16_t port,
                                              const std::string& host);
caf::expected<caf::strong_actor_ptr> ConnectOverGuardedTls(
    caf::actor_system& sys, const std::set<std::string>& interface, const std::string& host,
    uint16_t port);
// ForgetConnectedActor (cluster_transport.h) over TLS: this system's guarded TLS
// middleman actor, whose only state is what it found, ends and is made anew at the
// next connection (connections in flight through it fail, and are retried).
void ForgetOverGuardedTls(caf::actor_system& sys, const caf::actor_addr& found);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_GUARDED_TRANSPORT_H_
