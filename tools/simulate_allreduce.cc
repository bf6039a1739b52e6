// `actorflow simulate --mode allreduce` (and `actorflow train --cluster sim:worker=W
// --mode allreduce`): all-reduce data parallelism on a simulated cluster. Every
// worker task holds a replica (training/distributed/allreduce_training.h's graph);
// their steps run together (SimulatedCluster::RunTogether), so the run is a pure
// function of the flags and the seed. Every step also fetches each member's
// trainable variables as they were before it, and the run checks that all members
// agree byte for byte at every step ("identical weights" invariant), and at the end.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "actors/sim/sim_training.h"
#include "actors/sim/simulated_cluster.h"
#include "tools/simulate_command.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"
#include "training/data/data_shard.h"
#include "training/distributed/allreduce_training.h"
#include "training/distributed/worker_model.h"

namespace actorflow {
namespace cli {
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
                                                    std::vector<SimulatedCluster::Step> steps) {
  std::vector<StatusOr<std::vector<Tensor>>> results = cluster.RunTogether(steps);
  std::vector<std::vector<Tensor>> out;
  for (size_t i = 0; i < results.size(); ++i) {
    AF_RETURN_IF_ERROR(results[i].status().WithContext("worker " + std::to_string(i)));
    out.push_back(std::move(results[i]).value());
  }
  return out;
}

}  // namespace

