// `actorflow train --cluster local:worker=W --mode allreduce` on the digits: the
// accuracy of --mode sync (the same averaged gradients, through a ps) within 0.01,
// replicas byte-identical, and the flags it refuses.
#include "tools/train/train_allreduce.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "graph/test_files.h"
#include "tools/cli/cli_common.h"
#include "tools/train/train_command.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

TrainCommandOptions DigitsOnTwoWorkers(const std::string& cluster, const std::string& mode) {
  TrainCommandOptions options;
  options.train_path = TestDataFile("digits_training.csv");
  options.test_path = TestDataFile("digits_test.csv");
  options.normalize = true;
  options.hidden = "64,32";
  options.optimizer = "sgd";
  options.learning_rate = 0.1;
  options.epochs = 4;
  options.cluster = cluster;
  options.mode = mode;
  options.json = true;
  return options;
}

nlohmann::json Train(const TrainCommandOptions& options) {
  std::ostringstream out, err;
  EXPECT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  return nlohmann::json::parse(out.str(), nullptr, /*allow_exceptions=*/false);
}

TEST(TrainAllReduceTest, DigitsReachTheSyncModesAccuracyWithByteIdenticalReplicas) {
  TrainCommandOptions allreduce = DigitsOnTwoWorkers("local:worker=2", "allreduce");
  allreduce.bucket_mb = 0.004;  // 4 KiB: the MLP's gradients go in several buckets
  const nlohmann::json a = Train(allreduce);
  const nlohmann::json s = Train(DigitsOnTwoWorkers("local:ps=1,worker=2", "sync"));
  ASSERT_FALSE(a.is_discarded());
  ASSERT_FALSE(s.is_discarded());
  EXPECT_EQ(a["mode"], "allreduce");
  EXPECT_EQ(a["workers"], 2);
  EXPECT_TRUE(a["replicas_identical"].get<bool>()) << a;
  EXPECT_GT(a["buckets"].get<int>(), 1) << a;
  EXPECT_EQ(a["global_step"], s["global_step"]) << a << s;
  EXPECT_GE(a["accuracy"].get<double>(), 0.9) << a;
  EXPECT_LE(std::fabs(a["accuracy"].get<double>() - s["accuracy"].get<double>()), 0.01) << a << s;
}

TEST(TrainAllReduceTest, EveryCpuOfEveryTaskIsAMemberWithDevices) {
  TrainCommandOptions options = DigitsOnTwoWorkers("local:worker=2", "allreduce");
  options.devices = "cpu=2";
  options.epochs = 8;  // 4 members: 12 steps per epoch
  const nlohmann::json j = Train(options);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["workers"], 4) << j;
  EXPECT_EQ(j["tasks"], 2) << j;
  EXPECT_TRUE(j["replicas_identical"].get<bool>()) << j;
  EXPECT_GE(j["accuracy"].get<double>(), 0.8) << j;
}

TEST(TrainAllReduceTest, FlagsThatDoNotFitAllReduceAreRefusedNamingThem) {
  struct Case {
    std::string cluster;
    std::function<void(TrainCommandOptions*)> change;
    std::string named;
  };
  const Case cases[] = {
      {"local:ps=1,worker=2", [](TrainCommandOptions*) {}, "no ps task"},
      {"cluster.json", [](TrainCommandOptions*) {}, "needs --task I"},
      {"local:worker=2", [](TrainCommandOptions* o) { o->replicas_to_aggregate = 1; },
       "--replicas-to-aggregate"},
      {"local:worker=2", [](TrainCommandOptions* o) { o->task = 0; }, "--task"},
      {"local:worker=2", [](TrainCommandOptions* o) { o->bucket_mb = 0; }, "--bucket-mb 0"},
      {"local:worker=2", [](TrainCommandOptions* o) { o->devices = "cpu=1,gpu=1"; },
       "CPU devices"},
  };
  for (const Case& c : cases) {
    TrainCommandOptions options = DigitsOnTwoWorkers(c.cluster, "allreduce");
    c.change(&options);
    const Status s = CheckAllReduceFlags(options);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.cluster;
    EXPECT_THAT(s.message(), HasSubstr(c.named)) << s;
  }
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
