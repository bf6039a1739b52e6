#include "tools/simulate_command.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/status_testing.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

SimulateCommandOptions Options(uint64_t seed, const std::string& faults = "") {
  SimulateCommandOptions o;
  o.cluster = "sim:ps=1,worker=2";
  o.train.steps = 150;
  o.train.seed = seed;
  o.train.normalize = true;
  o.train.json = true;
  o.latency_us = 100;
  o.jitter_us = 30;
  if (!faults.empty()) {
    o.faults_path = std::string(::testing::TempDir()) + "/faults_" + std::to_string(seed) + ".json";
    std::FILE* f = std::fopen(o.faults_path.c_str(), "w");
    std::fputs(faults.c_str(), f);
    std::fclose(f);
  }
  return o;
}

nlohmann::json RunJson(const SimulateCommandOptions& o) {
  EXPECT_OK(CheckSimulateOptions(o));
  std::ostringstream out, err;
  Status status = Simulate(o, out, err);
  EXPECT_OK(status) << err.str();
  return nlohmann::json::parse(out.str());
}

TEST(SimulateCommandTest, TrainsIrisAndASeedReproducesTheWholeRun) {
  const nlohmann::json first = RunJson(Options(3));
  const nlohmann::json again = RunJson(Options(3));
  const nlohmann::json other = RunJson(Options(4));
  EXPECT_GE(first["accuracy"].get<double>(), 0.9);
  EXPECT_EQ(first["steps"], 2 * 150);  // each of the 2 workers computes every version
  EXPECT_EQ(first["updates_applied"], 150);
  EXPECT_EQ(first["gradients_applied"], 2 * 150);
  EXPECT_EQ(first["workers_lost"], 0);
  EXPECT_EQ(first["invariant_violations"], 0);
  EXPECT_EQ(first["hung"], false);
  EXPECT_GT(first["messages"].get<int64_t>(), 150 * 4);
  EXPECT_EQ(first["dropped"], 0);
  for (const char* key : {"event_log_hash", "weights_hash", "virtual_seconds", "messages", "accuracy"}) {
    EXPECT_EQ(first[key], again[key]) << key;
  }
  EXPECT_NE(first["event_log_hash"], other["event_log_hash"]);
  EXPECT_NE(first["weights_hash"], other["weights_hash"]);
}

TEST(SimulateCommandTest, DelaysFromThePlanTakeVirtualTime) {
  const nlohmann::json plain = RunJson(Options(5));
  const nlohmann::json delayed =
      RunJson(Options(5, R"({"faults": [{"delay": {"from": "/job:worker/task:1"}, "ms": 2}]})"));
  // Every step waits for worker 1's gradients: at least 2 ms more per step.
  EXPECT_GT(delayed["virtual_seconds"].get<double>(),
            plain["virtual_seconds"].get<double>() + 150 * 0.002);
  // The same arithmetic: the delay changes when, not what.
  EXPECT_EQ(plain["weights_hash"], delayed["weights_hash"]);
  EXPECT_NE(plain["event_log_hash"], delayed["event_log_hash"]);
}

TEST(SimulateCommandTest, InGraphReplicationTrainsOneReplicatedGraph) {
  SimulateCommandOptions o = Options(3);
  o.replication = "in-graph";
  const nlohmann::json j = RunJson(o);
  EXPECT_GE(j["accuracy"].get<double>(), 0.9);
  EXPECT_EQ(j["steps"], 150);
  EXPECT_EQ(j["updates_applied"], 150);
}

TEST(SimulateCommandTest, AsyncAndBackupWorkersRunFromTheFlags) {
  SimulateCommandOptions o = Options(8);
  o.cluster = "sim:ps=1,worker=3";
  o.mode = "async";
  o.train.steps = 40;
  nlohmann::json j = RunJson(o);
  EXPECT_EQ(j["mode"], "async");
  EXPECT_EQ(j["updates_applied"], 3 * 40);  // every push is an update
  o.mode = "sync";
  o.replicas_to_aggregate = 2;
  o.stragglers = "pareto:1.5";
  j = RunJson(o);
  EXPECT_EQ(j["updates_applied"], 40);
  EXPECT_GT(j["dropped_stale"].get<int64_t>(), 0);  // the backup's late gradients
  EXPECT_EQ(j["invariant_violations"], 0);
}

