// `actorflow launch`: starts every task of a cluster that lives on this host as a
// child process, torchrun-style, so a whole local cluster is one command:
//
//   actorflow launch --cluster FILE|tf_config|slurm [--tasks job:i,...] [--all-local]
//                    [--server-jobs ps] [--slurm-jobs ps=1,worker=2]
//                    [--slurm-port-base 8888] [--ready-timeout-ms N] -- COMMAND...
//
// e.g. `actorflow launch --cluster cluster.json -- train --mode sync`: the ps tasks
// run `actorflow server`, each worker `actorflow train --mode sync --cluster FILE
// --job worker --task I`. Which tasks, what they run, where the cluster comes from:
// tools/launch_plan.h; output prefixes, signals and exit codes:
// tools/process_group.h.
#ifndef ACTORFLOW_TOOLS_LAUNCH_COMMAND_H_
#define ACTORFLOW_TOOLS_LAUNCH_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

struct LaunchCommandOptions {
  std::string cluster;  // a file, "tf_config" or "slurm"
  std::vector<std::string> tasks;
  bool all_local = false;
  std::vector<std::string> server_jobs = {"ps"};
  std::string slurm_jobs;
  int slurm_port_base = 8888;
  int64_t ready_timeout_ms = 30000;
  std::vector<std::string> command;
  std::string program;  // the actorflow binary; empty: this process's own
  // actorflow's subcommands (LaunchPlanOptions::actorflow_commands).
  std::set<std::string> actorflow_commands;
};

int LaunchCommand(const LaunchCommandOptions& options, std::ostream& out, std::ostream& err);

Subcommand AddLaunchSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_LAUNCH_COMMAND_H_
