// InGraphClassifier: DNNClassifier's Train/Evaluate interface over an in-graph
// replicated model (training/distributed/in_graph_replication.h): one client, one session, one
// graph with a tower per worker device or task; every training step splits its batch
// over the towers and applies the averaged gradients once.
//
//   InGraphClassifierOptions options;
//   options.model = ...;                          // as for DNNClassifier::Create
//   options.replication.ps_devices = {"/cpu:0"};
//   options.replication.tower_devices = {"/cpu:0", "/cpu:1"};
//   options.model.session_factory = [](const Graph* g) {
//     SessionOptions s;
//     s.device_count = {{"CPU", 2}};
//     return NewSession(g, s);
//   };
//   AF_ASSIGN_OR_RETURN(auto classifier, InGraphClassifier::Create(options));
//   AF_RETURN_IF_ERROR(classifier->Train(train_input_fn, 1000).status());
//   AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(test_input_fn));
//
// Results have DNNClassifier's types and meaning (TrainResult, EvalResult, progress
// after each step with the whole batch's mean loss). Evaluation runs tower 0 on whole
// batches. With options.model.model_dir the classifier restores the directory's latest
// checkpoint at Create (after checking its model.json) and saves one and model.json
// at the end of Train, with DNNClassifier's variable names: `actorflow predict` and
// DNNClassifier::Load read the directory as their own. optimizer_factory, when set,
// is used as DNNClassifier uses it.
//
// Thread safety: one thread at a time per classifier.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_CLASSIFIER_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/status.h"
#include "kernels/session.h"
#include "training/estimators/dnn_classifier.h"
#include "training/distributed/in_graph_replication.h"

namespace actorflow {

class Saver;

struct InGraphClassifierOptions {
  // The model, optimizer, seed, model directory, session factory and step deadline,
  // with DNNClassifier's meaning and checks.
  DNNClassifierOptions model;
  // Where the variables and the towers go.
  InGraphReplication replication;
};

class InGraphClassifier {
 public:
  ~InGraphClassifier();
  InGraphClassifier(const InGraphClassifier&) = delete;
  InGraphClassifier& operator=(const InGraphClassifier&) = delete;

  // Builds the replicated graph, opens the session, initializes or restores the
  // variables. Errors: DNNClassifier::Create's, BuildInGraphModel's.
  static StatusOr<std::unique_ptr<InGraphClassifier>> Create(InGraphClassifierOptions options);

  // As DNNClassifier::Train: one replicated step per batch of input_fn's dataset.
  StatusOr<TrainResult> Train(const InputFn& input_fn, int64_t steps,
                              const ProgressFn& progress = nullptr);
  // As DNNClassifier::Evaluate.
  StatusOr<EvalResult> Evaluate(const InputFn& input_fn);
  StatusOr<int64_t> GlobalStep();

  const DNNModelSpec& spec() const { return spec_; }
  const InGraphModel& model() const { return model_; }
  const Graph& graph() const { return *graph_; }
  // The session the classifier runs its steps in (for inspection: tracing, placement).
  Session* session() const { return session_.get(); }

 private:
  InGraphClassifier(InGraphClassifierOptions options, DNNModelSpec spec);
  Status Build();
  Status PrepareModelDirAndInitialize();
  // Checks a batch: features float32 [n, F], labels int32 [n] in [0, n_classes).
  Status CheckBatch(const Element& batch, int64_t batch_index) const;
  Status RunStep(const FeedList& feeds, const std::vector<std::string>& fetches,
                 const std::vector<std::string>& targets, std::vector<Tensor>* outputs);

  InGraphClassifierOptions options_;
  DNNModelSpec spec_;
  Scope scope_;
  std::shared_ptr<Graph> graph_;
  InGraphModel model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Saver> saver_;
  int64_t checkpoint_step_ = -1;  // of the newest checkpoint written or restored
  std::unique_ptr<Session> session_;  // declared last: closed before the graph goes
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_CLASSIFIER_H_
