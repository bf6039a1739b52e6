// Recovery of between-graph sync training across real processes on 127.0.0.1: the ps
// task is an `actorflow server` process, each worker an `actorflow train --cluster
// FILE --job worker --task I` process whose driver runs under the recovery
// supervisor (training/distributed/recovery.h), the chief writing a coordinated checkpoint every
// 100 global steps.
//   - The chief is SIGKILLed in the middle of training and started again: the other
//     worker waits for it (no restart), the new chief finds the last checkpoint and
//     the shards at a newer global step and goes on from them.
//   - The ps task is SIGKILLed in the middle of training and started again (same
//     port, empty): both workers get Unavailable naming it, reconnect, the chief
//     restores the last checkpoint into it, and training resumes.
// In both, training ends at the uninterrupted run's global step, the global step
// every worker saw never went backwards, the final accuracy is within 1.5 points of
// an uninterrupted run's, and the checkpoint directory's latest checkpoint predicts
// what the chief evaluated. The recovery times are printed.
//
// Every wait is bounded; no sleeps, no fixed ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/child_process.h"
#include "tests/cluster_test_kit.h"
#include "tests/process_cluster.h"
#include "tests/subprocess.h"
#include "training/data/csv_dataset.h"

namespace actorflow {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using subprocess::ActorflowBinary;
using subprocess::ChildProcess;
using subprocess::ExampleData;
using subprocess::FinishWorker;
using subprocess::ProcessCluster;
using subprocess::StartPsCluster;
using subprocess::StartWorker;
using subprocess::TestTmpDir;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kRunTimeout(240000);
// Digits (360 test rows, so that 1.5 points is more than one row): 2 workers, 1437
// rows in all, batches of 32: 23 sync steps per epoch.
constexpr int kEpochs = 100;
constexpr int64_t kTargetGlobalStep = 23 * kEpochs;
constexpr int kCheckpointEvery = 100;
// The failure is injected once the chief reported this step (its progress lines come
// every tenth of the run): 30% into training, after six checkpoints, with 1600
// steps left.
constexpr int64_t kKillAtStep = 690;
constexpr char kKillAtLine[] = "worker 0: step 690/";

using ::testing::AnyOf;
using ::testing::HasSubstr;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Digits, normalized, [64], SGD on the ps (no optimizer slots: a restore is exact).
std::unique_ptr<ChildProcess> StartDigitsWorker(const ProcessCluster& cluster, int task,
                                                const std::string& checkpoint_dir) {
  // clang-format off
  std::vector<std::string> flags = {
      "--mode", "sync", "--train", ExampleData("digits_training.csv"),
      "--test", ExampleData("digits_test.csv"), "--normalize", "--hidden", "64",
      "--optimizer", "sgd", "--lr", "0.1", "--batch", "32", "--epochs", std::to_string(kEpochs),
      "--seed", "3", "--timeout-ms", "30000", "--reconnect-timeout-ms", "60000",
      "--max-restarts", "2", "--json"};
  // clang-format on
  if (task == 0) {
    flags.insert(flags.end(), {"--checkpoint-dir", checkpoint_dir, "--checkpoint-every",
                               std::to_string(kCheckpointEvery)});
  }
  return StartWorker(cluster, task, flags);
}

// What every run must show: the uninterrupted run's end, a monotone global step.
void ExpectCompleteAndMonotone(const json& r, const std::string& name) {
  ASSERT_TRUE(r.is_object()) << name;
  EXPECT_EQ(r.at("global_step"), kTargetGlobalStep) << name << ": " << r.dump();
  EXPECT_TRUE(r.at("recovery").at("global_step_monotone").get<bool>()) << name << ": " << r.dump();
}

// The accuracy `actorflow predict` gets from the checkpoint directory's latest
// checkpoint on the digits test file.
double PredictedAccuracy(const std::string& checkpoint_dir) {
  subprocess::ProcessResult r = subprocess::RunProcess(
      ActorflowBinary(), {"predict", "--checkpoint-dir", checkpoint_dir, "--input",
                          ExampleData("digits_test.csv"), "--json"});
  EXPECT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("predictions")) {
    ADD_FAILURE() << "predict printed " << r.out;
    return -1;
  }
  auto data = LoadCsv(ExampleData("digits_test.csv"));
  if (!data.ok()) {
    ADD_FAILURE() << data.status();
    return -1;
  }
  const json& predictions = j.at("predictions");
  const int64_t rows = data->labels.NumElements();
  EXPECT_EQ(static_cast<int64_t>(predictions.size()), rows);
  if (rows == 0 || static_cast<int64_t>(predictions.size()) != rows) return -1;
  int64_t correct = 0;
  for (int64_t i = 0; i < rows; ++i) {
    correct += predictions[i].at("class").get<int>() == data->labels.data<int32_t>()[i] ? 1 : 0;
  }
  return static_cast<double>(correct) / rows;
}

