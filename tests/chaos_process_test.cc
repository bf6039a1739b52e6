// Chaos across real processes on 127.0.0.1, the short form of tools/chaos.sh: 1 ps
// (`actorflow server`) and 3 workers (`actorflow train --cluster FILE --job worker
// --task I`, each under the recovery supervisor, the chief writing a coordinated
// checkpoint every kCheckpointEvery global steps) train the digits with --mode async
// while the test, standing for a supervisor, SIGKILLs the ps, the chief and the other
// workers in turn and starts each one again at once with the same command line. The
// schedule is deterministic: a kill after every kCheckpointsPerKill checkpoints the
// chief reports. Then:
//   - every worker's last process exits 0 with its result, and the ps stops with 0;
//   - the global step never went backwards (each process's progress lines, each
//     result, and the chief's checkpoints across its restarts);
//   - every checkpoint left on disk reads back whole (checksums) and none of a
//     killed writer's temporary files is left;
//   - the chief's accuracy is within 2 points of an undisturbed run's;
//   - no process is left that names the cluster.
//
// Every wait is bounded; no sleeps, no fixed ports.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/child_process.h"
#include "tests/cluster_test_kit.h"
#include "tests/process_cluster.h"
#include "tests/subprocess.h"
#include "training/checkpoint/checkpoint.h"

namespace actorflow {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using subprocess::ChildProcess;
using subprocess::ExampleData;
using subprocess::FinishWorker;
using subprocess::ProcessCluster;
using subprocess::StartPsCluster;
using subprocess::StartWorker;
using subprocess::TestTmpDir;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kRunTimeout(180000);
constexpr int kWorkers = 3;
// Digits, 1437 rows, batches of 32: 45 global steps per epoch, 36 000 in all
// undisturbed (each worker 12 000 steps of its own).
constexpr int kEpochs = 800;
constexpr int kCheckpointEvery = 1000;
// Eight kills, one after every second checkpoint: they are over by about global step
// 16 000, long before any worker can finish its share (a restarted worker starts it
// afresh).
constexpr int kCheckpointsPerKill = 2;
constexpr int kPs = -1;
// The last chief process lives through the second ps kill: it restores a checkpoint.
const std::vector<int> kSchedule = {kPs, 0, 1, 2, 0, kPs, 2, 1};
constexpr double kAccuracyBound = 0.02;

// The command line tools/chaos.sh gives each worker.
std::unique_ptr<ChildProcess> StartChaosWorker(const ProcessCluster& cluster, int task,
                                               const std::string& checkpoint_dir) {
  // clang-format off
  std::vector<std::string> flags = {
      "--mode", "async", "--train", ExampleData("digits_training.csv"),
      "--test", ExampleData("digits_test.csv"), "--normalize", "--hidden", "64",
      "--optimizer", "sgd", "--lr", "0.1", "--batch", "32", "--epochs", std::to_string(kEpochs),
      "--seed", "1", "--timeout-ms", "60000", "--reconnect-timeout-ms", "60000",
      "--max-restarts", "100", "--json"};
  // clang-format on
  if (task == 0) {
    flags.insert(flags.end(), {"--checkpoint-dir", checkpoint_dir, "--checkpoint-every",
                               std::to_string(kCheckpointEvery)});
  }
  return StartWorker(cluster, task, flags);
}

// The global steps of `err`'s lines that match `pattern` (one group: the step).
std::vector<int64_t> StepsIn(const std::string& err, const std::regex& pattern) {
  std::vector<int64_t> steps;
  std::istringstream lines(err);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, pattern)) steps.push_back(std::stoll(m[1]));
  }
  return steps;
}

const std::regex kProgress("^worker \\d+: step \\d+/\\d+ .*global step (\\d+)");
const std::regex kCheckpointLine("^worker 0: checkpoint \\S+ at global step (\\d+)");

// The processes whose command line holds `text`.
std::vector<std::string> ProcessesNaming(const std::string& text) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream file(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(text) != std::string::npos) found.push_back(pid + " " + cmdline);
  }
  return found;
}

// The chief's accuracy on a fresh cluster without kills.
double UndisturbedAccuracy() {
  auto cluster = StartPsCluster(kWorkers);
  if (cluster == nullptr) return -1;
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < kWorkers; ++i)
    workers.push_back(StartChaosWorker(*cluster, i, TestTmpDir("calm")));
  std::vector<json> results;
  for (int i = 0; i < kWorkers; ++i) {
    results.push_back(
        FinishWorker(workers[i].get(), "undisturbed worker " + std::to_string(i), kRunTimeout));
  }
  return results[0].is_object() ? results[0].at("accuracy").get<double>() : -1;
}

