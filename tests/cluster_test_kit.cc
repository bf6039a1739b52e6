#include "tests/cluster_test_kit.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <utility>

#include "tests/subprocess.h"

namespace actorflow {
namespace subprocess {

using nlohmann::json;

std::string TestTmpDir(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string base = dir != nullptr ? dir : "/tmp";
  return name.empty() ? base : base + "/" + name;
}

std::string ActorflowBinary() { return Runfile("tools/actorflow"); }

std::string ExampleData(const std::string& file) { return Runfile("examples/data/" + file); }

std::unique_ptr<ProcessCluster> StartTestCluster(ProcessClusterOptions options) {
  if (options.binary.empty()) options.binary = ActorflowBinary();
  if (options.dir.empty()) options.dir = TestTmpDir();
  auto cluster = ProcessCluster::Start(std::move(options));
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? std::move(cluster).value() : nullptr;
}

std::unique_ptr<ProcessCluster> StartPsCluster(int workers) {
  ProcessClusterOptions options;
  options.shape = {{"ps", 1}, {"worker", workers}};
  for (int i = 0; i < workers; ++i) options.not_started.insert({"worker", i});
  return StartTestCluster(std::move(options));
}

std::unique_ptr<ChildProcess> StartWorker(const ProcessCluster& cluster, int task,
                                          const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"train",  "--cluster", cluster.spec_path(), "--job",
                                   "worker", "--task",    std::to_string(task)};
  args.insert(args.end(), flags.begin(), flags.end());
  std::string error;
  auto child = ChildProcess::Start(ActorflowBinary(), args, &error);
  EXPECT_NE(child, nullptr) << error;
  return child;
}

json LastJsonLine(const std::string& out, const std::string& name) {
  const size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) {
    ADD_FAILURE() << name << " printed nothing";
    return json();
  }
  const size_t start = out.rfind('\n', end);
  const size_t first = start == std::string::npos ? 0 : start + 1;
  json parsed = json::parse(out.substr(first, end + 1 - first), nullptr,
                            /*allow_exceptions=*/false);
  EXPECT_TRUE(parsed.is_object()) << name << "'s last line is not a JSON object: " << out;
  return parsed.is_object() ? parsed : json();
}

json FinishWorker(ChildProcess* worker, const std::string& name,
                  std::chrono::milliseconds timeout) {
  if (worker == nullptr) return json();
  if (!worker->WaitForExit(timeout)) {
    ADD_FAILURE() << name << " did not end within " << timeout.count() << " ms";
    return json();
  }
  EXPECT_TRUE(worker->exited()) << name << " killed by signal " << worker->term_signal();
  EXPECT_EQ(worker->exit_code(), 0) << name << " stderr: " << worker->err();
  return LastJsonLine(worker->out(), name);
}

}  // namespace subprocess
}  // namespace actorflow
