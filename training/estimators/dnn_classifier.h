// DNNClassifier: a feed-forward classifier behind TensorFlow's Estimator interface
// (tf.estimator.DNNClassifier): construct it from feature columns and layer sizes,
// then Train, Evaluate and Predict with input functions that return datasets.
//
//   DNNClassifierOptions options;
//   options.feature_columns = NumericColumns(train.feature_names);
//   options.hidden_units = {10, 10};
//   options.n_classes = 3;
//   options.session_factory = [](const Graph* g) { return NewSession(g, SessionOptions()); };
//   AF_ASSIGN_OR_RETURN(auto classifier, DNNClassifier::Create(options));
//   AF_RETURN_IF_ERROR(classifier->Train(train_input_fn, /*steps=*/1000).status());
//   AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(test_input_fn));
//
// The model: features [batch, F] -> input layer (feature_columns.h: z-scores for
// normalized columns) -> one dense layer per hidden_units entry, each
// activation(x W + b) -> logits [batch, n_classes] = x W + b. Training minimizes the
// mean over the batch of the sparse softmax cross-entropy. Weights start from a
// truncated normal with Glorot's stddev sqrt(2 / (fan_in + fan_out)), each layer with
// its own seed derived from options.seed; biases start at 0. Given the same options,
// data and input order, two classifiers train to bit-identical weights.
//
// Input functions return a dataset whose elements are (features float32 [batch, F],
// labels int32 [batch]) (Batch already applied); Predict ignores a labels component
// and accepts features alone.
//
// Model directory (options.model_dir): created at Create if needed. When it holds a
// checkpoint, Create restores the latest one (training goes on from its global step)
// after checking that its model.json describes the same model; otherwise variables
// start from their initializers. Train ends by saving a checkpoint at the global
// step and writing model.json (model_spec.h), so that Load(model_dir) can predict.
//
// Thread safety: one thread at a time per classifier.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_DNN_CLASSIFIER_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_DNN_CLASSIFIER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/status.h"
#include "kernels/default_learning_rate.h"
#include "kernels/session.h"
#include "training/data/dataset.h"
#include "training/estimators/feature_columns.h"
#include "training/estimators/model_spec.h"
#include "training/optimizers/optimizer.h"

namespace actorflow {

class Saver;
struct DNNModel;
struct PipelinedMlp;

// Opens the session that runs a classifier's graph (e.g. NewSession with target ""
// for the actor runtime). The graph outlives the session.
using SessionFactory = std::function<StatusOr<std::unique_ptr<Session>>(const Graph* graph)>;
// Makes the optimizer; called once, while the graph is built.
using OptimizerFactory = std::function<StatusOr<std::unique_ptr<Optimizer>>()>;
// Returns the dataset of one Train/Evaluate/Predict call (see the top of this file).
using InputFn = std::function<StatusOr<std::shared_ptr<const Dataset>>()>;

struct DNNClassifierOptions {
  // Column i of the features matrix is feature_columns[i]. At least one.
  std::vector<NumericColumn> feature_columns;
  // Units of each hidden layer, input side first; at least one layer, each >= 1.
  std::vector<int64_t> hidden_units;
  // Labels are in [0, n_classes); >= 2.
  int64_t n_classes = 2;
  // MakeOptimizer's name ("sgd", "momentum", "adam", "adagrad") and learning rate,
  // used unless optimizer_factory is set.
  std::string optimizer = "adam";
  double learning_rate = kDefaultLearningRate;
  // Applied to the optimizer (MakeOptimizer's or optimizer_factory's) when enabled:
  // the rate decays with the global step (Optimizer::SetLearningRateDecay).
  LearningRateDecay learning_rate_decay;
  OptimizerFactory optimizer_factory;
  // Of the hidden layers: "relu", "tanh" or "sigmoid".
  std::string activation = "relu";
  // Seeds the weight initializers.
  uint64_t seed = 0;
  // Empty: no checkpoints. See the top of this file.
  std::string model_dir;
  // The label column's name, recorded in model.json for tools that read files.
  std::string label_column = "label";
  // Required.
  SessionFactory session_factory;
  // RunOptions::timeout_in_ms of every step; 0 = no deadline.
  int64_t timeout_in_ms = 0;
  // The network and how it is cut over devices (training/estimators/model_parallel.h): model
  // "mlp" (the dense layers above), "cnn" or "rnn" (hidden_units are then the cnn
  // head's hidden layers, or the rnn's units per layer); split "none", "layer",
  // "vertical" or "towers".
  std::string model = "mlp";
  std::string split = "none";
  // The devices of the parts, in order; empty: nothing placed (the session's default).
  std::vector<std::string> devices;
  // When not empty, the devices that exist: every entry of `devices` must be one.
  std::vector<std::string> available_devices;
  // Pipeline parallelism (training/estimators/pipeline.h), for model "mlp" with split "layer"
  // only: when > 0, Train cuts each batch into this many micro-batches that flow
  // through the stages on `devices` in `pipeline_schedule` order ("gpipe" or
  // "1f1b"), training the model's own variables, so checkpoints, Evaluate and
  // Predict are as without it.
  int pipeline_micro_batches = 0;
  std::string pipeline_schedule = "1f1b";
  // Train fully traces a steady-state step (the third of each call, or its last when
  // it runs fewer) into TrainResult::traced_step.
  bool trace_step = false;
};

// One training step's outcome, for progress reports.
struct TrainProgress {
  int64_t global_step = 0;  // after the step
  int64_t step = 0;         // steps run by this Train call, this one included
  double loss = 0.0;        // the batch's mean loss, before the step's update
};
using ProgressFn = std::function<void(const TrainProgress&)>;

struct TrainResult {
  int64_t global_step = 0;
  int64_t steps = 0;       // steps run by this call
  double last_loss = 0.0;  // of the last step (0 when no step ran)
  // What the first step of this call moved between devices (RunMetadata::transfers):
  // every step moves the same tensors, a shorter last batch fewer bytes.
  std::vector<CrossDeviceTransfer> step_transfers;
  // With DNNClassifierOptions::trace_step: the traced step's RunMetadata (node stats
  // per device, Send/Recv, clock offsets; kernels/chrome_trace.h writes it).
  RunMetadata traced_step;
  // Wall time of this call, and the part of it spent waiting for the next batch of
  // the input (the progress callback's time excluded from both).
  double seconds = 0.0;
  double input_seconds = 0.0;
};

struct EvalResult {
  double accuracy = 0.0;  // correct / num_examples
  double loss = 0.0;      // the mean cross-entropy over every example
  int64_t global_step = 0;
  int64_t num_examples = 0;
};

struct Prediction {
  int64_t class_id = 0;              // argmax of the probabilities (first on ties)
  std::vector<float> probabilities;  // [n_classes], the softmax of the logits
};

class DNNClassifier {
 public:
  ~DNNClassifier();
  DNNClassifier(const DNNClassifier&) = delete;
  DNNClassifier& operator=(const DNNClassifier&) = delete;

