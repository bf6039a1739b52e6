#include "tools/serve/serve_command.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "actors/serving/model_server.h"
#include "graph/graph_json.h"
#include "placement/cluster_spec.h"
#include "tools/cli/blas_core.h"
#include "tools/serve/serving_http.h"
#include "training/checkpoint/checkpoint_file.h"
#include "training/serving/servable.h"

namespace actorflow {
namespace cli {
namespace {

struct ServeCommandOptions {
  std::string model_name;
  std::string model_base_path;
  std::string model_config_file;
  std::string host = "0.0.0.0";
  int rest_api_port = 8501;
  int64_t poll_wait_seconds = 1;
  std::string devices = "cpu=1";
  int replicas_per_device = 1;
  bool enable_batching = false;
  int64_t max_batch_size = 32;
  int64_t batch_timeout_micros = 1000;
  int64_t max_enqueued_batches = 64;
  int64_t max_in_flight_per_replica = 128;
  int64_t max_body_bytes = 64 << 20;
  int http_threads = 128;
  int64_t max_connections = 1024;
  int64_t body_timeout_ms = 30000;
  int64_t max_instances = 100000;
  int64_t timeout_ms = 30000;
  std::string cluster;
  std::string job = "worker";
};

StatusOr<std::vector<ModelConfig>> ModelsToServe(const ServeCommandOptions& o) {
  if (!o.model_config_file.empty()) {
    if (!o.model_name.empty() || !o.model_base_path.empty()) {
      return InvalidArgument("serve: give either --model-config-file or --model-name with "
                             "--model-base-path, not both");
    }
    const std::string path = ResolveUserPath(o.model_config_file);
    AF_ASSIGN_OR_RETURN(std::string text, checkpoint_file::ReadFileToString(path));
    AF_ASSIGN_OR_RETURN(std::vector<ModelConfig> models, ParseModelConfigFile(text, path));
    for (ModelConfig& m : models) m.base_path = ResolveUserPath(m.base_path);
    return models;
  }
  if (o.model_name.empty() || o.model_base_path.empty()) {
    return InvalidArgument("serve needs --model-name NAME and --model-base-path BASE (or "
                           "--model-config-file FILE)");
  }
  ModelConfig config;
  config.name = o.model_name;
  config.base_path = ResolveUserPath(o.model_base_path);
  return std::vector<ModelConfig>{config};
}

StatusOr<ServeOptions> ResolveServeOptions(const ServeCommandOptions& o) {
  ServeOptions options;
  if (!o.cluster.empty()) {
    if (IsLocalCluster(o.cluster)) {
      return InvalidArgument("serve --cluster needs a cluster spec file (its " + o.job +
                             " tasks run `actorflow server`), not '" + o.cluster + "'");
    }
    AF_ASSIGN_OR_RETURN(ClusterSpec spec, LoadClusterFile(o.cluster));
    const int tasks = spec.num_tasks(o.job);
    if (tasks <= 0) {
      return InvalidArgument("serve --cluster " + o.cluster + ": no task in job '" + o.job + "'");
    }
    for (int i = 0; i < tasks; ++i) {
      TaskId task{o.job, i};
      AF_ASSIGN_OR_RETURN(TaskAddress address, spec.Address(task));
      options.cluster_tasks.emplace_back(task.ToString(),
                                         address.host + ":" + std::to_string(address.port));
    }
    options.connect_timeout_ms = o.timeout_ms;
  }
  AF_ASSIGN_OR_RETURN(auto counts, ParseDeviceCounts(o.devices));
  for (const auto& [type, n] : counts) {
    if (type == "CPU") {
      options.cpu_devices = n;
    } else if (n > 0) {
      return Unimplemented("serve --devices: replicas run on CPU devices; " + type +
                           " replicas are not available");
    }
  }
  options.replicas_per_device = o.replicas_per_device;
  options.enable_batching = o.enable_batching;
  options.max_batch_size = o.max_batch_size;
  options.batch_timeout_micros = o.batch_timeout_micros;
  options.max_enqueued_batches = o.max_enqueued_batches;
  options.max_in_flight_per_replica = o.max_in_flight_per_replica;
  options.file_system_poll_wait_seconds = o.poll_wait_seconds;
  options.request_timeout_ms = o.timeout_ms;
  if (o.rest_api_port < 0 || o.rest_api_port > 65535) {
    return InvalidArgument("serve --rest-api-port: " + std::to_string(o.rest_api_port) +
                           " is not a port (0..65535; 0 takes any free one)");
  }
  if (o.max_body_bytes < 1 || o.http_threads < 1 || o.max_connections < 1 ||
      o.body_timeout_ms < 1 || o.max_instances < 1) {
    return InvalidArgument(
        "serve: --max-body-bytes, --http-threads, --max-connections, --body-timeout-ms and "
        "--max-instances need values >= 1");
  }
  return options;
}

int Serve(const ServeCommandOptions& o) {
  auto models = ModelsToServe(o);
  if (!models.ok()) return ReportError(std::cerr, models.status(), kExitUsageError);
  auto options = ResolveServeOptions(o);
  if (!options.ok()) return ReportError(std::cerr, options.status(), kExitUsageError);
  // Every thread started from here on (actors, HTTP) inherits the blocked mask.
  BlockShutdownSignals();

  // Replicas are the parallelism: each computes on one core.
  UseOneBlasThreadUnlessConfigured();
  auto server = ModelServer::Start(std::move(models).value(), *options);
  if (!server.ok()) return ReportError(std::cerr, server.status(), kExitRuntimeError);
  for (const std::string& name : (*server)->ModelNames()) {
    auto statuses = (*server)->VersionStatuses(name);
    bool serving = false;
    for (const ServedVersionStatus& s : *statuses) serving = serving || s.state == "AVAILABLE";
    if (!serving) {
      auto resolved = (*server)->Resolve(name, 0, "");
      std::cerr << "actorflow serve: model " << name << " is not available yet: "
                << resolved.status().ToString() << std::endl;
    }
  }
  HttpOptions http;
  http.host = o.host;
  http.port = o.rest_api_port;
  http.threads = o.http_threads;
  http.max_connections = o.max_connections;
  http.body_timeout_ms = o.body_timeout_ms;
  http.max_instances = o.max_instances;
  http.max_body_bytes = o.max_body_bytes;
  auto rest = ServingHttpServer::Start(server->get(), http);
  if (!rest.ok()) return ReportError(std::cerr, rest.status(), kExitRuntimeError);
  std::cout << "actorflow serve: listening on http://" << o.host << ":" << (*rest)->port()
            << std::endl;
  WaitForShutdownSignal();
  rest->reset();
  server->reset();
  return kExitOk;
}

// "NAME=NODE" pairs into a map; InvalidArgument naming the flag and the bad entry.
StatusOr<std::map<std::string, std::string>> NamedEndpoints(const std::vector<std::string>& items,
                                                            const std::string& flag) {
  std::map<std::string, std::string> named;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      return InvalidArgument(flag + " '" + item + "': expected NAME=NODE (e.g. x=input:0)");
    }
    if (!named.emplace(item.substr(0, eq), item.substr(eq + 1)).second) {
      return InvalidArgument(flag + ": the name '" + item.substr(0, eq) + "' is given twice");
    }
  }
  return named;
}

struct ExportCommandOptions {
  std::string model_base_path;
  int64_t version = 0;
  std::string checkpoint_dir;
  std::string graph;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

Status Export(const ExportCommandOptions& o, std::ostream& out) {
  ExportRequest request;
  request.base_path = ResolveUserPath(o.model_base_path);
  request.version = o.version;
  std::string written;
  if (o.graph.empty()) {
    AF_ASSIGN_OR_RETURN(written, ExportModelDir(ResolveUserPath(o.checkpoint_dir), request));
  } else {
    AF_ASSIGN_OR_RETURN(auto inputs, NamedEndpoints(o.inputs, "--input"));
    AF_ASSIGN_OR_RETURN(auto outputs, NamedEndpoints(o.outputs, "--output"));
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, LoadGraphFile(ResolveUserPath(o.graph)));
    const std::string checkpoint = o.checkpoint_dir.empty() ? "" : ResolveUserPath(o.checkpoint_dir);
    AF_ASSIGN_OR_RETURN(written, ExportGraph(*graph, checkpoint, inputs, outputs, request));
  }
  const size_t slash = written.find_last_of('/');
  out << "exported version " << written.substr(slash + 1) << " to " << written << "\n";
  return Status::OK();
}

}  // namespace

