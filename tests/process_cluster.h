// ProcessCluster: a cluster of real `actorflow server` processes on 127.0.0.1, for
// end-to-end tests and benchmarks. It picks free ports, writes the cluster JSON to a
// directory, starts one server process per task and waits (bounded) for each one's
// "actorflow server ready: ..." line. Tasks can be killed (SIGKILL, as a crash) and
// restarted on the same port. Destroying the cluster kills and reaps every process.
//
// Thread safety: one thread uses a ProcessCluster.
#ifndef ACTORFLOW_TESTS_PROCESS_CLUSTER_H_
#define ACTORFLOW_TESTS_PROCESS_CLUSTER_H_

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"
#include "tests/child_process.h"

namespace actorflow {
namespace subprocess {

// "job", index.
using TaskKey = std::pair<std::string, int>;

struct ProcessClusterOptions {
  // The server binary: `actorflow` or `test_server` (run as `BINARY server ...`).
  std::string binary;
  // job -> number of tasks, e.g. {{"ps", 1}, {"worker", 2}}.
  std::map<std::string, int> shape;
  // Where the cluster JSON goes (a test's $TEST_TMPDIR).
  std::string dir;
  // Tasks that get these ports instead of free ones (e.g. a port that something
  // other than an actorflow server listens on).
  std::map<TaskKey, int> fixed_ports;
  // Tasks that are in the cluster spec but get no process.
  std::set<TaskKey> not_started;
  // Extra arguments of every server (e.g. {"--devices", "cpu=2"}).
  std::vector<std::string> server_args;
  // How long each server may take to print its ready line.
  std::chrono::milliseconds ready_timeout{30000};
};

class ProcessCluster {
 public:
  // Starts every task. Unavailable when a server did not get ready in time or
  // exited (its stderr quoted); Internal when the spec file cannot be written. A
  // server that finds its port taken ("port in use") makes it start the whole
  // cluster again on new ports, up to 3 times.
  static StatusOr<std::unique_ptr<ProcessCluster>> Start(ProcessClusterOptions options);
  // Kills and reaps every process and removes the spec file.
  ~ProcessCluster();

  // The cluster JSON file the servers were started with.
  const std::string& spec_path() const { return spec_path_; }
  // "127.0.0.1:PORT" and "actorflow://127.0.0.1:PORT" of a task (of the spec,
  // whether or not it runs). Empty for an unknown task.
  std::string Address(const std::string& job, int index) const;
  std::string Target(const std::string& job, int index) const;

  // SIGKILLs a task's process and reaps it (the port is free again at once).
  // NotFound when the task has no running process.
  Status Kill(const std::string& job, int index);
  // Starts a task's process again (same port) and waits for its ready line.
  Status Restart(const std::string& job, int index);
  // The task's process (null when it has none), e.g. to read its stderr.
  ChildProcess* process(const std::string& job, int index);

 private:
  explicit ProcessCluster(ProcessClusterOptions options) : options_(std::move(options)) {}
  static StatusOr<std::unique_ptr<ProcessCluster>> StartOnce(const ProcessClusterOptions& options);
  Status StartTask(const TaskKey& task);

  ProcessClusterOptions options_;
  std::string spec_path_;
  std::map<TaskKey, int> ports_;
  std::map<TaskKey, std::unique_ptr<ChildProcess>> processes_;
};

}  // namespace subprocess
}  // namespace actorflow

#endif  // ACTORFLOW_TESTS_PROCESS_CLUSTER_H_
