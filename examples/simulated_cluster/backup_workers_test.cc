// Testing data-parallel training on a simulated cluster: your model as a
// TrainingWorkload, one ps and four workers of which three make each synchronous
// update (one backup worker), straggling workers, a fault plan that kills a worker
// mid-run, and assertions on the run's report and its invariants (the built-in
// ones and one of your own).
//
//   bazel test //examples/simulated_cluster:backup_workers_test
#include <cmath>

#include <gtest/gtest.h>

#include "actorflow.h"
#include "actorflow_testing.h"

namespace actorflow {
namespace {

// Your model: y = w * x + b fitted to y = 3x + 1, worker i reading its own points.
// The simulator calls it; the parameters live on the ps tasks.
class LinearRegression : public TrainingWorkload {
 public:
  StatusOr<std::map<std::string, Tensor>> InitialValues() override {
    return std::map<std::string, Tensor>{{"b", Tensor::FromVector<float>({0.0f})},
                                         {"w", Tensor::FromVector<float>({0.0f})}};
  }

  StatusOr<WorkloadGradients> ComputeGradients(
      int worker, int64_t step, const std::map<std::string, Tensor>& parameters) override {
    const float w = parameters.at("w").data<float>()[0];
    const float b = parameters.at("b").data<float>()[0];
    WorkloadGradients out;
    float dw = 0, db = 0;
    for (int i = 0; i < 4; ++i) {
      const float x = 0.1f * static_cast<float>((worker * 7 + step * 3 + i) % 20) - 1.0f;
      const float error = w * x + b - (3 * x + 1);
      out.loss += error * error / 4;
      dw += 2 * error * x / 4;
      db += 2 * error / 4;
    }
    out.gradients["w"] = Tensor::FromVector<float>({dw});
    out.gradients["b"] = Tensor::FromVector<float>({db});
    return out;
  }

  StatusOr<WorkloadEvaluation> Evaluate(const std::map<std::string, Tensor>& parameters) override {
    const float w = parameters.at("w").data<float>()[0];
    const float b = parameters.at("b").data<float>()[0];
    WorkloadEvaluation eval;
    eval.loss = (w - 3) * (w - 3) + (b - 1) * (b - 1);
    eval.accuracy = eval.loss < 0.01 ? 1.0 : 0.0;
    return eval;
  }

  double FlopsPerStep() const override { return 40; }
};

SimTrainingReport Train(uint64_t seed, std::string* event_log_hash) {
  SimulatedCluster::Options options;
  options.shape = *ParseSimClusterSpec("sim:ps=1,worker=4");
  options.faults = *ParseFaultPlan(R"({"faults": [
      {"kill": "/job:worker/task:3", "at_step": 5},
      {"delay": {"from": "/job:worker/task:1", "to": "*"}, "ms": 2, "jitter_ms": 2}]})",
                                   *options.shape.ToClusterSpec());
  options.seed = seed;
  StatusOr<std::unique_ptr<SimulatedCluster>> cluster = SimulatedCluster::Start(options);
  EXPECT_OK(cluster);

  LinearRegression model;
  SimTrainingOptions training;
  training.workload = &model;
  training.ps.mode = UpdateMode::kSync;
  training.ps.replicas_to_aggregate = 3;  // of 4: one backup worker
  training.ps.learning_rate = 0.3;
  training.steps = 80;
  training.timeout_ms = 100;           // virtual
  training.compute.step_us = 1000;     // each step computes for 1 ms of virtual time...
  training.compute.stragglers = *ParseStragglerSpec("pareto:1.5");  // ...times a heavy tail
  training.eval_every = 10;
  // Your own invariant, judged with the built-in ones.
  training.invariants.push_back({"converged", [](const SimTrainingReport& r) {
                                   std::vector<std::string> violations;
                                   if (r.final_eval.loss > 0.01) {
                                     violations.push_back("loss " + std::to_string(r.final_eval.loss));
                                   }
                                   return violations;
                                 }});
  StatusOr<SimTrainingReport> report = (*cluster)->TrainDataParallel(training);
  EXPECT_OK(report);
  *event_log_hash = (*cluster)->EventLogHash();
  return std::move(report).value();
}

TEST(BackupWorkersTest, TrainingOutlivesAKilledWorkerAndEveryInvariantHolds) {
  std::string hash;
  SimTrainingReport report = Train(7, &hash);
  for (const SimInvariantResult& invariant : report.invariants) {
    EXPECT_TRUE(invariant.violations.empty())
        << invariant.name << ": " << invariant.violations.front();
  }
  EXPECT_FALSE(report.hung) << report.hang;
  EXPECT_EQ(report.workers_lost, 1);
  EXPECT_EQ(report.global_step, 80);
  EXPECT_GT(report.dropped_stale, 0);  // the slowest gradient of a version is dropped
  EXPECT_NEAR(report.parameters.at("w").data<float>()[0], 3.0f, 0.1f);
  EXPECT_LT(report.final_eval.loss, report.curve.front().loss);
}

TEST(BackupWorkersTest, TheSameSeedReplaysTheRun) {
  std::string first_hash, again_hash, other_hash;
  const SimTrainingReport first = Train(7, &first_hash);
  const SimTrainingReport again = Train(7, &again_hash);
  const SimTrainingReport other = Train(8, &other_hash);
  EXPECT_EQ(first_hash, again_hash);
  EXPECT_EQ(first.weights_hash, again.weights_hash);
  EXPECT_EQ(first.virtual_seconds, again.virtual_seconds);
  EXPECT_NE(first_hash, other_hash);
}

}  // namespace
}  // namespace actorflow
