// `actorflow simulate --mode allreduce` (and `actorflow train --cluster sim:worker=W
// --mode allreduce`): all-reduce data parallelism on a simulated cluster, run by the
// library trainer (Train with TrainerCluster::Simulated and kAllReduce,
// actors/trainer/cluster_trainer.h): a replica per worker task, their steps run
// together, every member's weights compared byte for byte at every step.
#include <nlohmann/json.hpp>

#include "actors/sim/simulated_cluster.h"
#include "actors/trainer/cluster_trainer.h"
#include "tools/simulate_command.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"

namespace actorflow {
namespace cli {

Status SimulateAllReduce(const SimulateCommandOptions& options, std::ostream& out) {
  const TrainCommandOptions& o = options.train;
  AF_ASSIGN_OR_RETURN(SimClusterShape shape, ParseSimClusterSpec(options.cluster));
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(o));
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model, ClassifierOptionsFromFlags(o, data, classes));
  AF_ASSIGN_OR_RETURN(TrainerOptions trainer,
                      TrainerOptionsOfSimulation(options, shape, ModelSpecOf(model)));
  AF_ASSIGN_OR_RETURN(const TrainerResult trained,
                      Train(trainer, {data.train.features, data.train.labels},
                            {data.test.features, data.test.labels}));
  const TrainerResult& result = trained;
  const SimulatedTrainerRun& run = *result.simulation;
  const SimTrainingReport& report = run.report;
  const std::vector<std::string>& differences = report.invariants.at(0).violations;
  const int64_t differing = static_cast<int64_t>(differences.size());
  if (!o.json) {
    out << "simulated " << options.cluster << " (allreduce, " << run.allreduce_buckets
        << " bucket(s) per step): global step " << report.global_step << " in "
        << report.virtual_seconds << " virtual s (" << result.seconds << " s wall), "
        << run.messages << " messages, " << run.dropped << " dropped\n"
        << "event log " << run.event_log_hash << ", weights " << report.weights_hash << ", "
        << differing << " steps with differing weights\n"
        << "test accuracy " << result.accuracy << ", loss " << result.loss << "\n";
  } else {
    nlohmann::ordered_json j;
    j["accuracy"] = result.accuracy;
    j["loss"] = result.loss;
    j["train_loss"] = run.train_loss;
    j["global_step"] = report.global_step;
    AddSimulatedRunJson(run, result.seconds, &j);
    j["buckets"] = run.allreduce_buckets;
    j["steps_with_differing_weights"] = differing;
    j["invariant_violations"] = differing;
    j["invariants"] = {{"identical weights", differing}};
    j["violations"] = differing > 0 ? nlohmann::json::array({differences.front()})
                                    : nlohmann::json::array();
    j["hung"] = false;
    j["out_of_time"] = false;
    if (!run.failure.ok()) j["failure"] = run.failure.ToString();
    j["cluster"] = options.cluster;
    j["mode"] = "allreduce";
    j["workers"] = shape.tasks.at("worker");
    j["seed"] = o.seed;
    out << j.dump() << "\n";
  }
  out.flush();
  return SimulatedRunVerdict(run);
}

}  // namespace cli
}  // namespace actorflow
