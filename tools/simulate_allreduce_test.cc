// `actorflow simulate --mode allreduce`: Iris on simulated workers without ps, the
// weights identical on every member at every step, the same seed the same run,
// message faults tolerated, and the flags it refuses.
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/status_testing.h"
#include "tools/simulate_command.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

SimulateCommandOptions AllReduce(const std::string& cluster, uint64_t seed) {
  SimulateCommandOptions o;
  o.cluster = cluster;
  o.mode = "allreduce";
  o.train.steps = 120;
  o.train.seed = seed;
  o.train.normalize = true;
  o.train.json = true;
  o.train.batch = 16;
  o.train.optimizer = "sgd";
  o.train.learning_rate = 0.1;
  o.jitter_us = 20;
  return o;
}

nlohmann::json RunJson(const SimulateCommandOptions& o) {
  EXPECT_OK(CheckSimulateOptions(o));
  std::ostringstream out, err;
  EXPECT_OK(Simulate(o, out, err)) << out.str();
  return nlohmann::json::parse(out.str(), nullptr, false);
}

TEST(SimulateAllReduceTest, WorkersWithoutPsTrainIrisWithIdenticalWeightsAndASeedReplaysTheRun) {
  const nlohmann::json first = RunJson(AllReduce("sim:worker=3", 5));
  const nlohmann::json again = RunJson(AllReduce("sim:worker=3", 5));
  const nlohmann::json other = RunJson(AllReduce("sim:worker=3", 6));
  ASSERT_FALSE(first.is_discarded());
  EXPECT_EQ(first["mode"], "allreduce");
  EXPECT_EQ(first["workers"], 3);
  EXPECT_EQ(first["global_step"], 120);
  EXPECT_EQ(first["steps_with_differing_weights"], 0);
  EXPECT_GE(first["accuracy"].get<double>(), 0.85) << first;
  EXPECT_GT(first["virtual_seconds"].get<double>(), 0.0);
  for (const char* key : {"event_log_hash", "weights_hash", "virtual_seconds", "accuracy"}) {
    EXPECT_EQ(first[key], again[key]) << key;
  }
  EXPECT_NE(first["event_log_hash"], other["event_log_hash"]);
}

TEST(SimulateAllReduceTest, DelayedDuplicatedAndReorderedChunksChangeNoWeight) {
  SimulateCommandOptions o = AllReduce("sim:worker=4", 2);
  o.train.steps = 40;
  o.faults_text = R"({"faults": [
      {"delay": {"kind": "tensor"}, "ms": 2, "jitter_ms": 3, "probability": 0.3},
      {"duplicate": {"kind": "tensor"}, "probability": 0.1},
      {"reorder": {}, "probability": 0.2}]})";
  const nlohmann::json j = RunJson(o);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["global_step"], 40);
  EXPECT_EQ(j["steps_with_differing_weights"], 0);
}

// The run goes through the library trainer, whose replicas are any model of train:
// a convolutional network on the 8x8 digits, its replicas identical at every step.
TEST(SimulateAllReduceTest, ACnnOnTheDigitsKeepsItsReplicasIdentical) {
  SimulateCommandOptions o = AllReduce("sim:worker=2", 3);
  o.train.model = "cnn";
  o.train.train_path = "examples/data/digits_training.csv";
  o.train.test_path = "examples/data/digits_test.csv";
  o.train.steps = 40;
  o.train.optimizer = "adam";
  o.train.learning_rate = 0.01;
  const nlohmann::json j = RunJson(o);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["global_step"], 40);
  EXPECT_EQ(j["steps_with_differing_weights"], 0);
  EXPECT_GT(j["accuracy"].get<double>(), 0.3);  // ten classes: chance is 0.1
}

TEST(SimulateAllReduceTest, RefusesPsModesWithoutPsAndKillsUnderAllReduce) {
  SimulateCommandOptions sync = AllReduce("sim:worker=2", 1);
  sync.mode = "sync";
  EXPECT_THAT(CheckSimulateOptions(sync).message(), HasSubstr("add ps=P"));
  SimulateCommandOptions backups = AllReduce("sim:worker=2", 1);
  backups.replicas_to_aggregate = 1;
  EXPECT_EQ(CheckSimulateOptions(backups).code(), Code::kInvalidArgument);
  SimulateCommandOptions kill = AllReduce("sim:worker=2", 1);
  kill.faults_text = R"({"faults": [{"kill": "/job:worker/task:1", "at_step": 3}]})";
  std::ostringstream out, err;
  const Status s = Simulate(kill, out, err);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("message faults"));
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
