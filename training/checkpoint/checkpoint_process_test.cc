// Checkpoints across real processes (checkpoint_crash_helper.cc): a training process
// killed by SIGKILL in the middle of writing a checkpoint leaves the previous one
// intact and current, and a fresh process resumes training where a saved one stopped.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_test_util.h"

extern char** environ;

namespace actorflow {
namespace {

using checkpoint_test::Exists;
using checkpoint_test::ListDir;
using checkpoint_test::NewTempDir;
using checkpoint_test::ReadFile;

constexpr auto kChildDeadline = std::chrono::seconds(120);

struct ChildResult {
  bool timed_out = false;
  bool exited = false;
  int exit_code = -1;
  int signal = 0;
  std::string output;  // its stdout and stderr
};

std::string HelperPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  const std::string helper = "training/checkpoint/checkpoint_crash_helper";
  if (srcdir == nullptr || workspace == nullptr) return helper;
  return std::string(srcdir) + "/" + workspace + "/" + helper;
}

// Runs the helper with `args` and waits for it, at most kChildDeadline (then kills it).
// The wait is bounded without sleeping: the child holds the write end of a pipe,
// which the kernel closes when the child dies however it dies, and poll() waits for
// that with the remaining time as its timeout.
ChildResult RunHelper(const std::vector<std::string>& args) {
  ChildResult result;
  const std::string log = NewTempDir() + "/helper.log";
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 100);  // no O_CLOEXEC on the copy
  std::vector<std::string> argv_strings = {HelperPath()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    ADD_FAILURE() << "posix_spawn " << argv[0] << ": " << std::strerror(rc);
    return result;
  }

  const auto deadline = std::chrono::steady_clock::now() + kChildDeadline;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    struct pollfd p = {pipe_fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n != 0) break;  // EOF (POLLHUP): the child is gone
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exited = WIFEXITED(status);
  result.exit_code = result.exited ? WEXITSTATUS(status) : -1;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  result.output = ReadFile(log);
  return result;
}

// A helper values file: variable name -> values.
std::map<std::string, std::vector<double>> ParseValues(const std::string& text) {
  std::map<std::string, std::vector<double>> values;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    size_t count = 0;
    fields >> name >> count;
    std::vector<double>& v = values[name];
    for (size_t i = 0; i < count; ++i) {
      double x;
      fields >> x;
      v.push_back(x);
    }
  }
  return values;
}

std::map<std::string, std::vector<double>> CheckpointValues(const std::string& checkpoint) {
  std::map<std::string, std::vector<double>> values;
  auto tensors = ReadCheckpoint(checkpoint);
  EXPECT_TRUE(tensors.ok()) << tensors.status();
  if (!tensors.ok()) return values;
  for (const auto& [name, t] : *tensors) {
    for (int64_t i = 0; i < t.NumElements(); ++i) values[name].push_back(t.ElementAsDouble(i));
  }
  return values;
}

