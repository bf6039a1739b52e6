// Data-parallel training on a simulated cluster: the failure stories of a ps
// cluster (a worker lost mid-run, a partitioned chief, lost gradient messages) as
// deterministic runs, judged by the run's invariants.
#include "actors/sim/simulated_cluster.h"

#include <gtest/gtest.h>

#include "graph/status_testing.h"
#include "training/distributed/dnn_workload.h"
#include "training/distributed/iris_testing.h"

namespace actorflow {
namespace {

struct SimRun {
  std::unique_ptr<SimulatedCluster> cluster;
  std::unique_ptr<TrainingWorkload> workload;
  SimTrainingOptions training;
};

SimRun Make(const std::string& shape, const std::string& faults_json, UpdateMode mode,
           int aggregate, uint64_t seed) {
  SimRun s;
  auto iris = LoadIris();
  EXPECT_TRUE(iris.ok()) << iris.status();
  SimulatedCluster::Options options;
  options.shape = *ParseSimClusterSpec(shape);
  options.seed = seed;
  const ClusterSpec spec = *options.shape.ToClusterSpec();
  if (!faults_json.empty()) {
    auto plan = ParseFaultPlan(faults_json, spec);
    EXPECT_TRUE(plan.ok()) << plan.status();
    options.faults = *plan;
  }
  auto cluster = SimulatedCluster::Start(options);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  s.cluster = std::move(cluster).value();
  const int workers = options.shape.tasks.at("worker");
  DataParallelOptions dp = IrisDataParallelOptions(*iris, mode, workers, aggregate);
  DNNWorkloadOptions w;
  w.spec = dp.spec;
  w.seed = dp.seed;
  w.batch_size = dp.batch_size;
  w.num_workers = workers;
  w.train = iris->train;
  w.test = iris->test;
  auto workload = NewDNNWorkload(w);
  EXPECT_TRUE(workload.ok()) << workload.status();
  s.workload = std::move(workload).value();
  s.training.workload = s.workload.get();
  s.training.ps = dp.ps;
  s.training.steps = 60;
  s.training.timeout_ms = 200;
  s.training.eval_every = 10;
  return s;
}

std::string Violations(const SimTrainingReport& r) {
  std::string out;
  for (const SimInvariantResult& i : r.invariants) {
    for (const std::string& v : i.violations) out += i.name + ": " + v + "\n";
  }
  if (r.hung) out += "hung: " + r.hang + "\n";
  return out;
}

TEST(SimTrainingTest, SyncWithBackupsFinishesWhenAWorkerIsKilledAtStepFive) {
  SimRun s = Make("sim:ps=2,worker=4",
                 R"({"faults": [{"kill": "/job:worker/task:2", "at_step": 5}]})",
                 UpdateMode::kSync, /*aggregate=*/3, 7);
  s.training.steps = 150;
  ASSERT_OK_AND_ASSIGN(SimTrainingReport r, s.cluster->TrainDataParallel(s.training));
  EXPECT_EQ(r.workers_lost, 1);
  EXPECT_EQ(r.invariant_violations(), 0) << Violations(r);
  EXPECT_FALSE(r.hung) << r.hang;
  EXPECT_EQ(r.global_step, 150);
  EXPECT_GT(r.final_eval.accuracy, 0.85);
  // The killed worker stopped early; the others ran to the end.
  EXPECT_LT(r.workers[2].steps, 20);
  EXPECT_TRUE(r.workers[1].finished);
  EXPECT_EQ(s.cluster->event_log().Count(SimEvent::Kind::kKilled), 1u);
  // The shards saw the killed worker lost, and only it (the others left).
  EXPECT_EQ(r.shards[0].workers_lost, std::vector<int>{2});
}

TEST(SimTrainingTest, APartitionedChiefRecoversOnceThePartitionHeals) {
  SimRun s = Make("sim:ps=1,worker=3",
                 R"({"faults": [{"partition": [["/job:ps/task:0"], ["/job:worker/task:0"]],
                                 "from_s": 0.02, "until_s": 0.1}]})",
                 UpdateMode::kSync, /*aggregate=*/3, 11);
  s.training.compute.step_us = 2000;  // 2 ms per step: the partition begins near step 10
  s.training.steps = 100;
  ASSERT_OK_AND_ASSIGN(SimTrainingReport r, s.cluster->TrainDataParallel(s.training));
  EXPECT_EQ(r.invariant_violations(), 0) << Violations(r);
  EXPECT_EQ(r.global_step, 100);
  const SimWorkerCounts& chief = r.workers[0];
  EXPECT_GT(chief.failed + chief.unanswered, 0) << "the partition cost the chief no push";
  // Without backups nothing moved while the chief was cut off; its gradients were
  // applied again after the heal.
  EXPECT_GT(r.workers[1].failed + r.workers[1].unanswered, 0);
  EXPECT_GT(r.shards[0].applied_by_worker[0], 15) << "applied before the partition only";
  EXPECT_GT(r.virtual_seconds, 0.1);
  EXPECT_GT(s.cluster->event_log().Count(SimEvent::Kind::kDropped), 0u);
  EXPECT_TRUE(chief.finished);
  EXPECT_EQ(chief.status, "");
}

