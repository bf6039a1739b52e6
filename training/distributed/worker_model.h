// WorkerModel: a data-parallel worker's local copy of the DNN model graph
// (training/estimators/dnn_model.h). The variables' values live on the parameter servers; the
// worker feeds the values it pulled in place of its local variables (a fed tensor
// stops the step there, so the local variables are never read) and fetches the loss
// and the gradient of every trainable variable:
//
//   AF_ASSIGN_OR_RETURN(auto model, WorkerModel::Create(spec, seed, factory, 30000));
//   AF_ASSIGN_OR_RETURN(auto initial, model->InitialValues());   // chief: seeded values
//   AF_ASSIGN_OR_RETURN(auto step, model->ComputeGradients(snapshot.values, x, y));
//   client->Push(snapshot, step.gradients, timeout);
//
// Besides the model, the graph holds "global_step", one "pulled/<var>/Assign" per
// variable (fed through "pulled/<var>/value") grouped by the NoOp "pulled/assign_all",
// and a Saver, so that the chief can write a checkpoint of pulled values that
// DNNClassifier::Load (and `actorflow predict`) reads like one of its own.
//
// Thread safety: one thread at a time per WorkerModel.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_WORKER_MODEL_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_WORKER_MODEL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/dnn_model.h"
#include "training/estimators/model_spec.h"

namespace actorflow {

// Variable name -> value, e.g. "dnn/hiddenlayer_0/kernel" -> float32 [F, 128].
using ParameterMap = std::map<std::string, Tensor>;

struct GradientStep {
  double loss = 0.0;            // the batch's mean loss at the fed parameters
  ParameterMap gradients;       // one per trainable variable, same shape
};

// Accuracy and mean loss of the DNN model (training/estimators/dnn_model.h) over
// every row of (features float32 [N, F], labels int32 [N]), in batches of
// `batch_size`: `run` runs one step that feeds `feeds` (kDNNFeatures, kDNNLabels and
// whatever the caller adds) and fetches kDNNExampleLoss and kDNNClassIds, in that
// order. The caller sets the result's global_step. InvalidArgument for no rows;
// `run`'s errors.
using EvalStep = std::function<Status(const FeedList& feeds, std::vector<Tensor>* out)>;
StatusOr<EvalResult> EvaluateInBatches(const Tensor& features, const Tensor& labels,
                                       int64_t batch_size, const EvalStep& run);

class WorkerModel {
 public:
  // Builds the graph and opens its session (`timeout_ms` bounds every Run; 0 = none)
  // for data-parallel replica `replica` (its own dropout stream; BuildDNNModel).
  // Errors: BuildDNNModel's, the factory's, InvalidArgument for a missing factory.
  static StatusOr<std::unique_ptr<WorkerModel>> Create(const DNNModelSpec& spec, uint64_t seed,
                                                       const SessionFactory& session_factory,
                                                       int64_t timeout_ms, int replica = 0);
  ~WorkerModel();
  WorkerModel(const WorkerModel&) = delete;
  WorkerModel& operator=(const WorkerModel&) = delete;

  // The trainable variables' names, in model order.
  const std::vector<std::string>& variable_names() const { return variable_names_; }

  // The seeded initial value of every trainable variable (runs the initializers if
  // this model has not yet, and never again: a later call reads the local variables):
  // the same values DNNClassifier starts from with the same spec and seed.
  StatusOr<ParameterMap> InitialValues();

  // Loss and gradients of one batch (features float32 [b, F], labels int32 [b] in
  // [0, n_classes)) at `parameters` (every trainable variable). InvalidArgument
  // naming a missing variable; the session's errors.
  StatusOr<GradientStep> ComputeGradients(const ParameterMap& parameters, const Tensor& features,
                                          const Tensor& labels);

  // Accuracy and mean loss over every row of (features, labels) at `parameters`, in
  // batches of `batch_size`. `global_step` is copied into the result.
  StatusOr<EvalResult> Evaluate(const ParameterMap& parameters, const Tensor& features,
                                const Tensor& labels, int64_t global_step,
                                int64_t batch_size = 256);

  // Assigns `parameters` and `global_step` to the local variables and writes
  // checkpoint "ckpt-<global_step>" and model.json into `dir` (created if needed).
  // Returns the checkpoint's path prefix. Errors: Saver::Save's, WriteModelSpec's.
  StatusOr<std::string> SaveCheckpoint(const ParameterMap& parameters, int64_t global_step,
                                       const std::string& dir);

 private:
  WorkerModel(DNNModelSpec spec, int64_t timeout_ms);
  Status Build(uint64_t seed, int replica);
  // Runs the initializers once: each run draws new random values, and the first
  // draw is the one DNNClassifier starts from with the same seed.
  Status Initialize();
  // Feeds for `parameters` (each variable's output name -> value).
  StatusOr<FeedList> ParameterFeeds(const ParameterMap& parameters) const;
  Status Run(const FeedList& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* outputs);

  DNNModelSpec spec_;
  int64_t timeout_ms_;
  std::shared_ptr<Graph> graph_;
  DNNModel model_;
  std::vector<std::string> variable_names_;
  std::vector<std::string> variable_outputs_;  // what to feed, per variable
  std::vector<std::string> gradient_names_;    // what to fetch, per variable
  // The model's kUpdateOpsCollection (batch normalization's moving averages): run
  // with every gradient step, so that this worker's moving averages follow its
  // batches and a chief's checkpoint carries them (they are local, not on the ps).
  std::vector<std::string> update_op_names_;
  bool initialized_ = false;
  std::unique_ptr<Saver> saver_;
  std::unique_ptr<Session> session_;  // declared last: closed before the graph goes
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_WORKER_MODEL_H_