Subcommand AddServeSubcommand(CLI::App* parent) {
  auto o = std::make_shared<ServeCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "serve", "Serve exported models over TensorFlow Serving's REST API");
  app->add_option("--model-name", o->model_name, "Name clients use in /v1/models/NAME");
  app->add_option("--model-base-path", o->model_base_path,
                  "Directory of numeric version subdirectories (written by export)");
  app->add_option("--model-config-file", o->model_config_file,
                  "JSON model_config_list serving several models");
  app->add_option("--rest-api-port", o->rest_api_port, "HTTP port (0: any free port)")
      ->capture_default_str();
  app->add_option("--rest-api-host", o->host, "Address to listen on")->capture_default_str();
  app->add_option("--file-system-poll-wait-seconds", o->poll_wait_seconds,
                  "How often base paths are polled for new versions (0: never)")
      ->capture_default_str();
  app->add_option("--devices", o->devices, "Devices holding replicas, e.g. cpu=2")
      ->capture_default_str();
  app->add_option("--replicas-per-device", o->replicas_per_device,
                  "Replica actors of every version on each device")
      ->capture_default_str();
  app->add_flag("--enable-batching", o->enable_batching,
                "Merge concurrent requests to a version into batches");
  app->add_option("--max-batch-size", o->max_batch_size, "Rows per batch at most")
      ->capture_default_str();
  app->add_option("--batch-timeout-micros", o->batch_timeout_micros,
                  "How long a batch waits for more rows")
      ->capture_default_str();
  app->add_option("--max-enqueued-batches", o->max_enqueued_batches,
                  "Batches outstanding per version before requests get 503")
      ->capture_default_str();
  app->add_option("--max-in-flight-per-replica", o->max_in_flight_per_replica,
                  "Requests outstanding per replica before requests get 503 (no batching)")
      ->capture_default_str();
  app->add_option("--max-body-bytes", o->max_body_bytes, "Larger request bodies get 413")
      ->capture_default_str();
  app->add_option("--http-threads", o->http_threads,
                  "HTTP threads kept warm (every open connection has a thread of its own)")
      ->capture_default_str();
  app->add_option("--max-connections", o->max_connections,
                  "Requests on connections beyond this many open ones get 503")
      ->capture_default_str();
  app->add_option("--max-instances", o->max_instances,
                  "A request with more instances (or examples) gets 413 before it is parsed")
      ->capture_default_str();
  app->add_option("--body-timeout-ms", o->body_timeout_ms,
                  "A request body not received within this long gets 408")
      ->capture_default_str();
  AddTimeoutMsOption(app, &o->timeout_ms)->capture_default_str();
  app->add_option("--cluster", o->cluster, "Cluster spec file (replicas on its worker tasks)");
  app->add_option("--job", o->job, "The cluster's job whose tasks hold replicas")
      ->capture_default_str();
  return Subcommand{app, [o]() { return Serve(*o); }};
}

