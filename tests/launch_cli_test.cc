// End-to-end tests of `actorflow launch`: the built binary starts a whole cluster of
// real processes on 127.0.0.1 (ps servers, then the workers' command), prefixes
// their output, stops the servers at the end, forwards signals and passes a
// failure's exit code on. Every wait is bounded (RunProcess, ChildProcess).
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/child_process.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using subprocess::ChildProcess;
using subprocess::ProcessResult;

std::string Actorflow() { return subprocess::Runfile("tools/actorflow"); }
std::string Data(const std::string& file) { return subprocess::Runfile("examples/data/" + file); }

// A cluster JSON of `workers` workers and one ps on free loopback ports (the ps's
// port given when `ps_port` is not 0); returns its path.
std::string WriteCluster(const std::string& name, int workers, int ps_port = 0) {
  std::string json = "{\"ps\": [\"127.0.0.1:" +
                     std::to_string(ps_port ? ps_port : subprocess::FreeLoopbackPort()) +
                     "\"], \"worker\": [";
  for (int i = 0; i < workers; ++i) {
    json += (i ? ", " : "") + std::string("\"127.0.0.1:") +
            std::to_string(subprocess::FreeLoopbackPort()) + "\"";
  }
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << json << "]}\n";
  return path;
}

std::vector<std::string> TrainCommand() {
  return {"--", "train", "--mode", "sync", "--train", Data("iris_training.csv"), "--test",
          Data("iris_test.csv"), "--normalize", "--hidden", "10,10", "--optimizer", "sgd",
          "--lr", "0.2", "--batch", "16", "--epochs", "20", "--seed", "3", "--json"};
}

// The JSON object a worker printed as its (prefixed) stdout line.
nlohmann::json WorkerJson(const std::string& out, const std::string& label) {
  const std::string prefix = "[" + label + "] {";
  const size_t at = out.find(prefix);
  if (at == std::string::npos) return nullptr;
  const size_t start = at + prefix.size() - 1;
  return nlohmann::json::parse(out.substr(start, out.find('\n', start) - start), nullptr, false);
}

TEST(LaunchCliTest, RunsTheWholeClusterAsOneCommandAndStopsTheServersAtTheEnd) {
  const std::string cluster = WriteCluster("cluster.json", 2);
  std::vector<std::string> args = {"launch", "--cluster", cluster};
  for (const std::string& a : TrainCommand()) args.push_back(a);
  const ProcessResult r = subprocess::RunProcess(Actorflow(), args);
  ASSERT_TRUE(r.exited) << r.error;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[ps:0] actorflow server ready: actorflow://127.0.0.1:"));
  EXPECT_THAT(r.err, HasSubstr("actorflow launch: starting ps:0, worker:0, worker:1"));
  for (const std::string label : {"worker:0", "worker:1"}) {
    const nlohmann::json report = WorkerJson(r.out, label);
    ASSERT_TRUE(report.is_object()) << label << " printed no JSON: " << r.out;
    EXPECT_GE(report["accuracy"].get<double>(), 0.9) << label;
    EXPECT_GT(report["updates_applied"].get<int64_t>(), 0) << label;
  }
}

// A program of the user's own (the Iris example driver, written against actorflow.h)
// runs unchanged as the worker task; its place in the cluster comes in $TF_CONFIG.
TEST(LaunchCliTest, RunsAUsersOwnDriverWithItsPlaceInTfConfig) {
  const std::string cluster = WriteCluster("driver.json", 1);
  const ProcessResult r = subprocess::RunProcess(
      Actorflow(), {"launch", "--cluster", cluster, "--",
                    subprocess::Runfile("examples/iris_cluster/iris_cluster")});
  ASSERT_TRUE(r.exited) << r.error;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string prefix = "[worker:0] Test set accuracy: ";
  const size_t at = r.out.find(prefix);
  ASSERT_NE(at, std::string::npos) << r.out << r.err;
  EXPECT_GE(std::stod(r.out.substr(at + prefix.size())), 0.9) << r.out;
  // Its variables lived on the launcher's ps task, not in a cluster of its own.
  EXPECT_THAT(r.out, HasSubstr("[ps:0] actorflow server ready: actorflow://127.0.0.1:"));
}

