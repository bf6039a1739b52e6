#include "training/estimators/dnn_classifier.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "graph/ops.h"
#include "training/checkpoint/checkpoint.h"
#include "training/estimators/classifier_setup.h"
#include "training/estimators/dnn_model.h"
#include "training/estimators/layer_classes.h"
#include "training/estimators/model_parallel.h"
#include "training/estimators/pipeline.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

// Node names the classifier feeds and fetches (training/estimators/dnn_model.h), and its own.
constexpr const char* kFeatures = kDNNFeatures;            // float32 [?, F]
constexpr const char* kLabels = kDNNLabels;                // int32 [?]
constexpr const char* kProbabilitiesOutput = kDNNProbabilities;  // float32 [?, C]
constexpr const char* kClassIds = kDNNClassIds;            // int64 [?]
constexpr const char* kExampleLoss = kDNNExampleLoss;      // float32 [?]
constexpr const char* kLoss = kDNNLoss;                    // float32 []
constexpr char kTrain[] = "train";
constexpr char kInitOpName[] = "init";

}  // namespace

DNNClassifier::DNNClassifier(DNNClassifierOptions options, DNNModelSpec spec)
    : options_(std::move(options)),
      spec_(std::move(spec)),
      scope_(Scope::NewRootScope()),
      graph_(scope_.graph_ptr()) {}

DNNClassifier::~DNNClassifier() {
  if (session_ != nullptr) session_->Close();
}

StatusOr<std::unique_ptr<DNNClassifier>> DNNClassifier::Create(DNNClassifierOptions options) {
  return CreateInternal(std::move(options), /*for_training=*/true);
}

StatusOr<std::unique_ptr<DNNClassifier>> DNNClassifier::Load(const std::string& model_dir,
                                                             SessionFactory session_factory,
                                                             int64_t timeout_in_ms) {
  if (model_dir.empty()) return InvalidArgument("Load: the model directory is empty");
  AF_ASSIGN_OR_RETURN(DNNModelSpec spec, ReadModelSpec(model_dir));
  DNNClassifierOptions options;
  options.feature_columns = spec.feature_columns;
  options.hidden_units = spec.hidden_units;
  options.n_classes = spec.n_classes;
  options.activation = spec.activation;
  options.label_column = spec.label_column;
  options.model = spec.model;
  options.split = spec.split;
  // A split model's parts, unplaced: its structure on the session's default device.
  // Only a vertical split's structure depends on the number of parts; the others
  // just need as many (unplaced) devices as their split asks for.
  const int64_t parts = spec.split == "vertical" ? spec.parts
                        : spec.split == "none"   ? 1
                                                 : std::max<int64_t>(spec.parts, kCnnTowers);
  options.devices.assign(static_cast<size_t>(parts), "");
  options.model_dir = model_dir;
  options.session_factory = std::move(session_factory);
  options.timeout_in_ms = timeout_in_ms;
  return CreateInternal(std::move(options), /*for_training=*/false);
}

StatusOr<std::unique_ptr<DNNClassifier>> DNNClassifier::CreateInternal(DNNClassifierOptions options,
                                                                       bool for_training) {
  DNNModelSpec spec = ModelSpecFromOptions(options);
  spec.model = options.model;
  spec.split = options.split;
  // Only a vertical split's structure depends on how many devices it is cut over.
  spec.parts = options.split == "vertical"
                   ? std::max<int64_t>(1, static_cast<int64_t>(options.devices.size()))
                   : 1;
  AF_RETURN_IF_ERROR(ValidateModelSpec(spec));
  AF_RETURN_IF_ERROR(CheckSessionOptions("DNNClassifier", options));
  std::unique_ptr<DNNClassifier> classifier(new DNNClassifier(std::move(options), std::move(spec)));
  AF_RETURN_IF_ERROR(classifier->Build(for_training));
  if (for_training && !classifier->options_.model_dir.empty()) {
    AF_RETURN_IF_ERROR(PrepareModelDir(classifier->options_.model_dir, classifier->spec_));
  }
  AF_ASSIGN_OR_RETURN(classifier->session_,
                      classifier->options_.session_factory(classifier->graph_.get()));
  if (classifier->session_ == nullptr) {
    return Internal("DNNClassifier: the session factory returned no session");
  }
  AF_RETURN_IF_ERROR(classifier->InitializeOrRestore(/*require_checkpoint=*/!for_training));
  return classifier;
}

