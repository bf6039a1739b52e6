// Collective ops on a SimulatedCluster, every member a worker task with its own
// session, their steps run together (SimulatedCluster::RunTogether): the sum, the
// same bits on every member, the same event log for the same seed, and a ring
// all-reduce of the MLP's gradients (269 322 floats) among 64 workers within 10 %
// of the ring's analytical cost under the link model.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actors/sim/simulated_cluster.h"
#include "graph/collective_ops.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

struct Ring {
  std::unique_ptr<SimulatedCluster> cluster;
  std::vector<std::shared_ptr<Graph>> graphs;
  std::vector<uint64_t> sessions;
  int members = 0;
};

std::string Cpu(int task) {
  return "/job:worker/replica:0/task:" + std::to_string(task) + "/device:CPU:0";
}

// `members` workers, each with v = (rank + 1) * ones([n]) and "ar" = its all-reduce.
Ring StartRing(int members, int64_t n, const LinkModel& link, uint64_t seed) {
  Ring ring;
  ring.members = members;
  SimulatedCluster::Options options;
  auto shape = ParseSimClusterSpec("sim:ps=1,worker=" + std::to_string(members));
  EXPECT_OK(shape);
  options.shape = *shape;
  options.link = link;
  options.seed = seed;
  options.model_bytes = 4 * n;
  auto started = SimulatedCluster::Start(options);
  EXPECT_OK(started);
  ring.cluster = std::move(started).value();
  CollectiveGroup group{"sim", {}};
  for (int r = 0; r < members; ++r) group.devices.push_back(Cpu(r));
  for (int r = 0; r < members; ++r) {
    Scope root = Scope::NewRootScope();
    Scope on = root.WithDevice(Cpu(r));
    Output v = Fill(on.WithOpName("v"), Shape{n}, static_cast<float>(r + 1));
    Output sum = CollectiveAllReduce(on.WithOpName("ar"), v, group, 1);
    Slice(on.WithOpName("first"), sum, {0}, {1});
    EXPECT_OK(root.status());
    ring.graphs.push_back(root.graph_ptr());
    auto session = ring.cluster->OpenSession({"worker", r}, *ring.graphs.back());
    EXPECT_OK(session);
    ring.sessions.push_back(*session);
  }
  return ring;
}

std::vector<StatusOr<std::vector<Tensor>>> Step(Ring& ring, const std::vector<std::string>& fetches,
                                                const std::vector<std::string>& targets) {
  std::vector<SimulatedCluster::Step> steps;
  for (int r = 0; r < ring.members; ++r) {
    SimulatedCluster::Step s;
    s.task = {"worker", r};
    s.session = ring.sessions[r];
    s.fetches = fetches;
    s.targets = targets;
    steps.push_back(s);
  }
  return ring.cluster->RunTogether(steps);
}

TEST(SimCollectiveTest, MembersSumTheSameBitsAndTheSameSeedGivesTheSameRun) {
  std::string hashes[2];
  for (int run = 0; run < 2; ++run) {
    Ring ring = StartRing(5, 1000, LinkModel(), /*seed=*/3);
    for (int round = 0; round < 2; ++round) {
      auto results = Step(ring, {"ar"}, {});
      for (int r = 0; r < 5; ++r) {
        ASSERT_OK(results[r].status()) << "member " << r;
        const Tensor& got = (*results[r])[0];
        EXPECT_EQ(got.data<float>()[999], 15.0f);  // 1 + 2 + ... + 5
        EXPECT_EQ(std::memcmp(got.raw_data(), (*results[0])[0].raw_data(), got.TotalBytes()), 0);
      }
    }
    hashes[run] = ring.cluster->EventLogHash();
  }
  EXPECT_EQ(hashes[0], hashes[1]);
}

TEST(SimCollectiveTest, AStepOnAKilledMemberFailsAndItsPeersAreToldWhichTaskWentDown) {
  Ring ring = StartRing(3, 16, LinkModel(), 1);
  ASSERT_OK(Step(ring, {"first"}, {})[0].status());
  ASSERT_OK(ring.cluster->KillTask({"worker", 2}));
  auto results = Step(ring, {"first"}, {});
  EXPECT_EQ(results[2].status().code(), Code::kUnavailable) << results[2].status();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].status().code(), Code::kUnavailable) << results[r].status();
    EXPECT_THAT(results[r].status().message(), ::testing::HasSubstr("task:2")) << results[r].status();
  }
}

TEST(SimCollectiveTest, ARingOfSixtyFourWorkersTakesTheRingsAnalyticalTime) {
  LinkModel link;
  link.latency_us = 50;
  link.bandwidth_gbps = 10;
  const int members = 64;
  const int64_t n = 269322;  // MLP 784-256-256-10's parameters: one 1.03 MiB bucket
  Ring ring = StartRing(members, n, link, 1);
  ASSERT_OK(Step(ring, {}, {"ar"})[0].status());  // connects the tasks
  const int kSteps = 3;
  const double start = ring.cluster->VirtualSeconds();
  for (int i = 0; i < kSteps; ++i) {
    auto results = Step(ring, {"first"}, {});
    for (int r = 0; r < members; ++r) ASSERT_OK(results[r].status()) << "member " << r;
    EXPECT_EQ((*results[0])[0].data<float>()[0], 64.0f * 65.0f / 2.0f);
  }
  const double step_us = (ring.cluster->VirtualSeconds() - start) / kSteps * 1e6;
  // 2 (N - 1) sequential steps, each one chunk of n / N floats over one link.
  const double chunk_bytes = 4.0 * n / members;
  const double analytical_us = 2.0 * (members - 1) * link.TransferMicros(static_cast<int64_t>(chunk_bytes));
  RecordProperty("step_us", std::to_string(step_us));
  RecordProperty("analytical_us", std::to_string(analytical_us));
  std::printf("ring of %d: %.1f us per all-reduce, analytical %.1f us (%.3f)\n", members, step_us,
              analytical_us, step_us / analytical_us);
  EXPECT_NEAR(step_us / analytical_us, 1.0, 0.10);
}

}  // namespace
}  // namespace actorflow
