#include "training/distributed/worker_model.h"

#include <algorithm>
#include <utility>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "training/checkpoint/checkpoint.h"
#include "training/data/data_shard.h"
#include "training/estimators/layer_classes.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

constexpr char kInit[] = "init";
constexpr char kAssignAll[] = "pulled/assign_all";
constexpr char kGlobalStepValue[] = "pulled/global_step/value";

std::string PulledValueName(const std::string& variable) { return "pulled/" + variable + "/value"; }

}  // namespace

WorkerModel::WorkerModel(DNNModelSpec spec, int64_t timeout_ms)
    : spec_(std::move(spec)), timeout_ms_(timeout_ms) {}

WorkerModel::~WorkerModel() {
  if (session_ != nullptr) session_->Close();
}

StatusOr<std::unique_ptr<WorkerModel>> WorkerModel::Create(const DNNModelSpec& spec, uint64_t seed,
                                                           const SessionFactory& session_factory,
                                                           int64_t timeout_ms, int replica) {
  if (!session_factory) return InvalidArgument("WorkerModel: no session_factory given");
  std::unique_ptr<WorkerModel> model(new WorkerModel(spec, timeout_ms));
  AF_RETURN_IF_ERROR(model->Build(seed, replica));
  AF_ASSIGN_OR_RETURN(model->session_, session_factory(model->graph_.get()));
  if (model->session_ == nullptr) {
    return Internal("WorkerModel: the session factory returned no session");
  }
  // A model with local state (batch normalization's moving averages, which stay on
  // the worker) needs it initialized on every worker, not only the chief.
  if (!model->update_op_names_.empty()) AF_RETURN_IF_ERROR(model->Initialize());
  return model;
}

Status WorkerModel::Build(uint64_t seed, int replica) {
  Scope root = Scope::NewRootScope();
  graph_ = root.graph_ptr();
  AF_ASSIGN_OR_RETURN(model_, BuildDNNModel(root, spec_, seed, {}, {}, replica));
  AF_ASSIGN_OR_RETURN(std::vector<Output> grads,
                      Gradients(root, {model_.loss}, model_.variables));
  for (size_t i = 0; i < model_.variables.size(); ++i) {
    const Output& var = model_.variables[i];
    if (!grads[i].valid()) {
      return Internal("the loss does not depend on variable '" + var.node->name() + "'");
    }
    variable_names_.push_back(var.node->name());
    variable_outputs_.push_back(var.name());
    gradient_names_.push_back(grads[i].name());
  }
  for (const Output& update : UpdateOps(*graph_)) update_op_names_.push_back(update.node->name());
  AF_ASSIGN_OR_RETURN(Output global_step, CreateGlobalStep(root));
  GlobalVariablesInitializer(root.WithOpName(kInit));

  // The chief's way to put pulled values into the local variables before a Save.
  std::vector<Output> assigns;
  for (const Output& var : model_.variables) {
    Scope scope = root.NewSubScope("pulled").NewSubScope(var.node->name());
    Output value = Placeholder(scope.WithOpName("value"), var.dtype(), var.shape());
    assigns.push_back(Assign(scope.WithOpName("Assign"), var, value));
  }
  Scope step_scope = root.NewSubScope("pulled").NewSubScope("global_step");
  Output step_value = Placeholder(step_scope.WithOpName("value"), DType::kInt64, Shape{});
  assigns.push_back(Assign(step_scope.WithOpName("Assign"), global_step, step_value));
  NoOp(root.WithOpName(kAssignAll).WithControlDependencies(assigns));
  if (!root.ok()) return root.status();
  // The model's variables and the global step: what DNNClassifier::Load restores.
  AF_ASSIGN_OR_RETURN(saver_, Saver::Create(graph_.get(), SaverOptions()));
  return Status::OK();
}

Status WorkerModel::Run(const FeedList& feeds, const std::vector<std::string>& fetches,
                        const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
  RunOptions options;
  options.timeout_in_ms = timeout_ms_;
  std::vector<Tensor> unused;
  return session_->Run(options, feeds, fetches, targets, outputs ? outputs : &unused, nullptr);
}

StatusOr<FeedList> WorkerModel::ParameterFeeds(const ParameterMap& parameters) const {
  FeedList feeds;
  feeds.reserve(variable_names_.size() + 2);
  for (size_t i = 0; i < variable_names_.size(); ++i) {
    auto it = parameters.find(variable_names_[i]);
    if (it == parameters.end()) {
      return InvalidArgument("no value for variable '" + variable_names_[i] +
                             "' among the pulled parameters");
    }
    feeds.emplace_back(variable_outputs_[i], it->second);
  }
  return feeds;
}

