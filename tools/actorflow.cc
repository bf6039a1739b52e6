// The `actorflow` command line. Each subcommand lives in tools/<name>_command.cc and
// is listed in MakeSubcommands below; this file only dispatches.

#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "actors/transport/cluster_secret.h"
#include "actors/transport/server_limits.h"
#include "actors/transport/transport_security.h"
#include "graph/status.h"
#include "tools/cli/blas_core.h"
#include "tools/cli/cli_common.h"
#include "tools/convert_command.h"
#include "tools/graph_command.h"
#include "tools/launch_command.h"
#include "tools/plot_command.h"
#include "tools/train/char_lm_command.h"
#include "tools/train/predict_command.h"
#include "tools/run_command.h"
#include "tools/serve/serve_command.h"
#include "tools/server_command.h"
#include "tools/simulate_command.h"
#include "tools/swarm_command.h"
#include "tools/train/train_command.h"
#include "tools/tune_command.h"

namespace actorflow {
namespace cli {
namespace {

std::vector<Subcommand> MakeSubcommands(CLI::App* app) {
  // `train --cluster sim:...` is the simulator's between-graph run with train's flags
  // (with --mode allreduce, its all-reduce run).
  SimulatedTrainerHook() = [](const TrainCommandOptions& train, std::ostream& out,
                              std::ostream& err) {
    SimulateCommandOptions simulate;
    simulate.train = train;
    simulate.cluster = train.cluster;
    simulate.mode = train.mode;
    simulate.replicas_to_aggregate = train.replicas_to_aggregate;
    if (train.mode == "allreduce") return SimulateAllReduce(simulate, out);
    return SimulateDataParallel(simulate, out, err);
  };
  return {
      AddRunSubcommand(app),
      AddServerSubcommand(app),
      AddTrainSubcommand(app),
      AddPredictSubcommand(app),
      AddSampleSubcommand(app),
      AddTuneSubcommand(app),
      AddLaunchSubcommand(app),
      AddPlotSubcommand(app),
      AddGraphSubcommand(app),
      AddServeSubcommand(app),
      AddExportSubcommand(app),
      AddSimulateSubcommand(app),
      AddSwarmSubcommand(app),
      AddConvertSubcommand(app),
  };
}

// The certificates derived from a cluster secret live in memory for the process's
// lifetime (actors/transport/cluster_secret.h).
Status UseClusterSecretFile(const std::string& path) {
  AF_ASSIGN_OR_RETURN(std::string secret, ReadClusterSecretFile(path));
  AF_ASSIGN_OR_RETURN(TlsConfig tls, TlsFromClusterSecret(secret));
  return SetTransportSecurity(tls);
}

int Main(int argc, char** argv) {
  CLI::App app{"actorflow: dataflow graphs run by actors"};
  app.require_subcommand(1);
  std::vector<Subcommand> subcommands = MakeSubcommands(&app);
  // Transport security (actors/transport/transport_security.h) for every command that talks
  // to a cluster; without the flags, the ACTORFLOW_TLS_* environment variables.
  TlsConfig tls;
  std::string secret_file;
  // The failure detector of every connection this process makes (`server` has its
  // own flag of the same name, which also sets its masters' pings).
  int64_t heartbeat_timeout_ms = kDefaultPeerTimeoutMs;
  for (const char* name : {"run", "train", "serve", "tune"}) {
    app.get_subcommand(name)
        ->add_option("--heartbeat-timeout-ms", heartbeat_timeout_ms,
                     "The failure detector: a peer whose connection brings nothing (not even "
                     "heartbeats) for 1.25 times this long is lost (at least 50)")
        ->capture_default_str();
  }
  for (const char* name : {"server", "run", "train", "serve", "tune"}) {
    CLI::App* sub = app.get_subcommand(name);
    sub->add_option("--tls-cert", tls.certificate,
                    "PEM certificate: cluster traffic over TLS (with --tls-key)");
    sub->add_option("--tls-key", tls.key, "PEM private key of --tls-cert");
    sub->add_option("--tls-ca", tls.ca,
                    "PEM CA: accept and reach only peers whose certificate it signed");
    sub->add_option("--cluster-secret-file", secret_file,
                    "File with the cluster's secret: only peers that know it are accepted "
                    "(mutual TLS with keys derived from it; or ACTORFLOW_CLUSTER_SECRET)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 with CLI11's own output; any other parse error is
    // a usage error reported like every other error.
    if (e.get_exit_code() == 0) return app.exit(e);
    const std::vector<std::string> args(argv + 1, argv + argc);
    return ReportError(std::cerr, DescribeParseError(subcommands, args, e.what()),
                       kExitUsageError);
  }
  if (!secret_file.empty()) {
    if (!tls.certificate.empty() || !tls.key.empty() || !tls.ca.empty()) {
      return ReportError(std::cerr,
                         InvalidArgument("give either --cluster-secret-file or --tls-cert/"
                                         "--tls-key/--tls-ca, not both"),
                         kExitUsageError);
    }
    Status derived = UseClusterSecretFile(ResolveUserPath(secret_file));
    if (!derived.ok()) return ReportError(std::cerr, derived, kExitUsageError);
  }
  if (!tls.certificate.empty() || !tls.key.empty() || !tls.ca.empty()) {
    tls.certificate = tls.certificate.empty() ? "" : ResolveUserPath(tls.certificate);
    tls.key = tls.key.empty() ? "" : ResolveUserPath(tls.key);
    tls.ca = tls.ca.empty() ? "" : ResolveUserPath(tls.ca);
    Status set = SetTransportSecurity(tls);
    if (!set.ok()) return ReportError(std::cerr, set, kExitUsageError);
  }
  if (Status valid = ValidatePeerTimeoutMs("--heartbeat-timeout-ms", heartbeat_timeout_ms);
      !valid.ok()) {
    return ReportError(std::cerr, valid, kExitUsageError);
  }
  SetDefaultPeerTimeoutMs(heartbeat_timeout_ms);
  for (const Subcommand& sub : subcommands) {
    if (sub.app->parsed()) return sub.main();
  }
  return ReportError(std::cerr, DescribeParseError(subcommands, {}, ""), kExitUsageError);
}

}  // namespace
}  // namespace cli
}  // namespace actorflow

int main(int argc, char** argv) {
  // Before any thread: OpenBLAS's kernels for this CPU (tools/cli/blas_core.h).
  actorflow::cli::RestartWithBetterBlasCore(argv);
  return actorflow::cli::CatchExceptions(std::cerr,
                                         [&]() { return actorflow::cli::Main(argc, argv); });
}