// The README's synchronous driver: SyncReplicasOptimizer + MonitoredTrainingSession,
// one process per worker (2) beside the launcher's ps task; every step averages one
// gradient per worker, the chief evaluates at the last step and checkpoints.
TEST(LaunchCliTest, TheSyncReplicasDriverTrainsTwoWorkersToItsLastStep) {
  const std::string cluster = WriteCluster("sync.json", 2);
  const std::string model_dir = std::string(std::getenv("TEST_TMPDIR")) + "/sync_model";
  const ProcessResult r = subprocess::RunProcess(
      Actorflow(), {"launch", "--cluster", cluster, "--",
                    subprocess::Runfile("examples/sync_replicas/iris_sync"), "--model-dir",
                    model_dir, "--last-step", "300"});
  ASSERT_TRUE(r.exited) << r.error;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string prefix = "[worker:0] Global step ";
  const size_t at = r.out.find(prefix);
  ASSERT_NE(at, std::string::npos) << r.out << r.err;
  EXPECT_GE(std::stoll(r.out.substr(at + prefix.size())), 300) << r.out;
  const std::string accuracy = "test set accuracy: ";
  const size_t acc_at = r.out.find(accuracy, at);
  ASSERT_NE(acc_at, std::string::npos) << r.out;
  EXPECT_GE(std::stod(r.out.substr(acc_at + accuracy.size())), 0.9) << r.out;
  EXPECT_THAT(r.err, HasSubstr("stale gradients were dropped")) << r.err;
  // The chief's last checkpoint is of the last step or later.
  std::ifstream latest(model_dir + "/latest");
  EXPECT_TRUE(latest.good()) << "no checkpoint in " << model_dir;
}

// A program that is not there fails the launch naming it.
TEST(LaunchCliTest, AProgramThatCannotRunIsNamed) {
  const std::string cluster = WriteCluster("missing.json", 1);
  const ProcessResult r = subprocess::RunProcess(
      Actorflow(), {"launch", "--cluster", cluster, "--", "./no_such_driver", "--steps", "3"});
  ASSERT_TRUE(r.exited) << r.error;
  EXPECT_EQ(r.exit_code, 127) << r.err;
  EXPECT_THAT(r.err, HasSubstr("exec ./no_such_driver: No such file or directory")) << r.err;
}

TEST(LaunchCliTest, AFailingWorkersExitCodeIsTheLaunchersAndTheOthersAreStopped) {
  const std::string cluster = WriteCluster("failing.json", 2);
  const ProcessResult r = subprocess::RunProcess(
      Actorflow(), {"launch", "--cluster", cluster, "--", "train", "--no-such-flag"});
  ASSERT_TRUE(r.exited) << r.error;
  EXPECT_EQ(r.exit_code, 2) << r.err;  // train's usage-error code
  EXPECT_THAT(r.err, HasSubstr("unknown flag --no-such-flag"));
  EXPECT_THAT(r.err, HasSubstr("exited with code 2; stopping the other tasks"));
}

TEST(LaunchCliTest, AServerWhosePortIsTakenFailsTheLaunchBeforeAnyWorkerStarts) {
  subprocess::PortHolder taken;
  const std::string cluster = WriteCluster("taken.json", 1, taken.port());
  std::vector<std::string> args = {"launch", "--cluster", cluster};
  for (const std::string& a : TrainCommand()) args.push_back(a);
  const ProcessResult r = subprocess::RunProcess(Actorflow(), args);
  ASSERT_TRUE(r.exited) << r.error;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("[ps:0] exited with code"));
  EXPECT_THAT(r.err, HasSubstr("before it was ready"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("[worker:0]")));
}

TEST(LaunchCliTest, ASignalIsForwardedToEveryTaskAndEndsTheLaunch) {
  // No command: every task runs a server until stopped.
  const std::string cluster = WriteCluster("servers.json", 1);
  std::string error;
  auto launcher = ChildProcess::Start(Actorflow(), {"launch", "--cluster", cluster},
                                      &error);
  ASSERT_NE(launcher, nullptr) << error;
  std::string line;
  ASSERT_TRUE(launcher->WaitForLine("[worker:0] actorflow server ready", std::chrono::seconds(60),
                                    &line))
      << launcher->out() << launcher->err();
  launcher->Kill(SIGTERM);
  ASSERT_TRUE(launcher->WaitForExit(std::chrono::seconds(60)));
  EXPECT_TRUE(launcher->exited());
  EXPECT_EQ(launcher->exit_code(), 128 + SIGTERM);
  EXPECT_THAT(launcher->err(), HasSubstr("forwarding it to every task"));
}

TEST(LaunchCliTest, BadClustersAreUsageErrors) {
  const ProcessResult missing =
      subprocess::RunProcess(Actorflow(), {"launch", "--cluster", "/no/such.json", "--", "train"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("/no/such.json"));
  const ProcessResult slurm =
      subprocess::RunProcess(Actorflow(), {"launch", "--cluster", "slurm", "--", "train"});
  EXPECT_EQ(slurm.exit_code, 2);
  EXPECT_THAT(slurm.err, HasSubstr("SLURM_JOB_NODELIST is not set"));
}

}  // namespace
}  // namespace actorflow
