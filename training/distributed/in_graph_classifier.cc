#include "training/distributed/in_graph_classifier.h"

#include <utility>

#include "training/checkpoint/checkpoint.h"
#include "training/estimators/classifier_setup.h"

namespace actorflow {
InGraphClassifier::InGraphClassifier(InGraphClassifierOptions options, DNNModelSpec spec)
    : options_(std::move(options)),
      spec_(std::move(spec)),
      scope_(Scope::NewRootScope()),
      graph_(scope_.graph_ptr()) {}

InGraphClassifier::~InGraphClassifier() {
  if (session_ != nullptr) session_->Close();
}

StatusOr<std::unique_ptr<InGraphClassifier>> InGraphClassifier::Create(
    InGraphClassifierOptions options) {
  const DNNClassifierOptions& m = options.model;
  DNNModelSpec spec = ModelSpecFromOptions(m);
  AF_RETURN_IF_ERROR(ValidateModelSpec(spec));
  AF_RETURN_IF_ERROR(CheckSessionOptions("InGraphClassifier", m));
  std::unique_ptr<InGraphClassifier> classifier(
      new InGraphClassifier(std::move(options), std::move(spec)));
  AF_RETURN_IF_ERROR(classifier->Build());
  AF_ASSIGN_OR_RETURN(classifier->session_,
                      classifier->options_.model.session_factory(classifier->graph_.get()));
  if (classifier->session_ == nullptr) {
    return Internal("InGraphClassifier: the session factory returned no session");
  }
  AF_RETURN_IF_ERROR(classifier->PrepareModelDirAndInitialize());
  return classifier;
}

Status InGraphClassifier::Build() {
  const DNNClassifierOptions& m = options_.model;
  AF_ASSIGN_OR_RETURN(optimizer_, MakeOptimizerFromOptions(m));
  AF_ASSIGN_OR_RETURN(model_, BuildInGraphModel(scope_, spec_, m.seed, options_.replication,
                                                optimizer_.get()));
  AF_ASSIGN_OR_RETURN(saver_, Saver::Create(graph_.get(), SaverOptions()));
  return Status::OK();
}

Status InGraphClassifier::PrepareModelDirAndInitialize() {
  const std::string& dir = options_.model.model_dir;
  if (dir.empty()) return RunStep({}, {}, {kInGraphInit}, nullptr);
  AF_RETURN_IF_ERROR(PrepareModelDir(dir, spec_));
  AF_ASSIGN_OR_RETURN(
      bool restored, RestoreLatestCheckpoint(dir, saver_.get(), session_.get(), &checkpoint_step_));
  if (restored) return Status::OK();
  return RunStep({}, {}, {kInGraphInit}, nullptr);
}

Status InGraphClassifier::RunStep(const FeedList& feeds, const std::vector<std::string>& fetches,
                                  const std::vector<std::string>& targets,
                                  std::vector<Tensor>* outputs) {
  RunOptions run_options;
  run_options.timeout_in_ms = options_.model.timeout_in_ms;
  std::vector<Tensor> unused;
  return session_->Run(run_options, feeds, fetches, targets, outputs ? outputs : &unused, nullptr);
}

Status InGraphClassifier::CheckBatch(const Element& batch, int64_t batch_index) const {
  const std::string where = "batch " + std::to_string(batch_index);
  const int64_t num_features = static_cast<int64_t>(spec_.feature_columns.size());
  if (batch.size() != 2) return InvalidArgument(where + " is not (features, labels)");
  const Tensor& features = batch[0];
  const Tensor& labels = batch[1];
  if (features.dtype() != DType::kFloat32 || features.rank() != 2 ||
      features.dim(1) != num_features || features.dim(0) == 0) {
    return InvalidArgument(where + ": features are " + features.DebugString() +
                           ", expected float32 [batch >= 1, " + std::to_string(num_features) + "]");
  }
  return CheckLabels(labels, features.dim(0), spec_.n_classes, where);
}

StatusOr<int64_t> InGraphClassifier::GlobalStep() {
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(RunStep({}, {model_.global_step.name()}, {}, &out));
  return static_cast<int64_t>(out[0].ElementAsDouble(0));
}

StatusOr<TrainResult> InGraphClassifier::Train(const InputFn& input_fn, int64_t steps,
                                               const ProgressFn& progress) {
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset,
                      CallInputFn(input_fn, /*labels_required=*/true));
  TrainResult result;
  AF_ASSIGN_OR_RETURN(result.global_step, GlobalStep());
  std::unique_ptr<Iterator> it = dataset->MakeIterator();
  while (steps < 0 || result.steps < steps) {
    Element batch;
    Status next = it->GetNext(&batch);
    if (next.code() == Code::kOutOfRange) break;
    AF_RETURN_IF_ERROR(next);
    AF_RETURN_IF_ERROR(CheckBatch(batch, result.steps));
    AF_ASSIGN_OR_RETURN(FeedList feeds, SplitBatchOverTowers(model_, batch[0], batch[1]));
    std::vector<Tensor> out;
    Status step = RunStep(feeds, {kInGraphLoss}, {kInGraphTrain}, &out);
    if (!step.ok()) {
      return step.WithContext("replicated training step " + std::to_string(result.global_step + 1));
    }
    ++result.steps;
    ++result.global_step;
    result.last_loss = out[0].ElementAsDouble(0);
    if (progress) progress(TrainProgress{result.global_step, result.steps, result.last_loss});
  }
  AF_RETURN_IF_ERROR(SaveAtEndOfTraining(options_.model.model_dir, spec_, saver_.get(),
                                         session_.get(), result.global_step, &checkpoint_step_));
  return result;
}

StatusOr<EvalResult> InGraphClassifier::Evaluate(const InputFn& input_fn) {
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset,
                      CallInputFn(input_fn, /*labels_required=*/true));
  std::unique_ptr<Iterator> it = dataset->MakeIterator();
  const InGraphTower& tower = model_.towers.front();
  EvalResult result;
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t batch_index = 0;; ++batch_index) {
    Element batch;
    Status next = it->GetNext(&batch);
    if (next.code() == Code::kOutOfRange) break;
    AF_RETURN_IF_ERROR(next);
    AF_RETURN_IF_ERROR(CheckBatch(batch, batch_index));
    const FeedList feeds = {{tower.features.name(), batch[0]}, {tower.labels.name(), batch[1]}};
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(
        RunStep(feeds, {tower.example_loss.name(), tower.class_ids.name()}, {}, &out));
    const int32_t* labels = batch[1].data<int32_t>();
    const float* loss = out[0].data<float>();         // [batch]
    const int64_t* classes = out[1].data<int64_t>();  // [batch]
    for (int64_t i = 0; i < batch[1].dim(0); ++i) {
      loss_sum += loss[i];
      if (classes[i] == labels[i]) ++correct;
    }
    result.num_examples += batch[1].dim(0);
  }
  if (result.num_examples == 0) return InvalidArgument("Evaluate: the dataset has no example");
  result.accuracy = static_cast<double>(correct) / static_cast<double>(result.num_examples);
  result.loss = loss_sum / static_cast<double>(result.num_examples);
  AF_ASSIGN_OR_RETURN(result.global_step, GlobalStep());
  return result;
}

}  // namespace actorflow