// The chief's accuracy on a fresh cluster without failures (computed once).
double UninterruptedAccuracy() {
  static const double accuracy = [] {
    auto cluster = StartPsCluster(2);
    if (cluster == nullptr) return -1.0;
    const std::string dir = TestTmpDir("uninterrupted");
    auto chief = StartDigitsWorker(*cluster, 0, dir);
    auto other = StartDigitsWorker(*cluster, 1, dir);
    json r0 = FinishWorker(chief.get(), "worker 0", kRunTimeout);
    json r1 = FinishWorker(other.get(), "worker 1", kRunTimeout);
    ExpectCompleteAndMonotone(r0, "uninterrupted worker 0");
    ExpectCompleteAndMonotone(r1, "uninterrupted worker 1");
    if (!r0.is_object()) return -1.0;
    EXPECT_EQ(r0.at("recovery").at("events"), json::array());
    return r0.at("accuracy").get<double>();
  }();
  return accuracy;
}

constexpr double kAccuracyBound = 0.015;  // 1.5 points

TEST(RecoveryProcessTest, AKilledChiefRestartsFromTheCheckpointAndTheShardsGlobalStep) {
  const double baseline = UninterruptedAccuracy();
  ASSERT_GE(baseline, 0.95);
  auto cluster = StartPsCluster(2);
  ASSERT_NE(cluster, nullptr);
  const std::string dir = TestTmpDir("chief_kill");
  auto chief = StartDigitsWorker(*cluster, 0, dir);
  auto other = StartDigitsWorker(*cluster, 1, dir);
  ASSERT_NE(chief, nullptr);
  ASSERT_NE(other, nullptr);
  std::string line;
  ASSERT_TRUE(chief->WaitForErrLine(kKillAtLine, kRunTimeout, &line))
      << "the chief reported no progress; stderr: " << chief->err();
  chief->Kill(SIGKILL);
  const Clock::time_point killed = Clock::now();
  auto restarted = StartDigitsWorker(*cluster, 0, dir);
  ASSERT_NE(restarted, nullptr);

  json r0 = FinishWorker(restarted.get(), "restarted worker 0", kRunTimeout);
  json r1 = FinishWorker(other.get(), "worker 1", kRunTimeout);
  const double total_seconds = SecondsSince(killed);
  ExpectCompleteAndMonotone(r0, "restarted worker 0");
  ExpectCompleteAndMonotone(r1, "worker 1");
  ASSERT_TRUE(r0.is_object() && r1.is_object());

  // The restarted chief found the last checkpoint written before the kill and the
  // shards at a global step at least as new: it went on from there, not from 0.
  const json& start = r0.at("recovery");
  ASSERT_TRUE(start.contains("start_checkpoint")) << start.dump();
  const std::string checkpoint = start.at("start_checkpoint");
  const int64_t checkpoint_step = std::stoll(checkpoint.substr(checkpoint.rfind('-') + 1));
  EXPECT_GE(checkpoint_step, kKillAtStep - kCheckpointEvery) << checkpoint;
  EXPECT_GE(start.at("started_from_global_step").get<int64_t>(), checkpoint_step);
  EXPECT_LT(start.at("started_from_global_step").get<int64_t>(), kTargetGlobalStep);
  EXPECT_EQ(start.at("restarts"), 0);

  // The other worker carried on: it waited for the chief to rejoin (not a restart).
  const json& events = r1.at("recovery").at("events");
  ASSERT_EQ(events.size(), 1u) << r1.dump();
  EXPECT_TRUE(events[0].at("waited_for_workers").get<bool>()) << r1.dump();
  EXPECT_THAT(events[0].at("failure").get<std::string>(), HasSubstr("lost: worker 0")) << r1.dump();
  EXPECT_EQ(r1.at("recovery").at("restarts"), 0);
  EXPECT_EQ(r1.at("recovery").at("steps_lost"), 0);

  EXPECT_NEAR(r0.at("accuracy").get<double>(), baseline, kAccuracyBound + 1e-9) << r0.dump();
  EXPECT_NEAR(PredictedAccuracy(dir), r0.at("accuracy").get<double>(), 1e-9);
  std::printf(
      "chief kill: checkpoint %s, restarted chief went on from global step %lld; worker 1 "
      "resumed %.3f s after its failure (the chief's restart included); kill to end %.2f s; "
      "accuracy %.4f (uninterrupted %.4f)\n",
      checkpoint.c_str(), static_cast<long long>(start.at("started_from_global_step")),
      events[0].at("recovery_seconds").get<double>(), total_seconds,
      r0.at("accuracy").get<double>(), baseline);
}

