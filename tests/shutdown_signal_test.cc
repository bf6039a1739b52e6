// A shutdown signal (SIGTERM) that the kernel hands to any thread of an
// `actorflow server` stops it cleanly (exit 0), also when that thread is one that a
// library started before main set the shutdown mask and so leaves the signal
// unblocked (OpenBLAS's worker threads, started when the library loads): without a
// handler the default action would end the process at once. A real process on
// 127.0.0.1; every wait is bounded.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <dirent.h>
#include <gtest/gtest.h>

#include "tests/process_cluster.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using std::chrono::milliseconds;

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// Whether thread `tid` of process `pid` blocks `signal`, from the SigBlk mask of
// /proc/PID/task/TID/status; true when the file cannot be read (a thread that ended
// is no candidate to signal).
bool Blocks(pid_t pid, pid_t tid, int signal) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
                       "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) != 0) continue;
    const uint64_t mask = std::strtoull(line.c_str() + 7, nullptr, 16);
    return (mask >> (signal - 1)) & 1u;
  }
  return true;
}

// The threads of `pid` other than its main thread that leave `signal` unblocked.
// The main thread waits for the shutdown signals in sigwait, which unblocks them
// while it waits: the kernel would hand it the signal whatever the others do.
std::vector<pid_t> ThreadsNotBlocking(pid_t pid, int signal) {
  std::vector<pid_t> open;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* tasks = opendir(dir.c_str());
  if (tasks == nullptr) return open;
  while (dirent* entry = readdir(tasks)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid > 0 && tid != pid && !Blocks(pid, tid, signal)) open.push_back(tid);
  }
  closedir(tasks);
  return open;
}

TEST(ShutdownSignalTest, ASigtermToAThreadThatLeavesItUnblockedStopsTheServerCleanly) {
  subprocess::ProcessClusterOptions options;
  options.binary = subprocess::Runfile("tools/actorflow");
  options.shape = {{"worker", 1}};
  options.dir = TmpDir();
  auto cluster = subprocess::ProcessCluster::Start(std::move(options));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  subprocess::ChildProcess* server = (*cluster)->process("worker", 0);
  const std::vector<pid_t> open = ThreadsNotBlocking(server->pid(), SIGTERM);
  if (open.empty()) {
    GTEST_SKIP() << "every thread of the server but the waiting one blocks SIGTERM (no "
                    "library thread started before main): nothing to check";
  }
  ASSERT_EQ(syscall(SYS_tgkill, server->pid(), open.front(), SIGTERM), 0);
  ASSERT_TRUE(server->WaitForExit(milliseconds(20000))) << "the server ignored SIGTERM";
  EXPECT_EQ(server->term_signal(), 0) << "the signal ended the server: " << server->err();
  EXPECT_TRUE(server->exited());
  EXPECT_EQ(server->exit_code(), 0) << server->err();
}

}  // namespace
}  // namespace actorflow
