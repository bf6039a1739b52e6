#include "training/distributed/in_graph_classifier.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "training/checkpoint/checkpoint.h"

namespace actorflow {
namespace {

StatusOr<std::shared_ptr<const Dataset>> CallInputFn(const InputFn& input_fn) {
  if (!input_fn) return InvalidArgument("input_fn is empty");
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset, input_fn());
  if (dataset == nullptr) return InvalidArgument("input_fn returned no dataset");
  AF_RETURN_IF_ERROR(dataset->status());
  if (dataset->num_components() != 2) {
    return InvalidArgument("input_fn's dataset has elements " +
                           ElementSpecString(dataset->output_dtypes(), dataset->output_shapes()) +
                           "; expected (features float32 [batch, F], labels int32 [batch])");
  }
  return dataset;
}

}  // namespace

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
  DNNModelSpec spec;
  spec.feature_columns = m.feature_columns;
  spec.hidden_units = m.hidden_units;
  spec.n_classes = m.n_classes;
  spec.activation = m.activation;
  spec.label_column = m.label_column;
  AF_RETURN_IF_ERROR(ValidateModelSpec(spec));
  if (!m.session_factory) return InvalidArgument("InGraphClassifier: no session_factory given");
  if (m.timeout_in_ms < 0) {
    return InvalidArgument("InGraphClassifier: timeout_in_ms " + std::to_string(m.timeout_in_ms) +
                           " must be >= 0");
  }
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
  if (m.optimizer_factory) {
    AF_ASSIGN_OR_RETURN(optimizer_, m.optimizer_factory());
    if (optimizer_ == nullptr) return InvalidArgument("optimizer_factory returned no optimizer");
  } else {
    AF_ASSIGN_OR_RETURN(optimizer_, MakeOptimizer(m.optimizer, m.learning_rate));
  }
  AF_ASSIGN_OR_RETURN(model_, BuildInGraphModel(scope_, spec_, m.seed, options_.replication,
                                                optimizer_.get()));
  AF_ASSIGN_OR_RETURN(saver_, Saver::Create(graph_.get(), SaverOptions()));
  return Status::OK();
}

Status InGraphClassifier::PrepareModelDirAndInitialize() {
  const std::string& dir = options_.model.model_dir;
  if (dir.empty()) return RunStep({}, {}, {kInGraphInit}, nullptr);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec)) {
    return Unavailable("model directory '" + dir + "' cannot be created" +
                       (ec ? ": " + ec.message() : std::string()));
  }
  StatusOr<DNNModelSpec> existing = ReadModelSpec(dir);
  if (existing.ok() && *existing != spec_) {
    return FailedPrecondition("model directory '" + dir +
                              "' holds another model (its model.json differs): use another "
                              "directory");
  }
  if (!existing.ok() && existing.status().code() != Code::kNotFound) return existing.status();
  AF_RETURN_IF_ERROR(WriteModelSpec(dir, spec_));
  StatusOr<std::string> latest = LatestCheckpoint(dir);
  if (!latest.ok()) {
    if (latest.status().code() != Code::kNotFound) return latest.status();
    return RunStep({}, {}, {kInGraphInit}, nullptr);
  }
  AF_RETURN_IF_ERROR(saver_->Restore(session_.get(), *latest));
  AF_ASSIGN_OR_RETURN(checkpoint_step_, ReadCheckpointGlobalStep(*latest));
  return Status::OK();
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
  if (labels.dtype() != DType::kInt32 || labels.rank() != 1 || labels.dim(0) != features.dim(0)) {
    return InvalidArgument(where + ": labels are " + labels.DebugString() + ", expected int32 [" +
                           std::to_string(features.dim(0)) + "]");
  }
  for (int64_t i = 0; i < labels.dim(0); ++i) {
    const int32_t y = labels.data<int32_t>()[i];
    if (y < 0 || y >= spec_.n_classes) {
      return InvalidArgument("label " + std::to_string(y) + " (example " + std::to_string(i) +
                             " of " + where + ") is outside [0, " +
                             std::to_string(spec_.n_classes) + ")");
    }
  }
  return Status::OK();
}

StatusOr<int64_t> InGraphClassifier::GlobalStep() {
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(RunStep({}, {model_.global_step.name()}, {}, &out));
  return static_cast<int64_t>(out[0].ElementAsDouble(0));
}

StatusOr<TrainResult> InGraphClassifier::Train(const InputFn& input_fn, int64_t steps,
                                               const ProgressFn& progress) {
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset, CallInputFn(input_fn));
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
  const std::string& dir = options_.model.model_dir;
  if (!dir.empty() && result.global_step != checkpoint_step_) {
    AF_RETURN_IF_ERROR(saver_->Save(session_.get(), dir, result.global_step).status());
    checkpoint_step_ = result.global_step;
    AF_RETURN_IF_ERROR(WriteModelSpec(dir, spec_));
  }
  return result;
}

StatusOr<EvalResult> InGraphClassifier::Evaluate(const InputFn& input_fn) {
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset, CallInputFn(input_fn));
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