Status DNNClassifier::Build(bool for_training) {
  const Scope& root = scope_;
  AF_ASSIGN_OR_RETURN(DNNModel model, BuildDNNModel(root, spec_, options_.seed, options_.devices,
                                                    options_.available_devices));
  devices_ = model.devices;
  Output loss = model.loss;
  train_loss_ = kLoss;

  AF_ASSIGN_OR_RETURN(global_step_, CreateGlobalStep(root));
  if (for_training) {
    AF_ASSIGN_OR_RETURN(optimizer_, MakeOptimizerFromOptions(options_));
    if (options_.pipeline_micro_batches > 0) {
      AF_ASSIGN_OR_RETURN(PipelinedMlp pipeline, BuildPipeline(model));
      AF_RETURN_IF_ERROR(optimizer_
                             ->ApplyGradients(root.WithOpName(kTrain), pipeline.grads_and_vars,
                                              global_step_)
                             .status());
      train_loss_ = pipeline.loss.name();
    } else if (std::vector<Output> updates = UpdateOps(*graph_); !updates.empty()) {
      // TF1's `with control_dependencies(UPDATE_OPS)`: a step also moves the batch
      // normalization's moving averages.
      AF_ASSIGN_OR_RETURN(Output step, optimizer_->Minimize(root.WithOpName("train_step"), loss,
                                                            global_step_));
      updates.push_back(step);
      NoOp(root.WithOpName(kTrain).WithControlDependencies(updates));
    } else {
      AF_RETURN_IF_ERROR(
          optimizer_->Minimize(root.WithOpName(kTrain), loss, global_step_).status());
    }
    trainable_ = true;
  }
  GlobalVariablesInitializer(root.WithOpName(kInitOpName));
  if (!root.ok()) return root.status();
  // Every variable (optimizer slots and the global step included) is checkpointed;
  // a prediction-only graph has only the model's, which a checkpoint of training has.
  AF_ASSIGN_OR_RETURN(saver_, Saver::Create(graph_.get(), SaverOptions()));
  return Status::OK();
}

StatusOr<PipelinedMlp> DNNClassifier::BuildPipeline(const DNNModel& model) {
  const int micro_batches = options_.pipeline_micro_batches;
  if (options_.model != "mlp" || options_.split != "layer") {
    return InvalidArgument("DNNClassifier: pipeline_micro_batches " +
                           std::to_string(micro_batches) + " needs model mlp with split layer, "
                           "got model " + options_.model + " split " + options_.split);
  }
  PipelineParams params;
  params.model.hidden_units = spec_.hidden_units;
  params.model.n_classes = spec_.n_classes;
  AF_ASSIGN_OR_RETURN(params.model.activation, ParseActivation(spec_.activation));
  params.model.seed = options_.seed;
  // The micro-batches are cut from each fed batch at run time; the smallest batch
  // that splits into them is all the builder checks.
  params.batch_rows = micro_batches;
  params.micro_batches = micro_batches;
  AF_ASSIGN_OR_RETURN(params.schedule, ParsePipelineSchedule(options_.pipeline_schedule));
  params.devices = model.devices;
  params.variables = model.variables;
  return BuildPipelinedMlp(scope_.NewSubScope("pipeline"), model.inputs, model.labels, params);
}

Status DNNClassifier::InitializeOrRestore(bool require_checkpoint) {
  if (!options_.model_dir.empty()) {
    AF_ASSIGN_OR_RETURN(bool restored, RestoreLatestCheckpoint(options_.model_dir, saver_.get(),
                                                               session_.get(), &checkpoint_step_));
    if (restored) return Status::OK();
    if (require_checkpoint) {
      return NotFound("model directory '" + options_.model_dir +
                      "' has no checkpoint: train a model into it first");
    }
  }
  return RunStep({}, {}, {kInitOpName}, nullptr);
}

Status DNNClassifier::RunStep(const FeedList& feeds, const std::vector<std::string>& fetches,
                              const std::vector<std::string>& targets,
                              std::vector<Tensor>* outputs, RunMetadata* metadata,
                              bool trace) {
  RunOptions run_options;
  run_options.timeout_in_ms = options_.timeout_in_ms;
  if (trace) run_options.trace_level = RunOptions::TraceLevel::kFullTrace;
  std::vector<Tensor> unused;
  return session_->Run(run_options, feeds, fetches, targets, outputs ? outputs : &unused,
                       metadata);
}

StatusOr<FeedList> DNNClassifier::MakeFeeds(const Element& batch, int64_t batch_index,
                                            bool with_labels) const {
  const int64_t num_features = static_cast<int64_t>(spec_.feature_columns.size());
  const std::string where = "batch " + std::to_string(batch_index);
  if (batch.empty()) return InvalidArgument(where + " has no component");
  const Tensor& features = batch[0];
  if (features.dtype() != DType::kFloat32 || features.rank() != 2 ||
      features.dim(1) != num_features) {
    return InvalidArgument(where + ": features are " + features.DebugString() +
                           ", expected float32 [batch, " + std::to_string(num_features) +
                           "] (one column per feature column)");
  }
  FeedList feeds = {{kFeatures, features}};
  if (!with_labels) return feeds;
  if (batch.size() < 2) {
    return InvalidArgument(where + " has no labels; training and evaluation need them");
  }
  const Tensor& labels = batch[1];
  AF_RETURN_IF_ERROR(CheckLabels(labels, features.dim(0), spec_.n_classes, where));
  feeds.emplace_back(kLabels, labels);
  return feeds;
}

StatusOr<int64_t> DNNClassifier::GlobalStep() {
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(RunStep({}, {global_step_.name()}, {}, &out));
  return static_cast<int64_t>(out[0].ElementAsDouble(0));
}

