// ClusterSpec: which tasks make up a distributed run and where each one listens,
// in TensorFlow's form. A cluster is a set of named jobs; a job is a list of tasks,
// task i of job J being "/job:J/replica:0/task:i" and listening on "host:port".
//
// Sources:
//   - cluster JSON: {"ps": ["host:port"], "worker": ["host:port", "host:port"]}.
//     Job names are free ("ps", "worker", "chief", "evaluator", ...), but must be valid
//     in a device name: a letter, then letters, digits, '_' or '-' (see device_name.h).
//   - TF_CONFIG: {"cluster": {...cluster JSON...}, "task": {"type": "worker", "index": 0}};
//     other top-level fields (e.g. "environment", "rpc_layer") are ignored.
//   - the command line's simulated-cluster shorthand "local:ps=1,worker=2"
//     (job -> task count; the addresses are chosen by whoever runs it).
//
// Invariants of a ClusterSpec that came from FromJson/FromFile/ParseTfConfig: at least
// one job; every job has at least one task; every address has a non-empty host and a
// port in 1..65535; no two tasks share an address (hosts compared case-insensitively);
// JSON objects had no repeated keys (a job given twice would silently lose tasks).
//
// Errors are InvalidArgument naming the source, the job, the task and the offending
// value (or "line L, column C" for malformed JSON); FromFile and TfConfigFromEnv give
// NotFound for a missing file or an unset variable. Nothing here throws.
//
// Thread safety: ClusterSpec is an immutable value once built; const methods may be
// called concurrently. The free functions are pure, except TfConfigFromEnv, which
// reads the environment (std::getenv) and so must not race with setenv.
#ifndef ACTORFLOW_PLACEMENT_CLUSTER_SPEC_H_
#define ACTORFLOW_PLACEMENT_CLUSTER_SPEC_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/status.h"

namespace actorflow {

// Where one task listens. `host` is a name, an IPv4 address or a bracketed IPv6
// address ("[::1]"), kept as written.
struct TaskAddress {
  std::string host;
  uint16_t port = 0;

  // "host:port".
  std::string ToString() const;

  bool operator==(const TaskAddress& o) const { return host == o.host && port == o.port; }
  bool operator!=(const TaskAddress& o) const { return !(*this == o); }
};

// Parses "host:port" as cluster specs write addresses: a non-empty host without
// whitespace (an IPv6 address in brackets, "[::1]:2222", kept as written) and a port
// from 1 to 65535. InvalidArgument says only what is wrong with `text`; the caller
// names where it came from. The one parser of every "host:port" the runtime reads.
StatusOr<TaskAddress> ParseHostPort(const std::string& text);

// One task of a cluster.
struct TaskId {
  std::string job;
  int index = 0;

  // "/job:worker/task:1" (ClusterSpec::TaskName adds the replica).
  std::string ToString() const;

  bool operator==(const TaskId& o) const { return job == o.job && index == o.index; }
  bool operator!=(const TaskId& o) const { return !(*this == o); }
};

class ClusterSpec {
 public:
  // An empty cluster (no jobs). The factories below never return one.
  ClusterSpec() = default;

  // Reads cluster JSON. `source` starts every error message: "<source>: ...".
  // InvalidArgument for: malformed JSON ("<source>: malformed JSON at line L, column C:
  // <reason>"); a value that is not an object; a repeated key; no jobs; a bad job name;
  // a job whose value is not a list of "host:port" strings (naming the job and task
  // index); an empty job list; a bad host (empty) or port (missing, not a number, 0,
  // > 65535), naming the entry; an address used twice (naming both tasks).
  static StatusOr<ClusterSpec> FromJson(std::string_view text,
                                        const std::string& source = "cluster spec");

  // Reads cluster JSON from a file; errors as FromJson with the path as source.
  // NotFound naming the path when it cannot be opened or read.
  static StatusOr<ClusterSpec> FromFile(const std::string& path);

  // The job names, sorted.
  std::vector<std::string> jobs() const;
  // The number of tasks of `job`; 0 if there is no such job.
  int num_tasks(const std::string& job) const;

  // Where `task` listens. InvalidArgument for an unknown job (listing the jobs) or an
  // index outside [0, num_tasks) (saying the job's task count).
  StatusOr<TaskAddress> Address(const TaskId& task) const;

  // Every task: jobs in sorted order, then by index.
  std::vector<TaskId> AllTasks() const;

  // Compact cluster JSON with sorted job names; FromJson(ToJson()) gives back an equal
  // spec.
  std::string ToJson() const;

  // "/job:worker/replica:0/task:1": TensorFlow's name of the task (a DeviceSpec's
  // task part). Every task of the cluster lives in replica 0.
  static std::string TaskName(const TaskId& task);

  bool operator==(const ClusterSpec& o) const { return jobs_ == o.jobs_; }
  bool operator!=(const ClusterSpec& o) const { return !(*this == o); }

 private:
  friend class ClusterSpecReader;  // Builds specs from parsed JSON (cluster_spec.cc).

  std::map<std::string, std::vector<TaskAddress>> jobs_;  // job -> address of task i
};

// A parsed TF_CONFIG: the cluster and which of its tasks this process is.
struct TfConfig {
  ClusterSpec cluster;
  TaskId task;
};

// Parses TF_CONFIG text. InvalidArgument, starting "TF_CONFIG: ", naming the field:
// malformed JSON (line and column); not an object; "cluster" missing or invalid (as
// FromJson, prefixed "TF_CONFIG: cluster: "); "task" missing or not an object;
// "task.type" missing, not a string, or not a job of the cluster (listing the jobs);
// "task.index" not a non-negative integer, or out of range for the job (saying its
// task count). An absent "task.index" means 0, as in TensorFlow.
StatusOr<TfConfig> ParseTfConfig(std::string_view text);

// ParseTfConfig of the environment variable `var`, with `var` naming the source in
// errors. NotFound when the variable is unset or empty. On a thread inside a
// ScopedTfConfig, that config instead, whatever `var`.
StatusOr<TfConfig> TfConfigFromEnv(const char* var = "TF_CONFIG");

// Gives the calling thread its own TF_CONFIG while it lives (the innermost wins):
// how a process that runs several tasks' drivers on threads (a simulated cluster's
// RunDrivers) tells each which task it is, as `actorflow launch` does per process.
class ScopedTfConfig {
 public:
  explicit ScopedTfConfig(TfConfig config);
  ~ScopedTfConfig();
  ScopedTfConfig(const ScopedTfConfig&) = delete;
  ScopedTfConfig& operator=(const ScopedTfConfig&) = delete;

 private:
  TfConfig config_;
  const TfConfig* previous_;
};

// Reads the embedded simulated-cluster shorthand of the command line,
// "local:ps=1,worker=2", into job -> task count. InvalidArgument naming the offending
// part for: a missing "local:" prefix, no jobs, an entry that is not "job=count", a bad
// or repeated job name, or a count that is not an integer in 1..64.
StatusOr<std::map<std::string, int>> ParseLocalClusterShape(std::string_view spec);

// The most tasks ParseLocalClusterShape allows per job.
inline constexpr int kMaxLocalTasksPerJob = 64;

}  // namespace actorflow

#endif  // ACTORFLOW_PLACEMENT_CLUSTER_SPEC_H_
