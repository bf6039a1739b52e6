#include "actors/transport/transport_security.h"

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>

#include "actors/transport/cluster_secret.h"

namespace actorflow {
namespace {

std::mutex& Mutex() {
  static std::mutex mu;
  return mu;
}
std::optional<TlsConfig>& Configured() {
  static std::optional<TlsConfig> tls;
  return tls;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

Status Readable(const std::string& path, const std::string& flag) {
  std::ifstream in(path);
  if (!in) return NotFound(flag + " '" + path + "' cannot be read");
  return Status::OK();
}

}  // namespace

Status ValidateTlsConfig(const TlsConfig& tls) {
  if (tls.certificate.empty() != tls.key.empty()) {
    return InvalidArgument("--tls-cert and --tls-key go together (one is missing)");
  }
  if (!tls.ca.empty() && tls.certificate.empty()) {
    return InvalidArgument("--tls-ca needs --tls-cert and --tls-key: mutual TLS presents a "
                           "certificate too");
  }
  if (!tls.certificate.empty()) AF_RETURN_IF_ERROR(Readable(tls.certificate, "--tls-cert"));
  if (!tls.key.empty()) AF_RETURN_IF_ERROR(Readable(tls.key, "--tls-key"));
  if (!tls.ca.empty()) AF_RETURN_IF_ERROR(Readable(tls.ca, "--tls-ca"));
  return Status::OK();
}

Status SetTransportSecurity(const TlsConfig& tls) {
  AF_RETURN_IF_ERROR(ValidateTlsConfig(tls));
  std::lock_guard<std::mutex> lock(Mutex());
  Configured() = tls;
  return Status::OK();
}

TlsConfig TransportSecurity() {
  std::lock_guard<std::mutex> lock(Mutex());
  if (Configured()) return *Configured();
  TlsConfig tls{Env("ACTORFLOW_TLS_CERT"), Env("ACTORFLOW_TLS_KEY"), Env("ACTORFLOW_TLS_CA")};
  const std::string secret = Env("ACTORFLOW_CLUSTER_SECRET");
  if (!tls.enabled() && !secret.empty()) {
    // Derived once per process, into memory (actors/transport/cluster_secret.h).
    auto derived = TlsFromClusterSecret(secret);
    if (derived.ok()) tls = *derived;
    // A secret that cannot be used must not mean "no security": refuse everything
    // with a certificate that does not exist (every connection then fails, naming it).
    if (!tls.enabled()) {
      tls = TlsConfig{"/nonexistent/unusable-cluster-secret.pem", "/nonexistent/none", ""};
    }
  }
  Configured() = tls;
  return tls;
}

}  // namespace actorflow