TEST(CheckpointCrashTest, AProcessKilledMidSaveLeavesThePreviousCheckpointLatestAndIntact) {
  const std::string dir = NewTempDir() + "/ckpts";
  const std::string first = NewTempDir() + "/first.txt";
  // The data file is w (8 bytes), b (4), global_step (8): die after 10 bytes of it.
  ChildResult killed = RunHelper({"crash", dir, "5", first, "10"});
  ASSERT_FALSE(killed.timed_out) << killed.output;
  ASSERT_EQ(killed.signal, SIGKILL) << "exit code " << killed.exit_code << "\n" << killed.output;

  auto latest = LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, dir + "/ckpt-5");
  EXPECT_EQ(ReadFile(dir + "/latest"), "ckpt-5\n");
  // The second save died inside its temporary data file: nothing of ckpt-10 exists
  // under a checkpoint's name.
  std::vector<std::string> temps;
  for (const auto& name : ListDir(dir)) {
    if (name.rfind(".ckpt-10.data.tmp.", 0) == 0) temps.push_back(name);
  }
  ASSERT_EQ(temps.size(), 1u) << ::testing::PrintToString(ListDir(dir));
  EXPECT_EQ(ReadFile(dir + "/" + temps[0]).size(), 10u);
  EXPECT_FALSE(Exists(dir + "/ckpt-10.json"));
  EXPECT_FALSE(Exists(dir + "/ckpt-10.data"));

  // The surviving checkpoint verifies and holds what the process saved.
  auto restored = CheckpointValues(*latest);
  EXPECT_EQ(restored, ParseValues(ReadFile(first)));
  EXPECT_EQ(restored["global_step"], std::vector<double>{5});

  // A fresh process restores it (checking the values), trains on and saves; that
  // save also clears the dead writer's temporary file.
  const std::string second = NewTempDir() + "/second.txt";
  ChildResult resumed = RunHelper({"train", dir, "1", second, first});
  ASSERT_TRUE(resumed.exited && resumed.exit_code == 0) << resumed.output;
  EXPECT_EQ(*LatestCheckpoint(dir), dir + "/ckpt-6");
  EXPECT_FALSE(Exists(dir + "/" + temps[0]));
}

TEST(CheckpointResumeTest, AFreshProcessRestoresTheSavedStateAndTheGlobalStepGoesOn) {
  const std::string dir = NewTempDir() + "/ckpts";
  const std::string a_values = NewTempDir() + "/a.txt";
  ChildResult a = RunHelper({"train", dir, "4", a_values});
  ASSERT_TRUE(a.exited && a.exit_code == 0) << a.output;
  EXPECT_EQ(*LatestCheckpoint(dir), dir + "/ckpt-4");
  EXPECT_EQ(CheckpointValues(dir + "/ckpt-4"), ParseValues(ReadFile(a_values)));

  // B exits 2 unless what it restored equals what A wrote.
  const std::string b_values = NewTempDir() + "/b.txt";
  ChildResult b = RunHelper({"train", dir, "3", b_values, a_values});
  ASSERT_TRUE(b.exited && b.exit_code == 0) << b.output;
  EXPECT_EQ(*LatestCheckpoint(dir), dir + "/ckpt-7");
  auto resumed = ParseValues(ReadFile(b_values));
  EXPECT_EQ(resumed["global_step"], std::vector<double>{7});
  EXPECT_EQ(*ReadCheckpointGlobalStep(dir), 7);

  // Training 4 + 3 steps across two processes is training 7 in one.
  const std::string c_values = NewTempDir() + "/c.txt";
  ChildResult c = RunHelper({"train", NewTempDir() + "/ckpts", "7", c_values});
  ASSERT_TRUE(c.exited && c.exit_code == 0) << c.output;
  auto uninterrupted = ParseValues(ReadFile(c_values));
  ASSERT_EQ(resumed.size(), uninterrupted.size());
  for (const auto& [name, values] : uninterrupted) {
    ASSERT_EQ(resumed[name].size(), values.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) EXPECT_NEAR(resumed[name][i], values[i], 1e-6) << name;
  }
  EXPECT_NE(resumed["w"], ParseValues(ReadFile(a_values))["w"]);  // B did train
}

TEST(CheckpointResumeTest, AResumingProcessRejectsRestoredValuesThatDifferFromTheExpected) {
  const std::string dir = NewTempDir() + "/ckpts";
  const std::string a_values = NewTempDir() + "/a.txt";
  ASSERT_EQ(RunHelper({"train", dir, "2", a_values}).exit_code, 0);
  const std::string wrong = NewTempDir() + "/wrong.txt";
  checkpoint_test::WriteFile(wrong, "w 2 0 0\n");
  ChildResult b = RunHelper({"train", dir, "1", NewTempDir() + "/b.txt", wrong});
  EXPECT_TRUE(b.exited && b.exit_code == 2) << b.output;
}

}  // namespace
}  // namespace actorflow
