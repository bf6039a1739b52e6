#include "tools/launch_command.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "tools/launch_plan.h"
#include "tools/process_group.h"

namespace actorflow {
namespace cli {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {0};
  return gethostname(name, sizeof(name)) == 0 ? name : "";
}

std::string SelfPath() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "";
}

// A cluster spec written for the children when it did not come from a file;
// removed when the launch ends.
class TempClusterFile {
 public:
  ~TempClusterFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  Status Write(const ClusterSpec& spec) {
    const std::string dir = Env("TMPDIR").empty() ? "/tmp" : Env("TMPDIR");
    std::string templ = dir + "/actorflow-launch-XXXXXX";
    const int fd = mkstemp(templ.data());
    if (fd < 0) return Internal("launch: cannot create a cluster file in " + dir);
    close(fd);
    path_ = templ;
    std::ofstream file(path_);
    file << spec.ToJson() << "\n";
    if (!file.good()) return Internal("launch: cannot write the cluster file " + path_);
    return Status::OK();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

int LaunchCommand(const LaunchCommandOptions& options, std::ostream& out, std::ostream& err) {
  TempClusterFile temp;
  ClusterSpec spec;
  std::string cluster_file;
  LaunchPlanOptions plan_options;
  plan_options.tasks = options.tasks;
  plan_options.server_jobs = {options.server_jobs.begin(), options.server_jobs.end()};
  plan_options.command = options.command;
  plan_options.actorflow_commands = options.actorflow_commands;
  plan_options.local_hosts = {HostName()};
  const Status usage = [&]() -> Status {
    if (options.cluster.empty()) return InvalidArgument("launch: --cluster is required");
    if (options.all_local && !options.tasks.empty()) {
      return InvalidArgument("launch: --all-local and --tasks exclude each other");
    }
    return Status::OK();
  }();
  if (!usage.ok()) return ReportError(err, usage, kExitUsageError);
  const Status status = [&]() -> Status {
    if (options.cluster == "tf_config") {
      AF_ASSIGN_OR_RETURN(TfConfig config, TfConfigFromEnv());
      spec = config.cluster;
    } else if (options.cluster == "slurm") {
      const std::string nodelist =
          Env("SLURM_JOB_NODELIST").empty() ? Env("SLURM_NODELIST") : Env("SLURM_JOB_NODELIST");
      AF_ASSIGN_OR_RETURN(spec, SlurmClusterSpec(nodelist, Env("SLURM_TASKS_PER_NODE"),
                                                 options.slurm_jobs, options.slurm_port_base));
      if (!Env("SLURMD_NODENAME").empty()) plan_options.local_hosts.insert(Env("SLURMD_NODENAME"));
    } else {
      AF_ASSIGN_OR_RETURN(spec, LoadClusterFile(options.cluster));
      cluster_file = ResolveUserPath(options.cluster);
    }
    if (cluster_file.empty()) {
      AF_RETURN_IF_ERROR(temp.Write(spec));
      cluster_file = temp.path();
    }
    return Status::OK();
  }();
  if (!status.ok()) return ReportError(err, status, kExitUsageError);
  StatusOr<std::vector<LaunchTask>> plan = MakeLaunchPlan(spec, cluster_file, plan_options);
  if (!plan.ok()) return ReportError(err, plan.status(), kExitUsageError);
  ProcessGroupOptions group;
  group.program = options.program.empty() ? SelfPath() : options.program;
  group.ready_timeout = std::chrono::milliseconds(options.ready_timeout_ms);
  std::string names;
  for (const LaunchTask& t : *plan) names += (names.empty() ? "" : ", ") + t.label;
  err << "actorflow launch: starting " << names << std::endl;
  return RunProcessGroup(*plan, group, out, err);
}

Subcommand AddLaunchSubcommand(CLI::App* parent) {
  auto options = std::make_shared<LaunchCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "launch",
      "Start every task of a cluster on this host: ps tasks as servers, the others the "
      "command after --: an actorflow subcommand with --cluster/--job/--task added, or any "
      "other program unchanged; every task also gets its place in $TF_CONFIG");
  app->add_option("--cluster", options->cluster,
                  "Cluster spec file, 'tf_config' ($TF_CONFIG's cluster) or 'slurm' (the "
                  "allocation's nodes, with --slurm-jobs)")
      ->required();
  app->add_option("--tasks", options->tasks, "Tasks to start, job:index (default: every task "
                                             "whose host is this machine)")
      ->delimiter(',');
  app->add_flag("--all-local", options->all_local,
                "Start every task whose host is this machine (the default)");
  app->add_option("--server-jobs", options->server_jobs,
                  "Jobs whose tasks run `actorflow server` (default ps)")
      ->delimiter(',');
  app->add_option("--slurm-jobs", options->slurm_jobs, "With --cluster slurm: job=count,...");
  app->add_option("--slurm-port-base", options->slurm_port_base,
                  "With --cluster slurm: the first port on each node")
      ->capture_default_str();
  app->add_option("--ready-timeout-ms", options->ready_timeout_ms,
                  "How long each server may take to be ready")
      ->capture_default_str();
  app->add_option("command", options->command,
                  "The command every non-server task runs (after --), e.g. -- train --mode sync, "
                  "or -- ./my_driver --steps 100");
  return Subcommand{app, [options, parent]() {
                      const CLI::App* app_of_all = parent;
                      for (const CLI::App* sub :
                           app_of_all->get_subcommands([](const CLI::App*) { return true; })) {
                        options->actorflow_commands.insert(sub->get_name());
                      }
                      return LaunchCommand(*options, std::cout, std::cerr);
                    }};
}

}  // namespace cli
}  // namespace actorflow
