// The REST API of `actorflow serve`: TensorFlow Serving's endpoints and JSON over
// cpp-httplib, in front of a ModelServer (actors/serving/model_server.h).
//
//   GET  /v1/models/NAME[/versions/N | /labels/L]             model status
//   GET  /v1/models/NAME[/versions/N | /labels/L]/metadata    signatures
//   POST /v1/models/NAME[/versions/N | /labels/L]:predict     row or columnar format
//   POST /v1/models/NAME[/versions/N | /labels/L]:classify    classifier exports
//   POST /v1/models/NAME[/versions/N | /labels/L]:regress
//   GET  /monitoring/prometheus/metrics                         Prometheus text format
//
// Errors are {"error": "..."} with 400 (malformed JSON, wrong fields, shapes or
// dtypes), 404 (unknown model, version, label, signature or path), 413 (a body over
// max_body_bytes), 408 (a body not received within body_timeout_ms), 503
// (overloaded, more than max_connections connections open, or no version available),
// 504 (past the request deadline), 500 otherwise. A request's failure never affects another's.
//
// Thread safety: the server answers from its own thread pool until destroyed; the
// ModelServer must outlive it.
#ifndef ACTORFLOW_TOOLS_SERVE_SERVING_HTTP_H_
#define ACTORFLOW_TOOLS_SERVE_SERVING_HTTP_H_

#include <cstdint>
#include <memory>
#include <string>

#include "actors/serving/model_server.h"
#include "graph/status.h"

namespace actorflow {
namespace cli {

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 8501;              // 0: any free port
  int threads = 128;            // threads kept warm (each open connection has its own)
  // Requests on connections beyond this many open ones get 503 and their connection
  // closed (a thread of its own answers each, up to 64 more).
  int64_t max_connections = 1024;
  int64_t max_body_bytes = 64 << 20;
  // A request with more rows (instances, examples) gets 413 before it is parsed.
  int64_t max_instances = 100000;
  // A request body not received within this long (from its headers on) gets 408:
  // a client sending a byte a second holds its connection no longer.
  int64_t body_timeout_ms = 30000;
  int keep_alive_timeout_seconds = 2;
};

class ServingHttpServer {
 public:
  // Listens and serves in the background. Unavailable naming the address when it
  // cannot listen there.
  static StatusOr<std::unique_ptr<ServingHttpServer>> Start(ModelServer* models,
                                                            const HttpOptions& options);
  ~ServingHttpServer();
  ServingHttpServer(const ServingHttpServer&) = delete;
  ServingHttpServer& operator=(const ServingHttpServer&) = delete;
  int port() const;

 private:
  struct Impl;
  explicit ServingHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The HTTP status for a Status code (see the top of this file).
int HttpStatusFor(const Status& status);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_SERVE_SERVING_HTTP_H_
