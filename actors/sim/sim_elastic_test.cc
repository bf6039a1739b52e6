// Elastic synchronous training on a simulated cluster: a worker joins after the start
// and another dies mid-run; each version waits only for its live members, nothing
// hangs, the shard records the joins and the loss in order, and the same seed
// replays the run bit for bit.
#include <gtest/gtest.h>

#include <algorithm>

#include "actors/sim/simulated_cluster.h"
#include "graph/status_testing.h"
#include "training/distributed/dnn_workload.h"
#include "training/distributed/iris_testing.h"

namespace actorflow {
namespace {

struct ElasticRun {
  SimTrainingReport report;
  std::string event_log_hash;
};

// sim:ps=1,worker=3, sync elastic. Worker 2 is down from the first step and starts
// (joins) at step 20; worker 1 dies at step 45.
ElasticRun RunElastic(uint64_t seed, int min_workers) {
  auto iris = LoadIris();
  EXPECT_TRUE(iris.ok()) << iris.status();
  SimulatedCluster::Options options;
  options.shape = *ParseSimClusterSpec("sim:ps=1,worker=3");
  options.seed = seed;
  const ClusterSpec spec = *options.shape.ToClusterSpec();
  auto plan = ParseFaultPlan(R"({"faults": [{"kill": "/job:worker/task:2", "at_step": 1},
                                           {"restart": "/job:worker/task:2", "at_step": 20},
                                           {"kill": "/job:worker/task:1", "at_step": 45}]})",
                             spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  options.faults = *plan;
  auto cluster = SimulatedCluster::Start(options);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  DataParallelOptions dp = IrisDataParallelOptions(*iris, UpdateMode::kSync, 3, 3);
  DNNWorkloadOptions w;
  w.spec = dp.spec;
  w.seed = dp.seed;
  w.batch_size = dp.batch_size;
  w.num_workers = 3;
  w.train = iris->train;
  w.test = iris->test;
  auto workload = NewDNNWorkload(w);
  EXPECT_TRUE(workload.ok()) << workload.status();
  SimTrainingOptions training;
  training.workload = workload->get();
  training.ps = dp.ps;
  training.ps.elastic = true;
  training.ps.min_workers = min_workers;
  training.steps = 80;
  training.timeout_ms = 200;
  training.eval_every = 20;
  auto report = (*cluster)->TrainDataParallel(training);
  EXPECT_TRUE(report.ok()) << report.status();
  return {report.ok() ? *report : SimTrainingReport{}, (*cluster)->EventLogHash()};
}

std::vector<std::pair<std::string, int>> Events(const SimShardCounts& shard) {
  std::vector<std::pair<std::string, int>> events;
  for (const MembershipChange& c : shard.membership_changes) events.emplace_back(c.kind, c.worker);
  return events;
}

TEST(SimElasticTest, AJoiningAndADyingWorkerChangeTheMembershipWithoutAHang) {
  ElasticRun run = RunElastic(7, 1);
  const SimTrainingReport& r = run.report;
  EXPECT_EQ(r.invariant_violations(), 0);
  EXPECT_FALSE(r.hung) << r.hang;
  EXPECT_FALSE(r.out_of_time);
  EXPECT_EQ(r.global_step, 80);
  ASSERT_EQ(r.shards.size(), 1u);
  const SimShardCounts& shard = r.shards[0];
  const auto events = Events(shard);
  // Worker 2's first incarnation may or may not have joined before its kill at step 1;
  // after it: its restart joins, then worker 1 is lost.
  auto join2 = std::find(events.rbegin(), events.rend(), std::make_pair(std::string("join"), 2));
  auto lost1 = std::find(events.begin(), events.end(), std::make_pair(std::string("lost"), 1));
  ASSERT_NE(join2, events.rend());
  ASSERT_NE(lost1, events.end());
  EXPECT_LT(events.rend() - join2 - 1, lost1 - events.begin());
  // Every update averaged the gradients of the members of its version: some of three
  // (after the join, before the loss), the rest of two.
  ASSERT_EQ(shard.updates_by_aggregated.size(), 4u);
  EXPECT_GT(shard.updates_by_aggregated[3], 0);
  EXPECT_GT(shard.updates_by_aggregated[2], 0);
  int64_t updates = 0;
  for (int64_t n : shard.updates_by_aggregated) updates += n;
  EXPECT_EQ(updates, r.global_step);
  EXPECT_GE(r.final_eval.accuracy, 0.9);
}

TEST(SimElasticTest, TheSameSeedReplaysTheElasticRunBitForBit) {
  const ElasticRun first = RunElastic(11, 2);
  const ElasticRun again = RunElastic(11, 2);
  EXPECT_EQ(first.event_log_hash, again.event_log_hash);
  EXPECT_EQ(first.report.weights_hash, again.report.weights_hash);
  EXPECT_EQ(first.report.global_step, again.report.global_step);
  EXPECT_EQ(first.report.invariant_violations(), 0);
  EXPECT_FALSE(first.report.hung) << first.report.hang;
}

}  // namespace
}  // namespace actorflow