  // Builds the graph, opens the session and initializes or restores the variables.
  // Errors: InvalidArgument from ValidateModelSpec (no or zero hidden units,
  // n_classes < 2, bad columns, unknown activation), MakeOptimizer's (unknown
  // optimizer, bad learning rate), a missing session_factory; for model_dir,
  // Unavailable naming a directory that cannot be created or written, and
  // FailedPrecondition when its model.json describes another model; the session's
  // and the checkpoint's errors.
  static StatusOr<std::unique_ptr<DNNClassifier>> Create(DNNClassifierOptions options);

  // A classifier for prediction and evaluation from a model directory written by
  // Train: the model from its model.json, the variables from its latest checkpoint.
  // NotFound when the directory has no model.json or no checkpoint.
  static StatusOr<std::unique_ptr<DNNClassifier>> Load(const std::string& model_dir,
                                                       SessionFactory session_factory,
                                                       int64_t timeout_in_ms = 0);

  // Runs training steps, one per batch of input_fn's dataset, until `steps` steps
  // ran or the dataset ends (steps < 0: until it ends). `progress`, when set, is
  // called after each step, on the calling thread, between steps: it may call
  // Evaluate (e.g. at the end of each epoch). Errors: input_fn's and the dataset's, InvalidArgument for
  // a batch of the wrong dtype or shape or a label outside [0, n_classes) (naming
  // the label, the batch and the example in it), step errors, and with a model_dir
  // the checkpoint's and model.json's. Steps that ran before an error stay applied.
  StatusOr<TrainResult> Train(const InputFn& input_fn, int64_t steps,
                              const ProgressFn& progress = nullptr);

  // Accuracy and mean loss over every example of input_fn's dataset (one pass).
  // Errors as Train; InvalidArgument for a dataset with no example.
  StatusOr<EvalResult> Evaluate(const InputFn& input_fn);

  // One prediction per example of input_fn's dataset, in order.
  StatusOr<std::vector<Prediction>> Predict(const InputFn& input_fn);

  // The global step's current value.
  StatusOr<int64_t> GlobalStep();

  const DNNModelSpec& spec() const { return spec_; }
  // The distinct devices the model's parts were put on, in order of first use.
  const std::vector<std::string>& devices() const { return devices_; }
  const DNNClassifierOptions& options() const { return options_; }
  // The graph (for inspection; the classifier owns it).
  const Graph& graph() const { return *graph_; }

 private:
  DNNClassifier(DNNClassifierOptions options, DNNModelSpec spec);

  // Create and Load: a classifier with a train op (for_training) or without one
  // (prediction only: no optimizer, nothing written to the model directory).
  static StatusOr<std::unique_ptr<DNNClassifier>> CreateInternal(DNNClassifierOptions options,
                                                                 bool for_training);
  Status Build(bool for_training);
  // Restores the latest checkpoint of the model directory, else runs the
  // initializers (or fails with NotFound when require_checkpoint).
  Status InitializeOrRestore(bool require_checkpoint);
  // The pipelined mlp of options_.pipeline_micro_batches over the model's variables.
  StatusOr<PipelinedMlp> BuildPipeline(const DNNModel& model);
  // Checks a batch and makes the feeds. with_labels: the labels are checked and fed.
  StatusOr<FeedList> MakeFeeds(const Element& batch, int64_t batch_index, bool with_labels) const;
  // trace: RunOptions::kFullTrace (with a `metadata` to fill).
  Status RunStep(const FeedList& feeds, const std::vector<std::string>& fetches,
                 const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                 RunMetadata* metadata = nullptr, bool trace = false);

  DNNClassifierOptions options_;
  DNNModelSpec spec_;
  Scope scope_;
  std::shared_ptr<Graph> graph_;
  std::vector<std::string> devices_;
  Output global_step_;      // int64 [], the Variable
  bool trainable_ = false;  // the graph has the train op
  // The loss Train fetches: the model's, or the pipelined one's.
  std::string train_loss_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Saver> saver_;
  // The global step of the newest checkpoint written or restored; -1: none.
  int64_t checkpoint_step_ = -1;
  std::unique_ptr<Session> session_;  // declared last: closed before the graph goes
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_DNN_CLASSIFIER_H_