TEST(ChaosProcessTest, AsyncTrainingSurvivesThePsTheChiefAndWorkersKilledInTurn) {
  const Clock::time_point calm_start = Clock::now();
  const double baseline = UndisturbedAccuracy();
  const double calm_seconds = std::chrono::duration<double>(Clock::now() - calm_start).count();
  ASSERT_GE(baseline, 0.9);

  auto cluster = StartPsCluster(kWorkers);
  ASSERT_NE(cluster, nullptr);
  const std::string dir = TestTmpDir("chaos");
  const Clock::time_point start = Clock::now();
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.push_back(StartChaosWorker(*cluster, i, dir));
    ASSERT_NE(workers.back(), nullptr);
  }
  // The processes killed so far, per task, in order (kept for their output).
  std::map<int, std::vector<std::unique_ptr<ChildProcess>>> killed;
  std::map<std::string, int> kills;
  for (int victim : kSchedule) {
    for (int c = 0; c < kCheckpointsPerKill; ++c) {
      std::string line;
      ASSERT_TRUE(workers[0]->WaitForErrLine("worker 0: checkpoint ", kRunTimeout, &line))
          << "the chief wrote no checkpoint; stderr: " << workers[0]->err();
    }
    for (int i = 0; i < kWorkers; ++i) {
      ASSERT_FALSE(workers[i]->HasExited())
          << "worker " << i << " ended before the kills did (exit " << workers[i]->exit_code()
          << "): train longer; stderr: " << workers[i]->err();
    }
    if (victim == kPs) {
      ASSERT_TRUE(cluster->Kill("ps", 0).ok());
      ASSERT_TRUE(cluster->Restart("ps", 0).ok());
      ++kills["ps"];
      continue;
    }
    workers[victim]->Kill(SIGKILL);
    EXPECT_EQ(workers[victim]->term_signal(), SIGKILL);
    killed[victim].push_back(std::move(workers[victim]));
    workers[victim] = StartChaosWorker(*cluster, victim, dir);
    ASSERT_NE(workers[victim], nullptr);
    ++kills[victim == 0 ? "chief" : "worker"];
  }

  std::vector<json> results;
  for (int i = 0; i < kWorkers; ++i) {
    results.push_back(FinishWorker(workers[i].get(), "worker " + std::to_string(i), kRunTimeout));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ChildProcess* ps = cluster->process("ps", 0);
  ASSERT_NE(ps, nullptr);
  ps->Kill(SIGTERM);
  ASSERT_TRUE(ps->WaitForExit(milliseconds(15000))) << "the ps did not stop on SIGTERM";
  EXPECT_TRUE(ps->exited() && ps->exit_code() == 0) << ps->err();
  for (const json& r : results) ASSERT_TRUE(r.is_object());

  // A monotone global step: within every process, in every result, and in the
  // chief's checkpoints across all its processes.
  std::vector<int64_t> checkpoints;
  for (int i = 0; i < kWorkers; ++i) {
    std::vector<const ChildProcess*> runs;
    for (const auto& p : killed[i]) runs.push_back(p.get());
    runs.push_back(workers[i].get());
    for (const ChildProcess* run : runs) {
      const std::vector<int64_t> steps = StepsIn(run->err(), kProgress);
      EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end())) << run->err();
      if (i == 0) {
        for (int64_t s : StepsIn(run->err(), kCheckpointLine)) checkpoints.push_back(s);
      }
    }
    EXPECT_TRUE(results[i].at("recovery").at("global_step_monotone").get<bool>())
        << results[i].dump();
  }
  EXPECT_TRUE(std::adjacent_find(checkpoints.begin(), checkpoints.end(),
                                 [](int64_t a, int64_t b) { return b <= a; }) == checkpoints.end())
      << ::testing::PrintToString(checkpoints);
  // The last chief process lost the ps once and restored a checkpoint into it.
  const json& recovery = results[0].at("recovery");
  EXPECT_EQ(recovery.at("restarts"), 1) << recovery.dump();
  const json& events = recovery.at("events");
  EXPECT_TRUE(std::any_of(events.begin(), events.end(),
                          [](const json& e) { return e.at("restored").get<bool>(); }))
      << recovery.dump();

  // Every checkpoint left reads back whole; a killed writer left nothing behind.
  int on_disk = 0;
  const std::regex manifest("ckpt-(\\d+)\\.json");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename();
    std::smatch m;
    EXPECT_NE(name[0], '.') << "a temporary file is left: " << name;
    if (!std::regex_match(name, m, manifest)) continue;
    ++on_disk;
    auto read = ReadCheckpoint(dir + "/ckpt-" + m[1].str());
    EXPECT_TRUE(read.ok()) << name << ": " << read.status();
  }
  EXPECT_GE(on_disk, 1);

  const double accuracy = results[0].at("accuracy").get<double>();
  EXPECT_NEAR(accuracy, baseline, kAccuracyBound) << results[0].dump();

  for (int i = 0; i < kWorkers; ++i) {
    for (const auto& p : killed[i]) EXPECT_FALSE(p->running());
    EXPECT_FALSE(workers[i]->running());
  }
  EXPECT_TRUE(ProcessesNaming(cluster->spec_path()).empty())
      << ::testing::PrintToString(ProcessesNaming(cluster->spec_path()));

  std::printf(
      "chaos: %d kills survived (ps %d, chief %d, worker %d) in %.1f s (undisturbed %.1f s); "
      "global step %lld; %zu checkpoints written, %d on disk, all readable; accuracy %.4f "
      "(undisturbed %.4f)\n",
      kills["ps"] + kills["chief"] + kills["worker"], kills["ps"], kills["chief"],
      kills["worker"], seconds, calm_seconds,
      static_cast<long long>(results[0].at("global_step").get<int64_t>()), checkpoints.size(),
      on_disk, accuracy, baseline);
}

}  // namespace
}  // namespace actorflow
