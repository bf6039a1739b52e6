// CAF's middleman over plain TCP, guarded against hostile or broken peers: the
// transport of every actor system that does not use TLS (actors/transport/cluster_transport.h).
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
// Assumes every connection of the actor system speaks BASP (actorflow starts no
// other CAF broker). With TLS (caf::openssl) this backend is not used: CAF's OpenSSL
// module makes its own scribes, and its peers are authenticated by the TLS handshake
// (mutual TLS) before BASP reads a byte from them.
//
// Includes only CAF's forward declarations. Thread safety: LoadGuardedMiddleman is
// called on a config before its actor system starts; the backend runs on the
// middleman's thread.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_GUARDED_TRANSPORT_H_
#define ACTORFLOW_ACTORS_TRANSPORT_GUARDED_TRANSPORT_H_

#include <cstdint>

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

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_GUARDED_TRANSPORT_H_
