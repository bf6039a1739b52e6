// Transport security of cluster traffic: TLS through CAF's OpenSSL module, for every
// connection between tasks and from clients (servers, remote sessions, parameter
// clients, model servers with --cluster).
//
// The settings are the process's: SetTransportSecurity (the command line's
// --tls-cert/--tls-key/--tls-ca, or --cluster-secret-file), else the environment
// variables ACTORFLOW_TLS_CERT, ACTORFLOW_TLS_KEY and ACTORFLOW_TLS_CA, else
// ACTORFLOW_CLUSTER_SECRET (the secret itself: actors/transport/cluster_secret.h derives the
// certificates from it). With a certificate and key, this process
// publishes and connects over TLS only; with a CA as well, it accepts and connects
// to peers only when their certificate is signed by that CA (mutual TLS), so a
// plain-TCP peer, or one whose certificate another CA signed, is refused during the
// handshake, before any message is read. Every task of a cluster and every client
// must use the same CA.
//
// CAF-free. Thread safety: set before the first actor system starts; read anywhere.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_TRANSPORT_SECURITY_H_
#define ACTORFLOW_ACTORS_TRANSPORT_TRANSPORT_SECURITY_H_

#include <string>

#include "graph/status.h"

namespace actorflow {

struct TlsConfig {
  std::string certificate;  // PEM file of this process's certificate
  std::string key;          // PEM file of its private key
  std::string ca;           // PEM file of the CA that signs every peer (mutual TLS)

  bool enabled() const { return !certificate.empty(); }
};

// InvalidArgument naming the flag: a certificate without a key (or the reverse), a
// CA without a certificate; NotFound naming a file that cannot be read.
Status ValidateTlsConfig(const TlsConfig& tls);

// Replaces the process's settings (after ValidateTlsConfig).
Status SetTransportSecurity(const TlsConfig& tls);
// The settings in effect (SetTransportSecurity's, else the environment's).
TlsConfig TransportSecurity();

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_TRANSPORT_SECURITY_H_