TEST(SimTrainingTest, AsyncTrainingLosingEveryTenthGradientStillLearnsAndCountsTheDrops) {
  SimRun s = Make("sim:ps=1,worker=3",
                 R"({"faults": [{"drop": {"from": "/job:worker/*", "to": "/job:ps/*",
                                          "kind": "push"}, "every": 10}]})",
                 UpdateMode::kAsync, 0, 5);
  s.training.steps = 40;
  ASSERT_OK_AND_ASSIGN(SimTrainingReport r, s.cluster->TrainDataParallel(s.training));
  EXPECT_EQ(r.invariant_violations(), 0) << Violations(r);
  ASSERT_GE(r.curve.size(), 2u);
  EXPECT_LT(r.final_eval.loss, r.curve.front().loss);
  const uint64_t dropped = s.cluster->event_log().Count(SimEvent::Kind::kDropped);
  EXPECT_GT(dropped, 0u);
  // A dropped push ends unanswered; none is applied.
  EXPECT_EQ(r.pushes_failed, static_cast<int64_t>(dropped));
  EXPECT_EQ(r.global_step, r.pushes - r.pushes_failed);
  // Every worker finished and said goodbye before its end reached the shard.
  EXPECT_TRUE(r.shards[0].workers_lost.empty());
}

TEST(SimTrainingTest, TheSameSeedReplaysTheRunBitForBitAndAnotherSeedDoesNot) {
  const std::string faults =
      R"({"faults": [{"kill": "/job:worker/task:1", "at_step": 10},
                     {"restart": "/job:worker/task:1", "at_step": 20},
                     {"drop": {"from": "*", "to": "*", "kind": "push"}, "probability": 0.05},
                     {"delay": {"from": "/job:worker/task:2", "to": "*"}, "ms": 3, "jitter_ms": 2}]})";
  auto run = [&](uint64_t seed) {
    SimRun s = Make("sim:ps=2,worker=3", faults, UpdateMode::kSync, 2, seed);
    s.training.compute.stragglers = *ParseStragglerSpec("pareto:1.5");
    auto r = s.cluster->TrainDataParallel(s.training);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->invariant_violations(), 0) << Violations(*r);
    return std::make_tuple(s.cluster->EventLogHash(), r->weights_hash, r->global_step,
                           r->virtual_seconds);
  };
  const auto first = run(21);
  const auto again = run(21);
  EXPECT_EQ(first, again);
  const auto other = run(22);
  EXPECT_NE(std::get<0>(first), std::get<0>(other));
  EXPECT_NE(std::get<1>(first), std::get<1>(other));
}

TEST(SimTrainingTest, BadOptionsAreRefusedBeforeAnythingRuns) {
  SimRun s = Make("sim:ps=1,worker=2", "", UpdateMode::kSync, 2, 1);
  SimTrainingOptions bad = s.training;
  bad.workload = nullptr;
  EXPECT_EQ(s.cluster->TrainDataParallel(bad).status().code(), Code::kInvalidArgument);
  bad = s.training;
  bad.steps = 0;
  EXPECT_EQ(s.cluster->TrainDataParallel(bad).status().code(), Code::kInvalidArgument);
  bad = s.training;
  bad.ps.replicas_to_aggregate = 3;  // of 2 workers
  EXPECT_EQ(s.cluster->TrainDataParallel(bad).status().code(), Code::kInvalidArgument);
}

TEST(SimTrainingTest, AUsersInvariantIsJudgedBesideTheBuiltInOnes) {
  SimRun s = Make("sim:ps=1,worker=2", "", UpdateMode::kSync, 2, 1);
  s.training.steps = 10;
  s.training.invariants.push_back(
      {"loss_below_ten", [](const SimTrainingReport& r) {
         std::vector<std::string> v;
         if (!(r.final_eval.loss < 10)) v.push_back("loss " + std::to_string(r.final_eval.loss));
         return v;
       }});
  s.training.invariants.push_back({"always_fails", [](const SimTrainingReport&) {
                                     return std::vector<std::string>{"as designed"};
                                   }});
  ASSERT_OK_AND_ASSIGN(SimTrainingReport r, s.cluster->TrainDataParallel(s.training));
  ASSERT_EQ(r.invariants.size(), BuiltinSimInvariants().size() + 2);
  EXPECT_EQ(r.invariants.back().name, "always_fails");
  EXPECT_EQ(r.invariant_violations(), 1) << Violations(r);
}

TEST(SimTrainingTest, TheChiefsCoordinatedCheckpointsAreTakenAndJudged) {
  SimRun s = Make("sim:ps=3,worker=3", "", UpdateMode::kSync, 3, 4);
  s.training.checkpoint_every = 10;
  ASSERT_OK_AND_ASSIGN(SimTrainingReport r, s.cluster->TrainDataParallel(s.training));
  EXPECT_EQ(r.invariant_violations(), 0) << Violations(r);
  ASSERT_GE(r.checkpoints.size(), 5u);
  for (const SimCheckpoint& c : r.checkpoints) {
    EXPECT_EQ(c.failure, "");
    EXPECT_EQ(c.answered, c.shards);
    EXPECT_EQ(c.variables.size(), r.parameters.size());
    EXPECT_EQ(c.version % 10, 0);
  }
  // A checkpoint in which two shards claim one variable breaks the invariant.
  SimTrainingReport broken = r;
  broken.checkpoints[0].variables.push_back(broken.checkpoints[0].variables.front());
  for (const SimInvariant& invariant : BuiltinSimInvariants()) {
    if (invariant.name != "checkpoint_consistent") continue;
    EXPECT_TRUE(invariant.check(r).empty());
    EXPECT_FALSE(invariant.check(broken).empty());
  }
}

}  // namespace
}  // namespace actorflow
