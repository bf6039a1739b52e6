// What `actorflow launch` starts: one command line per task of a cluster that lives
// on this host, decided from a cluster spec, a task selection and the user's
// command. Plain logic, no process is started here (tools/process_group.h does
// that), so every rule is testable.
//
// The rule, TensorFlow's: tasks of a server job (default "ps") run
//   actorflow server --cluster FILE --job J --task I
// and every other task runs the user's command with its place in the cluster:
//   actorflow <command...> --cluster FILE --job J --task I
// when the command starts with an actorflow subcommand (`-- train --mode sync`), or
// else the command as a program of its own, unchanged (`-- ./my_driver --steps 100`:
// found as a shell finds it, a name with '/' as given, else on $PATH), as torchrun
// runs a script. Every child also gets its place as TensorFlow's TF_CONFIG in its
// environment, {"cluster": {...}, "task": {"type": J, "index": I}}, which a program
// reads with TfConfigFromEnv() (placement/cluster_spec.h).
// Where the cluster comes from:
//   - a cluster JSON file (placement/cluster_spec.h);
//   - "tf_config": the "cluster" of $TF_CONFIG (its "task" is ignored: the launcher
//     starts every selected task);
//   - "slurm": SLURM's allocation, as TensorFlow's SlurmClusterResolver reads it:
//     $SLURM_JOB_NODELIST (a hostlist such as "node[01-03,07],gpu1") and
//     $SLURM_TASKS_PER_NODE ("2(x3),1": two tasks on each of the first three
//     nodes, one on the fourth; default one per node); the jobs and their task
//     counts come from --slurm-jobs ("ps=1,worker=2"); tasks fill the nodes in that
//     order, jobs in the order given, and the k-th task on a node listens on
//     port_base + k. This host's tasks are those on $SLURMD_NODENAME (or the
//     host name).
//
// Thread safety: pure functions, except the *FromEnv ones, which read the
// environment.
#ifndef ACTORFLOW_TOOLS_LAUNCH_PLAN_H_
#define ACTORFLOW_TOOLS_LAUNCH_PLAN_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/status.h"
#include "placement/cluster_spec.h"

namespace actorflow {
namespace cli {

// One child of the launcher.
struct LaunchTask {
  TaskId task;
  std::string label;               // "worker:0": the prefix of its output lines
  // The program: empty for the actorflow binary, else the user's (as given after --).
  std::string program;
  std::vector<std::string> args;   // argv after the program
  std::vector<std::string> env;    // "NAME=value", added to the launcher's environment
  bool server = false;             // runs until stopped; started (and ready) first
};

struct LaunchPlanOptions {
  // The tasks to start, as "job:index"; empty: every task whose host is local
  // (IsLocalHost, or one of `local_hosts`).
  std::vector<std::string> tasks;
  std::set<std::string> local_hosts;
  std::set<std::string> server_jobs = {"ps"};
  // The user's command after `--` (e.g. {"train", "--mode", "sync"}). Empty: the
  // non-server tasks run `server` too.
  std::vector<std::string> command;
  // actorflow's subcommands: a command whose first word is one of them runs as
  // `actorflow <command>`; any other as a program of its own.
  std::set<std::string> actorflow_commands;
};

// Whether `host` names this machine: loopback names and addresses (localhost,
// 127.0.0.0/8, [::1], 0.0.0.0) or one of `also`.
bool IsLocalHost(const std::string& host, const std::set<std::string>& also);

// The children for `spec` (written to `cluster_file`, which every child gets as
// --cluster). InvalidArgument naming the entry for a malformed or unknown --tasks
// entry (listing the cluster's tasks), for an actorflow command that already
// carries --cluster/--job/--task, and when no task is selected (naming the hosts
// that were looked for and the hosts of the cluster).
StatusOr<std::vector<LaunchTask>> MakeLaunchPlan(const ClusterSpec& spec,
                                                 const std::string& cluster_file,
                                                 const LaunchPlanOptions& options);

// SLURM's hostlist syntax expanded: "n[1-3,07],g" -> n1 n2 n3 n07 g (zero padding
// kept). InvalidArgument quoting the list for unbalanced brackets or a bad range.
StatusOr<std::vector<std::string>> ExpandSlurmHostlist(const std::string& hostlist);

// SLURM_TASKS_PER_NODE expanded: "2(x3),1" -> 2 2 2 1.
StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(const std::string& text);

// The cluster of a SLURM allocation (see the header comment). `jobs` in the order
// given ("ps=1,worker=2"). InvalidArgument when the allocation has fewer task slots
// than the jobs need, or for a malformed variable (naming it).
StatusOr<ClusterSpec> SlurmClusterSpec(const std::string& nodelist,
                                       const std::string& tasks_per_node,
                                       const std::string& jobs, int port_base);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_LAUNCH_PLAN_H_