TEST(RecoveryProcessTest, AKilledPsIsRestoredFromTheLastCheckpointAndTrainingResumes) {
  const double baseline = UninterruptedAccuracy();
  ASSERT_GE(baseline, 0.95);
  auto cluster = StartPsCluster(2);
  ASSERT_NE(cluster, nullptr);
  const std::string dir = TestTmpDir("ps_kill");
  auto chief = StartDigitsWorker(*cluster, 0, dir);
  auto other = StartDigitsWorker(*cluster, 1, dir);
  ASSERT_NE(chief, nullptr);
  ASSERT_NE(other, nullptr);
  std::string line;
  ASSERT_TRUE(chief->WaitForErrLine(kKillAtLine, kRunTimeout, &line))
      << "the chief reported no progress; stderr: " << chief->err();
  ASSERT_TRUE(cluster->Kill("ps", 0).ok());
  const Clock::time_point killed = Clock::now();
  // The workers notice (Unavailable naming the task), not hang.
  ASSERT_TRUE(
      chief->WaitForErrLine("worker 0: lost the parameter servers", kRunTimeout, &line))
      << chief->out() << chief->err();
  const double noticed_seconds = SecondsSince(killed);
  EXPECT_THAT(line, HasSubstr("Unavailable")) << line;
  EXPECT_THAT(line, AnyOf(HasSubstr("/job:ps/task:0"), HasSubstr("/job:ps/replica:0/task:0")))
      << line;
  const Clock::time_point restart = Clock::now();
  ASSERT_TRUE(cluster->Restart("ps", 0).ok());
  const double restart_seconds = SecondsSince(restart);

  json r0 = FinishWorker(chief.get(), "worker 0", kRunTimeout);
  json r1 = FinishWorker(other.get(), "worker 1", kRunTimeout);
  ExpectCompleteAndMonotone(r0, "worker 0");
  ExpectCompleteAndMonotone(r1, "worker 1");
  ASSERT_TRUE(r0.is_object() && r1.is_object());

  const json& events = r0.at("recovery").at("events");
  ASSERT_EQ(events.size(), 1u) << r0.dump();
  const json& e = events[0];
  EXPECT_THAT(e.at("failure").get<std::string>(), HasSubstr("Unavailable")) << e.dump();
  EXPECT_TRUE(e.at("restored").get<bool>()) << e.dump();
  const int64_t checkpoint_step = e.at("checkpoint_step");
  const int64_t failed_at = e.at("step_at_failure");
  EXPECT_EQ(checkpoint_step % kCheckpointEvery, 0) << e.dump();
  EXPECT_GE(checkpoint_step, kKillAtStep - kCheckpointEvery) << e.dump();
  EXPECT_LE(checkpoint_step, failed_at) << e.dump();
  EXPECT_GE(e.at("resumed_from").get<int64_t>(), failed_at) << e.dump();  // never backwards
  EXPECT_EQ(e.at("steps_lost"), failed_at - checkpoint_step) << e.dump();
  EXPECT_EQ(r0.at("recovery").at("restarts"), 1);
  const json& other_events = r1.at("recovery").at("events");
  ASSERT_EQ(other_events.size(), 1u) << r1.dump();
  EXPECT_THAT(other_events[0].at("failure").get<std::string>(), HasSubstr("Unavailable"))
      << r1.dump();
  EXPECT_FALSE(other_events[0].at("restored").get<bool>());  // only the chief restores

  EXPECT_NEAR(r0.at("accuracy").get<double>(), baseline, kAccuracyBound + 1e-9) << r0.dump();
  EXPECT_NEAR(PredictedAccuracy(dir), r0.at("accuracy").get<double>(), 1e-9);
  std::printf(
      "ps kill: noticed after %.3f s; ps restarted in %.3f s; restored %s (step %lld) at "
      "global step %lld, %lld updates lost; chief resumed %.3f s after its failure, worker 1 "
      "%.3f s; accuracy %.4f (uninterrupted %.4f)\n",
      noticed_seconds, restart_seconds, e.at("checkpoint").get<std::string>().c_str(),
      static_cast<long long>(checkpoint_step), static_cast<long long>(e.at("resumed_from")),
      static_cast<long long>(e.at("steps_lost")), e.at("recovery_seconds").get<double>(),
      other_events[0].at("recovery_seconds").get<double>(), r0.at("accuracy").get<double>(),
      baseline);
}

}  // namespace
}  // namespace actorflow
