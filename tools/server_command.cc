#include "tools/server_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "actors/cluster/server.h"
#include "actors/transport/peer_watch.h"
#include "actors/transport/server_limits.h"
#include "actors/transport/transport_security.h"
#include "placement/cluster_spec.h"
#include "tools/cli/status_server.h"
#include "training/summary/status_board.h"

namespace actorflow {
namespace cli {
namespace {

// How long a server looks for the other tasks of its cluster after it starts.
constexpr std::chrono::minutes kPeerWatchBound{10};

struct ServerCommandOptions {
  std::string cluster_path;
  std::string job;
  int task = -1;
  std::string devices;
  int status_port = -1;  // -1: no status page
  int64_t heartbeat_timeout_ms = kDefaultPeerTimeoutMs;
  std::string data_root;  // empty: graphs may open no files
  int max_device_restarts = 5;
  int64_t device_restart_window_ms = 60000;
  int64_t scheduler_spin_us = ServerOptions().scheduler_spin_us;
  int64_t bulk_min_bytes = ServerOptions().bulk_min_bytes;
  bool no_step_channel = false;
  bool no_shared_memory = false;
  TransportLimits transport;
  RequestLimits requests;
};

// This task's board: the cluster's tasks (this one up with its devices; the others
// as far as this task can tell, unknown).
void FillServerBoard(const ServerOptions& options, StatusBoard* board) {
  for (const TaskId& task : options.cluster.AllTasks()) {
    const std::string address = options.cluster.Address(task).value().ToString();
    std::vector<std::string> devices;
    if (task == options.task) {
      for (int i = 0; i < std::max(options.cpus, 1); ++i) {
        devices.push_back(ClusterSpec::TaskName(task) + "/device:CPU:" + std::to_string(i));
      }
    }
    const std::string name = task.job + ":" + std::to_string(task.index);
    board->AddTask(name, address, devices);
    if (task != options.task) board->SetHealth(name, "unknown");
  }
  board->SetState("serving");
}

StatusOr<ServerOptions> ResolveOptions(const ServerCommandOptions& o) {
  ServerOptions options;
  if (o.cluster_path.empty()) {
    auto tf_config = TfConfigFromEnv();
    if (!tf_config.ok()) {
      return InvalidArgument("no --cluster given and " + tf_config.status().message());
    }
    options.cluster = tf_config->cluster;
    options.task = tf_config->task;
  } else {
    if (o.job.empty() || o.task < 0) return InvalidArgument("--cluster needs --job and --task");
    AF_ASSIGN_OR_RETURN(options.cluster, LoadClusterFile(o.cluster_path));
    options.task = TaskId{o.job, o.task};
    AF_RETURN_IF_ERROR(options.cluster.Address(options.task).status());
  }
  AF_ASSIGN_OR_RETURN(auto counts, ParseDeviceCounts(o.devices));
  if (counts.count("CPU")) options.cpus = counts["CPU"];
  AF_RETURN_IF_ERROR(ValidatePeerTimeoutMs("--heartbeat-timeout-ms", o.heartbeat_timeout_ms));
  options.heartbeat_timeout_ms = o.heartbeat_timeout_ms;
  if (!o.data_root.empty()) {
    AF_ASSIGN_OR_RETURN(options.file_access, FileAccessPolicy::UnderRoot(o.data_root));
  }
  if (o.max_device_restarts < 0 || o.device_restart_window_ms <= 0) {
    return InvalidArgument("--max-device-restarts must be >= 0 and --device-restart-window-ms > 0");
  }
  options.max_device_restarts = o.max_device_restarts;
  options.device_restart_window_ms = o.device_restart_window_ms;
  if (o.scheduler_spin_us < 0 || o.scheduler_spin_us > 1000000) {
    return InvalidArgument("--scheduler-spin-us must be in [0, 1000000], not " +
                           std::to_string(o.scheduler_spin_us));
  }
  options.scheduler_spin_us = o.scheduler_spin_us;
  if (o.bulk_min_bytes < 0) {
    return InvalidArgument("--bulk-min-bytes must be >= 0 (0: off), not " +
                           std::to_string(o.bulk_min_bytes));
  }
  options.bulk_min_bytes = o.bulk_min_bytes;
  options.bulk_shared_memory = !o.no_shared_memory;
  options.step_channel = !o.no_step_channel;
  AF_RETURN_IF_ERROR(ValidateLimits(o.transport, o.requests));
  options.transport = o.transport;
  options.transport.peer_timeout_ms = o.heartbeat_timeout_ms;
  options.requests = o.requests;
  return options;
}

int ServeUntilSignalled(const ServerCommandOptions& o) {
  auto options = ResolveOptions(o);
  if (!options.ok()) return ReportError(std::cerr, options.status(), kExitUsageError);
  // Every thread started from here on (actors, HTTP) inherits the blocked mask.
  BlockShutdownSignals();

  // A device that keeps failing fails the server: wake the signal wait below, so that
  // the process exits non-zero and its supervisor starts a fresh one.
  options->on_failure = [](const Status&) { kill(getpid(), SIGTERM); };
  auto server = Server::Start(*options);
  if (!server.ok()) return ReportError(std::cerr, server.status(), kExitRuntimeError);
  StatusBoard board("actorflow server " + options->task.ToString());
  std::unique_ptr<StatusServer> status_page;
  if (o.status_port >= 0) {
    FillServerBoard(*options, &board);
    const std::string host = options->cluster.Address(options->task).value().host;
    auto started = StatusServer::Start(&board, host, o.status_port);
    if (!started.ok()) return ReportError(std::cerr, started.status(), kExitRuntimeError);
    status_page = std::move(started).value();
    std::cerr << "status page: " << status_page->url() << std::endl;
  }
  if (!TransportSecurity().enabled()) {
    std::cerr << "actorflow server: no cluster secret or TLS configured: anyone who reaches "
              << (*server)->target()
              << " can run graphs and read or change variables here (see --cluster-secret-file)"
              << std::endl;
  }
  if (!(*server)->bulk_endpoint().empty()) {
    std::cerr << "actorflow server: tensors of " << options->bulk_min_bytes
              << " bytes and more from other tasks' devices also arrive on "
              << (*server)->bulk_endpoint() << " (--bulk-min-bytes; 0: off)" << std::endl;
  }
  if ((*server)->step_port() != 0) {
    std::cerr << "actorflow server: remote sessions send their steps to port "
              << (*server)->step_port() << " of this host (--no-step-channel: off)" << std::endl;
  }
  std::cout << "actorflow server ready: " << (*server)->target() << " job=" << options->task.job
            << " task=" << options->task.index << std::endl;
  // Once every other task has answered, one that refuses connections later is down,
  // and this task's next session that needs it says so at once.
  std::vector<TaskAddress> peers;
  for (const TaskId& task : options->cluster.AllTasks()) {
    if (!(task == options->task)) peers.push_back(options->cluster.Address(task).value());
  }
  const size_t peer_count = peers.size();
  PeerWatch watch(std::move(peers), kPeerWatchBound, [peer_count] {
    std::cerr << "actorflow server: all " << peer_count
              << " other tasks of the cluster have answered; from now on one that refuses "
                 "connections is reported down at once"
              << std::endl;
  });
  WaitForShutdownSignal();
  const Status failure = (*server)->failure();
  (*server)->Stop();
  if (!failure.ok()) return ReportError(std::cerr, failure, kExitRuntimeError);
  return kExitOk;
}

}  // namespace

Subcommand AddServerSubcommand(CLI::App* parent) {
  auto options = std::make_shared<ServerCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "server", "Run one task of a cluster (from --cluster/--job/--task, or from TF_CONFIG)");
  app->add_option("--cluster", options->cluster_path,
                  "Cluster spec JSON file (without it: the TF_CONFIG environment variable)");
  app->footer(
      "Without --cluster, the cluster and this task come from TF_CONFIG, e.g.\n"
      "  TF_CONFIG='{\"cluster\": {\"ps\": [\"127.0.0.1:2222\"], \"worker\": "
      "[\"127.0.0.1:2223\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}' actorflow server\n");
  app->add_option("--job", options->job, "This task's job");
  app->add_option("--task", options->task, "This task's index in its job");
  app->add_option("--devices", options->devices, "Devices of this task: cpu=N");
  app->add_option("--status-port", options->status_port,
                  "Serve a status page (and /status.json) on this port of the task's host")
      ->check(CLI::Range(0, 65535));
  app->add_option("--heartbeat-timeout-ms", options->heartbeat_timeout_ms,
                  "The failure detector: a peer that does not answer a ping for this long "
                  "while a step uses it, or whose connection brings nothing (not even "
                  "heartbeats) for 1.25 times this long, is down (at least 50)")
      ->capture_default_str();
  app->add_option("--data-root", options->data_root,
                  "Graph ops that open files (CsvReaderRead) may open only files under DIR "
                  "(after resolving '..' and symlinks; relative names are taken under DIR). "
                  "Without it they open no files on this server")
      ->type_name("DIR");
  app->add_option("--max-device-restarts", options->max_device_restarts,
                  "A device that fails is restarted; more restarts than this within "
                  "--device-restart-window-ms make the server exit with status 1")
      ->capture_default_str();
  app->add_option("--device-restart-window-ms", options->device_restart_window_ms,
                  "The window of --max-device-restarts")
      ->capture_default_str();
  app->add_option("--scheduler-spin-us", options->scheduler_spin_us,
                  "How long an idle actor thread polls for the next message before it "
                  "parks (0: park at once). Saves wake-ups between a step's messages; an "
                  "idle server still uses no CPU")
      ->capture_default_str();
  app->add_option("--bulk-min-bytes", options->bulk_min_bytes,
                  "Tensors of at least this many bytes sent to devices of other tasks go "
                  "through a second port of this task's host (any free one) beside the "
                  "actor transport; 0: off. Off with --cluster-secret-file (TLS)")
      ->capture_default_str();
  app->add_flag("--no-shared-memory", options->no_shared_memory,
                "Tensors for tasks of this host go through the bulk channel's Unix socket, "
                "not copied once into shared memory the receiving task maps; and the "
                "steps of clients on this host through the step channel's Unix socket, "
                "not a mailbox in shared memory");
  app->add_flag("--no-step-channel", options->no_step_channel,
                "Remote sessions send their steps over the actor transport only, not on a "
                "second plain TCP port of this task's host (any free one). Off anyway with "
                "--cluster-secret-file (TLS)");
  // Limits on what peers and clients send (actors/transport/server_limits.h).
  app->add_option("--max-message-bytes", options->transport.max_message_bytes,
                  "A peer that announces a bigger message is disconnected before the "
                  "message is allocated (its pending requests fail)")
      ->capture_default_str();
  app->add_option("--max-connections", options->transport.max_connections,
                  "Accepted connections beyond this many open ones are closed at once (or "
                  "take the slot of the oldest one still without a handshake after 500 ms)")
      ->capture_default_str();
  app->add_option("--handshake-timeout-ms", options->transport.handshake_timeout_ms,
                  "An accepted connection that has not completed CAF's handshake within this "
                  "long is closed")
      ->capture_default_str();
  app->add_option("--max-graph-nodes", options->requests.max_graph_nodes,
                  "A session over a graph with more nodes is refused (ResourceExhausted)")
      ->capture_default_str();
  app->add_option("--max-tensor-bytes", options->requests.max_tensor_bytes,
                  "A step that feeds a bigger tensor is refused (ResourceExhausted)")
      ->capture_default_str();
  return Subcommand{app, [options] { return ServeUntilSignalled(*options); }};
}

}  // namespace cli
}  // namespace actorflow
