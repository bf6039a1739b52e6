// ModelServer: serves exported model versions (training/serving/servable.h) from replica
// actors, as `actorflow serve` does behind its REST API, and to in-process C++
// callers directly (no HTTP).
//
//   ModelConfig iris{"iris", "/models/iris"};
//   AF_ASSIGN_OR_RETURN(auto server, ModelServer::Start({iris}, ServeOptions()));
//   AF_ASSIGN_OR_RETURN(ServedVersion v, server->Resolve("iris", /*version=*/0, ""));
//   AF_ASSIGN_OR_RETURN(const SignatureDef* sig, v.servable().Signature(""));
//   AF_ASSIGN_OR_RETURN(auto outputs, server->Run(v, *sig, {{"inputs", features}}));
//   // outputs["probabilities"]: float32 [N, 3]. An ensemble of served models:
//   auto votes = server->PredictWithEnsemble({"iris_a", "iris_b"}, {{"inputs", features}},
//                                            "probabilities", EnsembleCombine::kMajorityVote,
//                                            /*timeout_ms=*/100);
//
// Actors: every loaded version has `replicas_per_device` replica actors on each
// device (or each task of ServeOptions::cluster_tasks), each owning a session over
// the version's frozen graph; a request is a
// message to the replica with the fewest requests in flight. With batching, a
// version's batcher actor merges concurrent requests into batches of at most
// max_batch_size rows (waiting at most batch_timeout_micros for more), runs each on a
// replica and splits the outputs back. Back-pressure: a version refuses a request
// with ResourceExhausted when every replica has max_in_flight_per_replica requests
// (or, batching, max_enqueued_batches batches) outstanding: callers answer 503.
//
// Versions: each model's base path is polled (PollNow, and every
// file_system_poll_wait_seconds by a background thread unless 0). Versions that the
// model's policy selects are loaded beside the serving ones (LOADING, then AVAILABLE);
// requests without a version go to the highest AVAILABLE one. A version that leaves
// the policy (or whose directory is deleted) is UNLOADING until its last in-flight
// request finishes, then END: no request fails because of a swap. A version that fails
// to load is END with its error in the status, and the others keep serving.
//
// Thread safety: every method may be called from any thread concurrently.
#ifndef ACTORFLOW_ACTORS_SERVING_MODEL_SERVER_H_
#define ACTORFLOW_ACTORS_SERVING_MODEL_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "training/distributed/ensemble.h"
#include "training/serving/servable.h"

namespace actorflow {

// Which versions of a model are served (TensorFlow Serving's model_version_policy).
struct VersionPolicy {
  enum class Kind { kLatest, kSpecific, kAll };
  Kind kind = Kind::kLatest;
  int64_t num_versions = 1;        // kLatest: the highest this many
  std::vector<int64_t> versions;   // kSpecific
};

struct ModelConfig {
  std::string name;
  std::string base_path;
  VersionPolicy policy;
  // version_labels: label -> version ("/labels/stable").
  std::map<std::string, int64_t> labels;
};

// Parses a model config file (JSON):
//   {"model_config_list": [{"name": "iris", "base_path": "/models/iris",
//     "model_version_policy": {"latest": {"num_versions": 2}}
//                           | {"specific": {"versions": [1, 3]}} | {"all": {}},
//     "version_labels": {"stable": 1}}]}
// InvalidArgument naming `path` and the culprit (malformed JSON with line and column,
// a missing name or base_path, a duplicate name, an unknown policy).
StatusOr<std::vector<ModelConfig>> ParseModelConfigFile(const std::string& text,
                                                        const std::string& path);

struct ServeOptions {
  int cpu_devices = 1;
  int replicas_per_device = 1;
  bool enable_batching = false;
  int64_t max_batch_size = 32;
  int64_t batch_timeout_micros = 1000;
  int64_t max_enqueued_batches = 64;
  int64_t max_in_flight_per_replica = 128;
  // 0: no background polling (PollNow only).
  int64_t file_system_poll_wait_seconds = 1;
  // A request's deadline inside the server; 0 = none.
  int64_t request_timeout_ms = 30000;
  // Replicas on the tasks of a cluster instead of this process: each entry a task
  // ("/job:worker/task:0") and its "host:port". Every loaded version then opens
  // replicas_per_device sessions over its frozen graph on each task (the task's
  // master places it on its devices), and a replica is an actor that sends each
  // request to its session as a step. A task that cannot be reached within
  // connect_timeout_ms fails the version's load, naming the task.
  std::vector<std::pair<std::string, std::string>> cluster_tasks;
  int64_t connect_timeout_ms = 10000;
};

// One version's state, as GET /v1/models/NAME reports it.
struct ServedVersionStatus {
  int64_t version = 0;
  std::string state;       // "LOADING", "AVAILABLE", "UNLOADING", "END"
  Status status;           // why it is not serving (a failed load), else OK
};

// What the server counts, for /monitoring/prometheus/metrics.
struct VersionMetrics {
  std::string model;
  int64_t version = 0;
  int64_t replicas = 0;
  int64_t in_flight = 0;         // requests (or batches) outstanding on replicas
  int64_t queued_rows = 0;       // batching: rows waiting for their batch
  std::vector<int64_t> batch_size_counts;  // batches of 1, 2, 3, ... rows (index = rows)
};

class LoadedVersion;

// A version that serves, held for the duration of a request (it stays loaded while
// a handle lives).
struct ServedVersion {
  std::shared_ptr<LoadedVersion> loaded;
  int64_t version() const;
  const Servable& servable() const;
};

class ModelServer {
 public:
  // Starts the actor system and loads what each model's policy selects (a model
  // whose base path is missing or holds no version starts with no version: its status
  // says why). InvalidArgument for bad options or no model, duplicate model names.
  static StatusOr<std::unique_ptr<ModelServer>> Start(std::vector<ModelConfig> models,
                                                      ServeOptions options);
  ~ModelServer();
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  // Polls every model's base path once and applies the policies (loads, unloads).
  void PollNow();

