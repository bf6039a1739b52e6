// Train's kAllReduce on a simulated cluster (actors/trainer/sim_trainer.h): every
// worker task holds a replica (training/distributed/allreduce_training.h's graph);
// their steps run together (SimulatedCluster::RunTogether), so the run is a pure
// function of the options. Every step also fetches each member's trainable variables
// as they were before it, and the run checks that all members agree byte for byte
// at every step and at the end (the "identical weights" invariant).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/sim/simulated_cluster.h"
#include "actors/trainer/cluster_trainer.h"
#include "actors/trainer/sim_trainer.h"
#include "training/data/data_shard.h"
#include "training/distributed/allreduce_training.h"
#include "training/distributed/worker_model.h"

namespace actorflow {
namespace {

bool SameBytes(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].TotalBytes() != b[i].TotalBytes() ||
        std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].TotalBytes()) != 0) {
      return false;
    }
  }
  return true;
}

// Runs one step on every member together; the first error names its member.
StatusOr<std::vector<std::vector<Tensor>>> Together(SimulatedCluster& cluster,
                                                    const std::vector<SimulatedCluster::Step>& steps) {
  std::vector<StatusOr<std::vector<Tensor>>> results = cluster.RunTogether(steps);
  std::vector<std::vector<Tensor>> out;
  for (size_t i = 0; i < results.size(); ++i) {
    AF_RETURN_IF_ERROR(results[i].status().WithContext("worker " + std::to_string(i)));
    out.push_back(std::move(results[i]).value());
  }
  return out;
}

// The members' replicas, their sessions and the steps that run them together.
struct SimReplicas {
  SimulatedCluster* cluster = nullptr;
  std::vector<AllReduceReplicaGraph> graphs;
  std::vector<uint64_t> sessions;
  int64_t timeout_ms = 0;

  std::vector<SimulatedCluster::Step> Steps(const std::vector<std::string>& fetches,
                                            const std::vector<std::string>& targets) const {
    std::vector<SimulatedCluster::Step> steps(sessions.size());
    for (size_t w = 0; w < sessions.size(); ++w) {
      steps[w].task = {"worker", static_cast<int>(w)};
      steps[w].session = sessions[w];
      steps[w].fetches = fetches;
      steps[w].targets = targets;
      steps[w].timeout_in_ms = timeout_ms;
    }
    return steps;
  }
};

// Notes members whose weights differ from member 0's.
void CompareReplicas(const std::vector<std::vector<Tensor>>& weights, const std::string& when,
                     std::vector<std::string>* differences) {
  for (size_t w = 1; w < weights.size(); ++w) {
    if (!SameBytes(weights[0], weights[w])) {
      differences->push_back(when + ": worker " + std::to_string(w) +
                             "'s weights differ from worker 0's");
    }
  }
}

}  // namespace

StatusOr<TrainerResult> TrainAllReduceOnSimulatedCluster(const TrainerOptions& options,
                                                         SimulatedCluster& cluster,
                                                         const TrainerPlan& plan,
                                                         const LabeledData& train,
                                                         const LabeledData& test,
                                                         SimulatedTrainerRun* run) {
  const int workers = plan.workers;
  SimReplicas replicas;
  replicas.cluster = &cluster;
  replicas.timeout_ms = options.timeout_ms;
  std::vector<int> members;
  for (int w = 0; w < workers; ++w) members.push_back(w);
  for (int w = 0; w < workers; ++w) {
    AF_ASSIGN_OR_RETURN(AllReduceReplicaGraph r,
                        BuildAllReduceReplicaGraph(plan.allreduce, w, members, 0, 0));
    AF_ASSIGN_OR_RETURN(uint64_t session, cluster.OpenSession({"worker", w}, *r.graph));
    replicas.graphs.push_back(std::move(r));
    replicas.sessions.push_back(session);
  }
  // A step that fails (a chunk lost to a fault: its members' deadline) ends the run,
  // reported in run->failure.
  run->failure = Together(cluster, replicas.Steps({}, {"init"})).status();
  if (run->failure.ok()) run->failure = Together(cluster, replicas.Steps({}, {"broadcast"})).status();

  std::vector<ShardedBatches> batches;
  for (int w = 0; w < workers; ++w) {
    ShardOptions shard{options.batch_size, options.seed, w, workers};
    AF_ASSIGN_OR_RETURN(ShardedBatches b, ShardedBatches::Create(train.features, train.labels, shard));
    batches.push_back(std::move(b));
  }
  run->steps_per_worker =
      options.max_steps > 0 ? options.max_steps : batches[0].steps_per_epoch() * options.epochs;
  const std::vector<std::string>& variables = replicas.graphs[0].variables;
  std::vector<std::string> fetches = variables;
  fetches.push_back(kDNNLoss);
  std::vector<std::string> differences;
  int64_t done = 0;
  for (int64_t step = 1; run->failure.ok() && step <= run->steps_per_worker; ++step) {
    std::vector<SimulatedCluster::Step> steps = replicas.Steps(fetches, {"train"});
    Batch batch;
    for (int w = 0; w < workers; ++w) {
      batches[w].Next(&batch);
      steps[w].feeds = {{kDNNFeatures, batch.features}, {kDNNLabels, batch.labels}};
    }
    auto together = Together(cluster, steps);
    if (!together.ok()) {
      run->failure = together.status().WithContext("step " + std::to_string(step));
      break;
    }
    done = step;
    run->train_loss = (*together)[0].back().data<float>()[0];
    for (auto& r : *together) r.pop_back();
    CompareReplicas(*together, "step " + std::to_string(step), &differences);
  }
  SimTrainingReport& report = run->report;
  report.mode = "allreduce";
  report.global_step = done;
  report.updates_applied = done;
  if (run->failure.ok()) {
    // The weights after the last step, on every member.
    AF_ASSIGN_OR_RETURN(auto last, Together(cluster, replicas.Steps(variables, {})));
    CompareReplicas(last, "the end", &differences);
    for (size_t i = 0; i < variables.size(); ++i) report.parameters[variables[i]] = last[0][i];
    // The chief's replica on the test rows, in one step.
    AF_ASSIGN_OR_RETURN(
        EvalResult eval,
        EvaluateInBatches(test.features, test.labels,
                          std::max<int64_t>(1, test.labels.NumElements()),
                          [&](const FeedList& feeds, std::vector<Tensor>* out) {
                            auto got = cluster.Run({"worker", 0}, replicas.sessions[0], feeds,
                                                   {kDNNExampleLoss, kDNNClassIds});
                            if (got.ok()) *out = std::move(got).value();
                            return got.status();
                          }));
    report.final_eval.accuracy = eval.accuracy;
    report.final_eval.loss = eval.loss;
  }
  report.weights_hash = HashParameters(report.parameters);
  report.virtual_seconds = cluster.VirtualSeconds();
  report.invariants.push_back(SimInvariantResult{"identical weights", std::move(differences)});
  run->allreduce_buckets = replicas.graphs[0].buckets;

  TrainerResult result;
  result.accuracy = report.final_eval.accuracy;
  result.loss = report.final_eval.loss;
  result.global_step = done;
  result.updates_applied = done;
  result.allreduce.buckets = run->allreduce_buckets;
  result.allreduce.weights_hash = report.weights_hash;
  result.allreduce.replicas_identical =
      run->failure.ok() && report.invariants.back().violations.empty();
  return result;
}

}  // namespace actorflow
