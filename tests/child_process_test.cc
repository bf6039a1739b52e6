// The process test kit's own contracts that the cluster tests lean on: Suspend
// returns only once the child is stopped (the kernel says so, not the signal's
// sending), SIGCONT lets it go on, and a child that has ended cannot be suspended.
#include "tests/child_process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

namespace actorflow {
namespace subprocess {
namespace {

// The state letter of /proc/PID/stat ("T" stopped, "S" sleeping, ...); "" if gone.
std::string ProcessState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t name_end = line.rfind(')');  // the name may hold spaces
  return name_end == std::string::npos || name_end + 2 >= line.size()
             ? std::string()
             : line.substr(name_end + 2, 1);
}

TEST(ChildProcessTest, SuspendReturnsOnceTheChildIsStoppedAndSigcontResumesIt) {
  std::string error;
  auto child = ChildProcess::Start("/bin/sleep", {"60"}, &error);
  ASSERT_NE(child, nullptr) << error;
  ASSERT_TRUE(child->Suspend(std::chrono::seconds(10)));
  EXPECT_EQ(ProcessState(child->pid()), "T");
  EXPECT_TRUE(child->running());

  child->Kill(SIGCONT);
  EXPECT_FALSE(child->WaitForExit(std::chrono::milliseconds(50)))
      << "a resumed sleep 60 should still run";
  EXPECT_NE(ProcessState(child->pid()), "T");
  child->Kill();
  EXPECT_FALSE(child->running());
  EXPECT_EQ(child->term_signal(), SIGKILL);
}

TEST(ChildProcessTest, AChildThatEndedCannotBeSuspended) {
  std::string error;
  auto child = ChildProcess::Start("/bin/sh", {"-c", "exit 3"}, &error);
  ASSERT_NE(child, nullptr) << error;
  ASSERT_TRUE(child->WaitForExit(std::chrono::seconds(10)));
  EXPECT_FALSE(child->Suspend(std::chrono::seconds(1)));
  EXPECT_TRUE(child->exited());
  EXPECT_EQ(child->exit_code(), 3);
}

}  // namespace
}  // namespace subprocess
}  // namespace actorflow