  // The version to serve: `version` > 0 that version, else `label`'s when not empty,
  // else the highest AVAILABLE one. NotFound naming the model, version or label;
  // Unavailable (with the last load error) when the model has no available version.
  StatusOr<ServedVersion> Resolve(const std::string& model, int64_t version,
                                  const std::string& label) const;

  // Runs `signature` (already chosen from the version's servable) on `inputs` (keyed
  // by the signature's input keys, every input [N, ...] with one N). Returns the
  // outputs keyed by output key. Errors: InvalidArgument for inputs that do not fit
  // the signature; ResourceExhausted when overloaded; DeadlineExceeded past
  // request_timeout_ms; the session's errors. Without batching, an idle replica runs
  // the call on the calling thread (a call run there ends before Run returns, even
  // past its deadline, and is then answered DeadlineExceeded).
  StatusOr<std::map<std::string, Tensor>> Run(const ServedVersion& version,
                                              const SignatureDef& signature,
                                              std::map<std::string, Tensor> inputs) const;

  // Run without waiting: `done` gets Run's outcome once, on a replica's thread (do
  // not block there). An error returned here (bad inputs, overloaded) means `done`
  // is never called. No deadline: the caller keeps its own.
  using RunCallback = std::function<void(StatusOr<std::map<std::string, Tensor>>)>;
  Status RunAsync(const ServedVersion& version, const SignatureDef& signature,
                  std::map<std::string, Tensor> inputs, RunCallback done) const;

  // The ensemble aggregator (training/distributed/ensemble.h) against served models: every
  // member model's highest available version runs `inputs` on its serving_default
  // signature at once, and the `output` tensors (float32 [batch, classes]) of those
  // that answer within timeout_ms (0: no limit) are combined. Member ids are
  // positions in `models`; members that are unknown, unavailable, failed or late are
  // in `missing`. DeadlineExceeded when no member answered.
  StatusOr<EnsembleResult> PredictWithEnsemble(const std::vector<std::string>& models,
                                               const std::map<std::string, Tensor>& inputs,
                                               const std::string& output,
                                               EnsembleCombine combine, int64_t timeout_ms) const;

  // Every version the model had (newest first). NotFound for an unknown model.
  StatusOr<std::vector<ServedVersionStatus>> VersionStatuses(const std::string& model) const;
  std::vector<std::string> ModelNames() const;
  std::vector<VersionMetrics> Metrics() const;
  const ServeOptions& options() const;

 private:
  struct Impl;
  explicit ModelServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SERVING_MODEL_SERVER_H_
