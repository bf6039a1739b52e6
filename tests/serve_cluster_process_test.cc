// `actorflow serve --cluster FILE --job worker`: a model's replicas are sessions on
// the worker tasks (real `actorflow server` processes on 127.0.0.1). The answers are
// the model's; a replica task that hangs (SIGSTOP: its connection stays open and
// silent, as with a cut link) is named by the serving front within the failure
// detector's bound, the request that was on it fails naming the task, its address
// and how it was lost, and the other task serves every later request.
//
// Every wait is bounded; none is a timed pause; no fixed ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "tests/cluster_test_kit.h"
#include "tests/serve_cli_testing.h"

namespace actorflow {
namespace {

using serve_testing::ExportAffine;
using serve_testing::kBody12;
using serve_testing::kHalfPlusTwoOf12;
using serve_testing::kPredict;
using serve_testing::Reply;
using serve_testing::ServeProcess;
using serve_testing::TestDir;
using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;
using Clock = std::chrono::steady_clock;
using ::testing::HasSubstr;

// The detector's bound at its default (2000 ms): a silence of 2.5 s, noticed within
// one heartbeat interval (250 ms) more; the contract's worst case is 5 s.
constexpr std::chrono::milliseconds kContract(5000);

TEST(ServeClusterProcessTest, AHungReplicaTaskIsNamedWithinThreeSecondsAndTheOtherServes) {
  ProcessClusterOptions options;
  options.shape = {{"worker", 2}};
  auto cluster = subprocess::StartTestCluster(options);
  ASSERT_NE(cluster, nullptr);
  const std::string dir = TestDir("serve_cluster");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base,
                                     "--cluster", cluster->spec_path(), "--job", "worker"});
  ASSERT_NE(server, nullptr);
  for (int i = 0; i < 3; ++i) {
    Reply r = server->Post(kPredict, kBody12);
    ASSERT_EQ(r.code, 200) << r;
    EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  }

  // One at a time, requests go to the first replica (the least loaded on ties):
  // worker 0's. Hung, it takes the next request with it until the detector names it.
  ASSERT_TRUE(cluster->process("worker", 0)->Suspend(std::chrono::seconds(10)))
      << "worker 0 did not stop";
  const auto hung = Clock::now();
  Reply lost = server->Post(kPredict, kBody12);
  const auto named_after =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - hung);
  EXPECT_NE(lost.code, 200) << lost;
  EXPECT_THAT(lost.text, HasSubstr("/job:worker/task:0 at " + cluster->Address("worker", 0)))
      << lost;
  EXPECT_THAT(lost.text, HasSubstr("nothing came from it for")) << lost;
  EXPECT_LT(named_after, kContract) << lost;
  std::printf("serving: the hung replica task was named after %lld ms: %s\n",
              static_cast<long long>(named_after.count()), lost.text.c_str());

  // Every later request goes to worker 1's replica.
  for (int i = 0; i < 5; ++i) {
    Reply r = server->Post(kPredict, kBody12);
    ASSERT_EQ(r.code, 200) << r;
    EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  }
  cluster->process("worker", 0)->Kill(SIGCONT);
  server->Stop();
}

}  // namespace
}  // namespace actorflow