Subcommand AddExportSubcommand(CLI::App* parent) {
  auto o = std::make_shared<ExportCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "export", "Write a servable version (a trained classifier, or any graph) for serve");
  app->add_option("--model-base-path", o->model_base_path, "Where version directories go")
      ->required();
  app->add_option("--version", o->version, "Version number (default: the next one)");
  app->add_option("--checkpoint-dir", o->checkpoint_dir,
                  "Model directory of train --checkpoint-dir (or the graph's variables)");
  app->add_option("--graph", o->graph, "Graph JSON to export instead of a classifier");
  app->add_option("--input", o->inputs, "NAME=NODE: a signature input (with --graph)");
  app->add_option("--output", o->outputs, "NAME=NODE: a signature output (with --graph)");
  return Subcommand{app, [o]() {
                      return RunChecked(
                          std::cout, std::cerr,
                          [&]() -> Status {
                            if (o->graph.empty() && o->checkpoint_dir.empty()) {
                              return InvalidArgument(
                                  "export needs --checkpoint-dir DIR (a classifier) or --graph "
                                  "G.json with --input and --output");
                            }
                            if (o->graph.empty() && (!o->inputs.empty() || !o->outputs.empty())) {
                              return InvalidArgument("export: --input and --output go with --graph");
                            }
                            if (o->version < 0) {
                              return InvalidArgument("export --version must be >= 1");
                            }
                            return Status::OK();
                          },
                          [&]() { return Export(*o, std::cout); });
                    }};
}

}  // namespace cli
}  // namespace actorflow