StatusOr<TrainResult> DNNClassifier::Train(const InputFn& input_fn, int64_t steps,
                                           const ProgressFn& progress) {
  if (!trainable_) {
    return FailedPrecondition("this classifier was loaded for prediction and cannot train");
  }
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset,
                      CallInputFn(input_fn, /*labels_required=*/false));
  TrainResult result;
  // The step counter lives in the graph; reading it once and counting here avoids a
  // read racing with the train op's increment.
  AF_ASSIGN_OR_RETURN(result.global_step, GlobalStep());
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  Clock::duration in_callbacks{0};
  std::unique_ptr<Iterator> it = dataset->MakeIterator();
  while (steps < 0 || result.steps < steps) {
    Element batch;
    const Clock::time_point asked = Clock::now();
    Status next = it->GetNext(&batch);
    result.input_seconds += std::chrono::duration<double>(Clock::now() - asked).count();
    if (next.code() == Code::kOutOfRange) break;
    AF_RETURN_IF_ERROR(next);
    AF_ASSIGN_OR_RETURN(FeedList feeds, MakeFeeds(batch, result.steps, /*with_labels=*/true));
    std::vector<Tensor> out;
    // The first step reports its cross-device traffic; with trace_step the first
    // three are traced and the last of them kept (the first builds the executors);
    // the others skip that work.
    const bool traced = options_.trace_step && result.steps < 3;
    RunMetadata metadata;
    Status step = RunStep(feeds, {train_loss_}, {kTrain}, &out,
                          result.steps == 0 || traced ? &metadata : nullptr, traced);
    if (step.ok() && result.steps == 0) result.step_transfers = metadata.transfers;
    if (step.ok() && traced) result.traced_step = std::move(metadata);
    if (!step.ok())
      return step.WithContext("training step " + std::to_string(result.global_step + 1));
    ++result.steps;
    ++result.global_step;
    result.last_loss = out[0].ElementAsDouble(0);
    if (progress) {
      const Clock::time_point called = Clock::now();
      progress(TrainProgress{result.global_step, result.steps, result.last_loss});
      in_callbacks += Clock::now() - called;
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - started - in_callbacks).count();
  AF_RETURN_IF_ERROR(SaveAtEndOfTraining(options_.model_dir, spec_, saver_.get(), session_.get(),
                                         result.global_step, &checkpoint_step_));
  return result;
}

StatusOr<EvalResult> DNNClassifier::Evaluate(const InputFn& input_fn) {
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset,
                      CallInputFn(input_fn, /*labels_required=*/false));
  std::unique_ptr<Iterator> it = dataset->MakeIterator();
  EvalResult result;
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t batch_index = 0;; ++batch_index) {
    Element batch;
    Status next = it->GetNext(&batch);
    if (next.code() == Code::kOutOfRange) break;
    AF_RETURN_IF_ERROR(next);
    AF_ASSIGN_OR_RETURN(FeedList feeds, MakeFeeds(batch, batch_index, /*with_labels=*/true));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(RunStep(feeds, {kExampleLoss, kClassIds}, {}, &out));
    const Tensor& labels = batch[1];
    const float* loss = out[0].data<float>();         // [batch]
    const int64_t* classes = out[1].data<int64_t>();  // [batch]
    for (int64_t i = 0; i < labels.dim(0); ++i) {
      loss_sum += loss[i];
      if (classes[i] == labels.data<int32_t>()[i]) ++correct;
    }
    result.num_examples += labels.dim(0);
  }
  if (result.num_examples == 0) return InvalidArgument("Evaluate: the dataset has no example");
  result.accuracy = static_cast<double>(correct) / static_cast<double>(result.num_examples);
  result.loss = loss_sum / static_cast<double>(result.num_examples);
  AF_ASSIGN_OR_RETURN(result.global_step, GlobalStep());
  return result;
}

StatusOr<std::vector<Prediction>> DNNClassifier::Predict(const InputFn& input_fn) {
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset,
                      CallInputFn(input_fn, /*labels_required=*/false));
  std::unique_ptr<Iterator> it = dataset->MakeIterator();
  std::vector<Prediction> predictions;
  for (int64_t batch_index = 0;; ++batch_index) {
    Element batch;
    Status next = it->GetNext(&batch);
    if (next.code() == Code::kOutOfRange) break;
    AF_RETURN_IF_ERROR(next);
    AF_ASSIGN_OR_RETURN(FeedList feeds, MakeFeeds(batch, batch_index, /*with_labels=*/false));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(RunStep(feeds, {kProbabilitiesOutput, kClassIds}, {}, &out));
    const int64_t n = out[0].dim(0);
    const int64_t c = out[0].dim(1);
    const float* p = out[0].data<float>();  // [n, c]
    for (int64_t i = 0; i < n; ++i) {
      Prediction prediction;
      prediction.class_id = out[1].data<int64_t>()[i];
      prediction.probabilities.assign(p + i * c, p + (i + 1) * c);
      predictions.push_back(std::move(prediction));
    }
  }
  return predictions;
}

}  // namespace actorflow
