#include "training/distributed/in_graph_trainer.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "training/data/dataset.h"
#include "training/distributed/in_graph_classifier.h"

namespace actorflow {
namespace {

// The classifier the towers replicate: `options`' model, optimizer, rate (decaying
// per epoch of `step_rows`-row steps), seed, model directory and step deadline.
DNNClassifierOptions ClassifierOptionsFor(const TrainerOptions& options, int64_t train_rows,
                                          int64_t step_rows) {
  const DNNModelSpec& spec = options.model;
  DNNClassifierOptions model;
  model.feature_columns = spec.feature_columns;
  model.hidden_units = spec.hidden_units;
  model.n_classes = spec.n_classes;
  model.activation = spec.activation;
  model.label_column = spec.label_column;
  model.model = spec.model;
  model.split = spec.split;
  model.optimizer = options.optimizer;
  model.learning_rate = options.learning_rate;
  model.learning_rate_decay =
      DecayPerEpoch(options.learning_rate_decay_per_epoch, train_rows, step_rows);
  model.seed = options.seed;
  model.model_dir = options.checkpoint_dir;
  model.timeout_in_ms = options.timeout_ms;
  return model;
}

}  // namespace

InGraphReplication InGraphReplicationFor(const TrainerOptions& options, int towers,
                                         int ps_tasks) {
  InGraphReplication replication;
  if (ps_tasks == 0) {
    replication.ps_devices = {"/cpu:0"};
    for (int i = 0; i < towers; ++i) {
      replication.tower_devices.push_back("/cpu:" + std::to_string(i));
    }
    return replication;
  }
  const std::string job =
      options.cluster.kind == TrainerCluster::Kind::kSpec ? options.cluster.job : "worker";
  for (int k = 0; k < ps_tasks; ++k) {
    replication.ps_devices.push_back("/job:ps/task:" + std::to_string(k));
  }
  for (int i = 0; i < towers; ++i) {
    replication.tower_devices.push_back("/job:" + job + "/task:" + std::to_string(i));
  }
  return replication;
}

int64_t PlannedInGraphSteps(const TrainerOptions& options, int towers, int64_t train_rows) {
  if (options.epochs <= 0) return options.max_steps;
  const int64_t step_rows = options.batch_size * towers;
  const int64_t steps = options.epochs * ((train_rows + step_rows - 1) / step_rows);
  return options.max_steps > 0 ? std::min(steps, options.max_steps) : steps;
}

StatusOr<TrainerResult> RunInGraphTrainer(const TrainerOptions& options, const TrainerPlan& plan,
                                          const SessionFactory& session,
                                          const LabeledData& train, const LabeledData& test) {
  const int64_t towers = static_cast<int64_t>(plan.in_graph.tower_devices.size());
  const int64_t rows = train.features.dim(0);
  const int64_t step_rows = options.batch_size * towers;
  const auto start = std::chrono::steady_clock::now();
  InGraphClassifierOptions classifier_options;
  classifier_options.model = ClassifierOptionsFor(options, rows, step_rows);
  classifier_options.model.session_factory = session;
  classifier_options.replication = plan.in_graph;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<InGraphClassifier> classifier,
                      InGraphClassifier::Create(std::move(classifier_options)));

  // Every pass is whole and reshuffled with the seed (batch before repeat).
  const uint64_t seed = options.seed;
  const int64_t repeat = options.epochs > 0 ? options.epochs : -1;
  const InputFn input = [&train, rows, step_rows, seed,
                         repeat]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({train.features, train.labels}));
    return slices->Shuffle(rows, seed)->Batch(step_rows)->Repeat(repeat);
  };
  const int64_t planned = PlannedInGraphSteps(options, static_cast<int>(towers), rows);
  ProgressFn progress;
  if (options.progress) {
    const WorkerProgressFn report = options.progress;
    const int64_t steps_per_epoch = std::max<int64_t>(1, (rows + step_rows - 1) / step_rows);
    progress = [report, planned, steps_per_epoch](const TrainProgress& p) {
      WorkerProgress w;
      w.worker = 0;
      w.step = p.step;
      w.planned_steps = planned;
      w.epoch = (p.step - 1) / steps_per_epoch;
      w.loss = p.loss;
      w.global_step = p.global_step;
      report(w);
    };
  }
  AF_ASSIGN_OR_RETURN(TrainResult trained,
                      classifier->Train(input, options.max_steps > 0 ? options.max_steps : -1,
                                        progress));
  const InputFn evaluation = [&test]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({test.features, test.labels}));
    return slices->Batch(256);
  };
  AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(evaluation));
  TrainerResult result;
  std::vector<std::string> names;
  for (const Output& v : classifier->model().variables) names.push_back(v.name());
  std::vector<Tensor> values;
  AF_RETURN_IF_ERROR(classifier->session()->Run({}, names, {}, &values));
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    result.in_graph.parameters[names[i]] = values[i];
  }
  result.accuracy = eval.accuracy;
  result.loss = eval.loss;
  result.global_step = eval.global_step;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.plan = plan;
  result.in_graph.eval = eval;
  result.in_graph.train = trained;
  return result;
}

}  // namespace actorflow