Status WorkerModel::Initialize() {
  if (initialized_) return Status::OK();
  AF_RETURN_IF_ERROR(Run({}, {}, {kInit}, nullptr));
  initialized_ = true;
  return Status::OK();
}

StatusOr<ParameterMap> WorkerModel::InitialValues() {
  AF_RETURN_IF_ERROR(Initialize());
  std::vector<Tensor> values;
  AF_RETURN_IF_ERROR(Run({}, variable_outputs_, {}, &values));
  ParameterMap initial;
  for (size_t i = 0; i < variable_names_.size(); ++i) initial[variable_names_[i]] = values[i];
  return initial;
}

StatusOr<GradientStep> WorkerModel::ComputeGradients(const ParameterMap& parameters,
                                                     const Tensor& features,
                                                     const Tensor& labels) {
  AF_ASSIGN_OR_RETURN(FeedList feeds, ParameterFeeds(parameters));
  feeds.emplace_back(kDNNFeatures, features);
  feeds.emplace_back(kDNNLabels, labels);
  std::vector<std::string> fetches = {kDNNLoss};
  fetches.insert(fetches.end(), gradient_names_.begin(), gradient_names_.end());
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(Run(feeds, fetches, update_op_names_, &out));
  GradientStep step;
  step.loss = out[0].ElementAsDouble(0);
  for (size_t i = 0; i < variable_names_.size(); ++i) {
    step.gradients[variable_names_[i]] = std::move(out[i + 1]);
  }
  return step;
}

StatusOr<EvalResult> EvaluateInBatches(const Tensor& features, const Tensor& labels,
                                       int64_t batch_size, const EvalStep& run) {
  const int64_t n = labels.NumElements();
  if (n == 0) return InvalidArgument("Evaluate: the data set has no example");
  EvalResult result;
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    std::vector<int64_t> rows;
    for (int64_t r = begin; r < std::min(n, begin + batch_size); ++r) rows.push_back(r);
    Tensor y = GatherRows(labels, rows);
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(run({{kDNNFeatures, GatherRows(features, rows)}, {kDNNLabels, y}}, &out));
    const float* loss = out[0].data<float>();         // [b]
    const int64_t* classes = out[1].data<int64_t>();  // [b]
    for (size_t i = 0; i < rows.size(); ++i) {
      loss_sum += loss[i];
      if (classes[i] == y.data<int32_t>()[i]) ++correct;
    }
  }
  result.num_examples = n;
  result.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  result.loss = loss_sum / static_cast<double>(n);
  return result;
}

StatusOr<EvalResult> WorkerModel::Evaluate(const ParameterMap& parameters, const Tensor& features,
                                           const Tensor& labels, int64_t global_step,
                                           int64_t batch_size) {
  AF_ASSIGN_OR_RETURN(FeedList base, ParameterFeeds(parameters));
  AF_ASSIGN_OR_RETURN(
      EvalResult result,
      EvaluateInBatches(features, labels, batch_size,
                        [&](const FeedList& feeds, std::vector<Tensor>* out) {
                          FeedList all = base;
                          all.insert(all.end(), feeds.begin(), feeds.end());
                          return Run(all, {kDNNExampleLoss, kDNNClassIds}, {}, out);
                        }));
  result.global_step = global_step;
  return result;
}

StatusOr<std::string> WorkerModel::SaveCheckpoint(const ParameterMap& parameters,
                                                  int64_t global_step, const std::string& dir) {
  FeedList feeds;
  for (const std::string& name : variable_names_) {
    auto it = parameters.find(name);
    if (it == parameters.end()) {
      return InvalidArgument("no value for variable '" + name + "' to checkpoint");
    }
    feeds.emplace_back(PulledValueName(name), it->second);
  }
  feeds.emplace_back(kGlobalStepValue, Tensor::Scalar<int64_t>(global_step));
  AF_RETURN_IF_ERROR(Run(feeds, {}, {kAssignAll}, nullptr));
  AF_ASSIGN_OR_RETURN(std::string prefix, saver_->Save(session_.get(), dir, global_step));
  AF_RETURN_IF_ERROR(WriteModelSpec(dir, spec_));
  return prefix;
}

}  // namespace actorflow