// Synchronous training without a backup worker cannot complete a version once a
// worker is gone: the drivers give up, naming the lost worker.
TEST(SimulateCommandTest, AKilledWorkerEndsSynchronousTrainingNamingIt) {
  SimulateCommandOptions o =
      Options(6, R"({"faults": [{"kill": "/job:worker/task:1", "at_step": 5}]})");
  o.train.timeout_ms = 2000;
  std::ostringstream out, err;
  Status status = Simulate(o, out, err);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.ToString(), HasSubstr("/job:worker/task:1"));
  EXPECT_THAT(status.ToString(), HasSubstr("1 worker(s) lost"));
}

TEST(SimulateCommandTest, RefusesBadFlagsAndPlansNamingThem) {
  SimulateCommandOptions o = Options(1);
  o.mode = "async";
  o.replication = "in-graph";
  EXPECT_THAT(CheckSimulateOptions(o).message(), HasSubstr("--mode async"));
  o = Options(1);
  o.mode = "sometimes";
  EXPECT_EQ(CheckSimulateOptions(o).code(), Code::kInvalidArgument);
  o = Options(1);
  o.replicas_to_aggregate = 3;  // of 2 workers
  EXPECT_THAT(CheckSimulateOptions(o).message(), HasSubstr("--replicas-to-aggregate 3"));
  o = Options(1);
  o.stragglers = "pareto:-1";
  EXPECT_THAT(CheckSimulateOptions(o).message(), HasSubstr("--stragglers"));
  o = Options(1);
  o.cluster = "sim:ps=1,worker=0";
  EXPECT_THAT(CheckSimulateOptions(o).message(), HasSubstr("at least one worker"));
  o = Options(1);
  o.bandwidth_gbps = 0;
  EXPECT_THAT(CheckSimulateOptions(o).message(), HasSubstr("bandwidth"));
  o = Options(1, R"({"faults": [{"kill": "/job:worker/task:9", "at_step": 1}]})");
  ASSERT_OK(CheckSimulateOptions(o));
  std::ostringstream out, err;
  Status status = Simulate(o, out, err);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("faults_1.json"), HasSubstr("task 9")));
}

// The between-graph run goes through the library trainer, whose workload is any model
// of train: a convolutional network on the 8x8 digits.
TEST(SimulateCommandTest, ACnnOnTheDigitsTrainsBetweenGraphAndReproduces) {
  SimulateCommandOptions o = Options(5);
  o.train.model = "cnn";
  o.train.train_path = "examples/data/digits_training.csv";
  o.train.test_path = "examples/data/digits_test.csv";
  o.train.steps = 40;
  const nlohmann::json first = RunJson(o);
  const nlohmann::json again = RunJson(o);
  EXPECT_EQ(first["global_step"], 40);
  EXPECT_EQ(first["invariant_violations"], 0);
  EXPECT_GT(first["accuracy"].get<double>(), 0.3);  // ten classes: chance is 0.1
  EXPECT_EQ(first["weights_hash"], again["weights_hash"]);
  EXPECT_EQ(first["event_log_hash"], again["event_log_hash"]);
  o.replication = "in-graph";
  EXPECT_THAT(CheckSimulateOptions(o).message(), HasSubstr("--replication in-graph trains --model mlp"));
}

// The process's peak resident memory (VmHWM) since the last ResetPeakMemory, in KiB;
// -1 where /proc cannot tell.
void ResetPeakMemory() { std::ofstream("/proc/self/clear_refs") << "5"; }
int64_t PeakMemoryKiB() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      int64_t kib = -1;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 10, '\n');
  }
  return -1;
}

// Memory linear in the workers: every task's actors share one cluster spec (W copies
// of a W-task spec made 3000 workers take 455 MB and 20000 more than 19 GB). 8000
// workers take about 200 MB (measured: 26 KB a worker); a copy per task would be
// about 3 GB, far above the bound.
TEST(SimulateCommandTest, EightThousandWorkersFitInMemoryLinearInTheWorkers) {
  SimulateCommandOptions o;
  o.cluster = "sim:ps=1,worker=8000";
  o.train.steps = 2;
  o.train.json = true;
  ResetPeakMemory();
  const int64_t before = PeakMemoryKiB();
  if (before < 0) GTEST_SKIP() << "no VmHWM in /proc/self/status";
  const nlohmann::json run = RunJson(o);
  EXPECT_EQ(run["global_step"], 2);
  EXPECT_EQ(run["steps"], 2 * 8000);
  const int64_t grown_kib = PeakMemoryKiB() - before;
  EXPECT_LT(grown_kib, 8000 * 64) << "peak memory grew by " << grown_kib << " KiB";
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
