// What the tests of clusters of real processes share: where the binary, the
// example data and the scratch directory are, a cluster whose workers are the
// `actorflow train` processes a test starts, a worker's command line, and a finished
// worker's result (the JSON of its last stdout line).
//
//   auto cluster = StartPsCluster(/*workers=*/2);
//   auto chief = StartWorker(*cluster, 0, {"--mode", "sync", "--train", ..., "--json"});
//   json result = FinishWorker(chief.get(), "worker 0", std::chrono::minutes(3));
//
// Every function that fails fails the calling test (gtest's ADD_FAILURE) and returns
// null, so that a test goes on to its own assertions. Thread safety: none needed.
#ifndef ACTORFLOW_TESTS_CLUSTER_TEST_KIT_H_
#define ACTORFLOW_TESTS_CLUSTER_TEST_KIT_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/child_process.h"
#include "tests/process_cluster.h"

namespace actorflow {
namespace subprocess {

// $TEST_TMPDIR (else /tmp), followed by "/name" when a name is given.
std::string TestTmpDir(const std::string& name = "");

// tools/actorflow and examples/data/<file> in the test's runfiles.
std::string ActorflowBinary();
std::string ExampleData(const std::string& file);

// ProcessCluster::Start with options.binary defaulting to ActorflowBinary() and
// options.dir to TestTmpDir().
std::unique_ptr<ProcessCluster> StartTestCluster(ProcessClusterOptions options);

// One ps task and `workers` worker tasks of which only the ps task runs a server: the
// workers are the train processes the test starts (StartWorker).
std::unique_ptr<ProcessCluster> StartPsCluster(int workers);

// `actorflow train --cluster SPEC --job worker --task TASK` followed by `flags`.
std::unique_ptr<ChildProcess> StartWorker(const ProcessCluster& cluster, int task,
                                          const std::vector<std::string>& flags);

// The last line of `out` as a JSON object; null, failing the test with `name`, when
// there is none.
nlohmann::json LastJsonLine(const std::string& out, const std::string& name);

// Waits at most `timeout` for the worker's end, expects exit code 0 and returns
// LastJsonLine of its stdout; null (a failure) when it did not end well.
nlohmann::json FinishWorker(ChildProcess* worker, const std::string& name,
                            std::chrono::milliseconds timeout);

}  // namespace subprocess
}  // namespace actorflow

#endif  // ACTORFLOW_TESTS_CLUSTER_TEST_KIT_H_
