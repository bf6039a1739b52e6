// A cluster secret as transport security: every task and client that knows the
// secret derives the same certificate authority from it, and signs a certificate of
// its own with it; mutual TLS with that CA (actors/transport/transport_security.h) then admits
// exactly the peers that know the secret.
//
// Why this is a challenge-response proof that never sends the secret: in the TLS
// handshake each side signs the handshake transcript (fresh random values from both
// sides) with its node key and presents a certificate that only a holder of the
// CA's private key could have signed; the CA's private key is HKDF-SHA256 of the
// secret (a P-256 scalar), so only the secret's holders have it. The secret, the CA
// key and the node key never leave the process; a peer without the secret fails the
// handshake and is disconnected before any actorflow message is read.
//
// CAF-free (OpenSSL's libcrypto). Thread safety: the functions are reentrant.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_CLUSTER_SECRET_H_
#define ACTORFLOW_ACTORS_TRANSPORT_CLUSTER_SECRET_H_

#include <string>

#include "actors/transport/transport_security.h"
#include "graph/status.h"

namespace actorflow {

// At least this many bytes (after trimming a final newline): a short secret could be
// guessed offline from a recorded handshake.
inline constexpr size_t kMinClusterSecretBytes = 16;

// The secret in `path` (one final newline dropped). NotFound naming the file when it
// cannot be read; InvalidArgument when it is shorter than kMinClusterSecretBytes or
// when others than its owner may read it (mode & 077).
StatusOr<std::string> ReadClusterSecretFile(const std::string& path);

// Derives the cluster's CA certificate from `secret` and makes a fresh node key and
// certificate signed by it. The three PEMs live in anonymous in-memory files held
// open for the process's lifetime (never on disk, never left behind); the returned
// TlsConfig names them as /proc/self/fd/N paths, valid in this process only.
// InvalidArgument for a short secret; Internal naming the OpenSSL step that failed;
// Unavailable when the in-memory files cannot be made.
StatusOr<TlsConfig> TlsFromClusterSecret(const std::string& secret);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_CLUSTER_SECRET_H_