Status SimulateAllReduce(const SimulateCommandOptions& options, std::ostream& out) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) openblas_set_num_threads(1);
  const TrainCommandOptions& o = options.train;
  AF_ASSIGN_OR_RETURN(SimClusterShape shape, ParseSimClusterSpec(options.cluster));
  const int workers = shape.tasks.at("worker");
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(o));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model, ClassifierOptionsFromFlags(o, data, classes));
  AF_ASSIGN_OR_RETURN(SimulatedCluster::Options sim,
                      SimulationOptionsFromFlags(options, shape, data.train.features.dim(1),
                                                 classes));
  for (const Fault& fault : sim.faults.faults) {
    if (fault.action == Fault::Action::kKill || fault.action == Fault::Action::kRestart) {
      return InvalidArgument("--mode allreduce on a simulated cluster takes message faults; "
                             "its kills and restarts are for the ps modes");
    }
  }
  AF_ASSIGN_OR_RETURN(std::unique_ptr<SimulatedCluster> cluster, SimulatedCluster::Start(sim));

  AllReduceTrainingOptions ar;
  ar.spec = ModelSpecOf(model);
  ar.seed = o.seed;
  ar.batch_size = o.batch;
  ar.optimizer = o.optimizer;
  ar.learning_rate = o.learning_rate;
  ar.bucket_bytes = static_cast<int64_t>(o.bucket_mb * 1024 * 1024);
  std::vector<int> members;
  for (int w = 0; w < workers; ++w) {
    ar.devices.push_back("/job:worker/replica:0/task:" + std::to_string(w) + "/device:CPU:0");
    members.push_back(w);
  }
  std::vector<AllReduceReplicaGraph> replicas;
  std::vector<uint64_t> sessions;
  for (int w = 0; w < workers; ++w) {
    AF_ASSIGN_OR_RETURN(AllReduceReplicaGraph r, BuildAllReduceReplicaGraph(ar, w, members, 0, 0));
    AF_ASSIGN_OR_RETURN(uint64_t session, cluster->OpenSession({"worker", w}, *r.graph));
    replicas.push_back(std::move(r));
    sessions.push_back(session);
  }
  auto steps_of = [&](const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
    std::vector<SimulatedCluster::Step> steps(workers);
    for (int w = 0; w < workers; ++w) {
      steps[w].task = {"worker", w};
      steps[w].session = sessions[w];
      steps[w].fetches = fetches;
      steps[w].targets = targets;
      steps[w].timeout_in_ms = o.timeout_ms;
    }
    return steps;
  };
  // A step that fails (a chunk lost to a fault: its members' deadline) ends the run;
  // it is reported after the line, as the ps modes report a failed run.
  Status failure = Together(*cluster, steps_of({}, {"init"})).status();
  if (failure.ok()) failure = Together(*cluster, steps_of({}, {"broadcast"})).status();

  std::vector<ShardedBatches> batches;
  for (int w = 0; w < workers; ++w) {
    ShardOptions shard{o.batch, o.seed, w, workers};
    AF_ASSIGN_OR_RETURN(ShardedBatches b, ShardedBatches::Create(data.train.features, data.train.labels, shard));
    batches.push_back(std::move(b));
  }
  const int64_t total = o.epochs > 0 ? batches[0].steps_per_epoch() * o.epochs : o.steps;
  std::vector<std::string> fetches = replicas[0].variables;
  fetches.push_back(kDNNLoss);
  int64_t differing_steps = 0;
  std::string first_difference;
  double loss = 0;
  int64_t done = 0;
  for (int64_t step = 1; failure.ok() && step <= total; ++step) {
    std::vector<SimulatedCluster::Step> steps = steps_of(fetches, {"train"});
    Batch batch;
    for (int w = 0; w < workers; ++w) {
      batches[w].Next(&batch);
      steps[w].feeds = {{kDNNFeatures, batch.features}, {kDNNLabels, batch.labels}};
    }
    auto together = Together(*cluster, steps);
    if (!together.ok()) {
      failure = together.status().WithContext("step " + std::to_string(step));
      break;
    }
    std::vector<std::vector<Tensor>>& results = *together;
    done = step;
    loss = results[0].back().data<float>()[0];
    for (auto& r : results) r.pop_back();
    for (int w = 1; w < workers; ++w) {
      if (SameBytes(results[0], results[w])) continue;
      if (differing_steps++ == 0) {
        first_difference = "step " + std::to_string(step) + ": worker " + std::to_string(w) +
                           "'s weights differ from worker 0's";
      }
    }
  }
  std::map<std::string, Tensor> parameters;
  EvalResult eval;  // zeros when the run failed
  if (failure.ok()) {
    // The weights after the last step, on every member.
    AF_ASSIGN_OR_RETURN(auto last, Together(*cluster, steps_of(replicas[0].variables, {})));
    for (int w = 1; w < workers; ++w) {
      if (!SameBytes(last[0], last[w]) && differing_steps++ == 0) {
        first_difference = "the end: worker " + std::to_string(w) + "'s weights differ";
      }
    }
    for (size_t i = 0; i < replicas[0].variables.size(); ++i) {
      parameters[replicas[0].variables[i]] = last[0][i];
    }
    // The chief's replica on the test rows, in one step.
    AF_ASSIGN_OR_RETURN(
        eval, EvaluateInBatches(data.test.features, data.test.labels,
                                std::max<int64_t>(1, data.test.labels.NumElements()),
                                [&](const FeedList& feeds, std::vector<Tensor>* out) {
                                  auto got = cluster->Run({"worker", 0}, sessions[0], feeds,
                                                          {kDNNExampleLoss, kDNNClassIds});
                                  if (got.ok()) *out = std::move(got).value();
                                  return got.status();
                                }));
  }
  const double wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const EventLog& log = cluster->event_log();
  if (!o.json) {
    out << "simulated " << options.cluster << " (allreduce, " << replicas[0].buckets
        << " bucket(s) per step): global step " << done << " in " << cluster->VirtualSeconds()
        << " virtual s (" << wall_seconds << " s wall), " << log.count() << " messages, "
        << log.Count(SimEvent::Kind::kDropped) << " dropped\n"
        << "event log " << log.Hash() << ", weights " << HashParameters(parameters) << ", "
        << differing_steps << " steps with differing weights\n"
        << "test accuracy " << eval.accuracy << ", loss " << eval.loss << "\n";
  } else {
    nlohmann::ordered_json j;
    j["accuracy"] = eval.accuracy;
    j["loss"] = eval.loss;
    j["train_loss"] = loss;
    j["global_step"] = done;
    j["virtual_seconds"] = cluster->VirtualSeconds();
    j["wall_seconds"] = wall_seconds;
    j["messages"] = log.count();
    j["dropped"] = log.Count(SimEvent::Kind::kDropped);
    j["event_log_hash"] = log.Hash();
    j["weights_hash"] = HashParameters(parameters);
    j["buckets"] = replicas[0].buckets;
    j["steps_with_differing_weights"] = differing_steps;
    j["invariant_violations"] = differing_steps;
    j["invariants"] = {{"identical weights", differing_steps}};
    j["violations"] = differing_steps > 0 ? nlohmann::json::array({first_difference})
                                          : nlohmann::json::array();
    j["hung"] = false;
    j["out_of_time"] = false;
    if (!failure.ok()) j["failure"] = failure.ToString();
    j["cluster"] = options.cluster;
    j["mode"] = "allreduce";
    j["workers"] = workers;
    j["seed"] = o.seed;
    out << j.dump() << "\n";
  }
  out.flush();
  if (!failure.ok()) return failure;
  if (differing_steps > 0) {
    return Internal("identical weights violated on " + std::to_string(differing_steps) +
                    " step(s); first: " + first_difference);
  }
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
