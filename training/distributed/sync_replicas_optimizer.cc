#include "training/distributed/sync_replicas_optimizer.h"

#include <utility>

#include "graph/gradients.h"
#include "graph/shape_ops.h"
#include "graph/sparse_ops.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

constexpr char kWhere[] = "SyncReplicasOptimizer: ";

// Where the ops on `var`'s state are built: its requested device, colocated with it
// (so a device function does not move them).
Scope Beside(const Scope& scope, const Output& var) {
  return scope.WithDevice(var.node->requested_device()).ColocateWith(var);
}

// int64 [n]: n tokens holding `step` (an int64 scalar).
Output Tokens(const Scope& scope, const Output& step, int64_t n) {
  return Tile(scope, ExpandDims(scope, step, 0), {n});
}

}  // namespace

SyncReplicasOptimizer::SyncReplicasOptimizer(Optimizer* optimizer, int replicas_to_aggregate,
                                             int total_num_replicas)
    : optimizer_(optimizer),
      replicas_to_aggregate_(replicas_to_aggregate),
      total_num_replicas_(total_num_replicas > 0 ? total_num_replicas : replicas_to_aggregate) {}

Status SyncReplicasOptimizer::CheckReplicas() const {
  if (optimizer_ == nullptr) return InvalidArgument(std::string(kWhere) + "no optimizer to wrap");
  if (replicas_to_aggregate_ < 1) {
    return InvalidArgument(std::string(kWhere) + "replicas_to_aggregate is " +
                           std::to_string(replicas_to_aggregate_) +
                           "; it must be at least 1 (the gradients averaged per step)");
  }
  if (replicas_to_aggregate_ > total_num_replicas_) {
    return InvalidArgument(std::string(kWhere) + "replicas_to_aggregate " +
                           std::to_string(replicas_to_aggregate_) + " is above total_num_replicas " +
                           std::to_string(total_num_replicas_) +
                           " (the workers sending gradients): each worker sends one gradient "
                           "per step, so a step would wait for ever");
  }
  if (built_) {
    return InvalidArgument(std::string(kWhere) +
                           "this optimizer already built a train op; make one per graph");
  }
  return Status::OK();
}

StatusOr<Output> SyncReplicasOptimizer::Minimize(const Scope& scope, Output loss,
                                                 Output global_step, std::vector<Output> var_list) {
  AF_RETURN_IF_ERROR(CheckReplicas());
  AF_ASSIGN_OR_RETURN(Optimizer::GradientsAndVars gradients,
                      optimizer_->ComputeGradients(scope, loss, std::move(var_list)));
  // Accumulators sum dense tensors: a table's row gradients are made dense.
  Optimizer::GradsAndVars pairs;
  for (const auto& [grad, var] : gradients) {
    pairs.emplace_back(grad.sparse() ? DenseFromSlices(scope, grad.slices) : grad.dense, var);
  }
  return ApplyGradients(scope, pairs, global_step);
}

StatusOr<Output> SyncReplicasOptimizer::ApplyGradients(const Scope& scope,
                                                       const Optimizer::GradsAndVars& grads_and_vars,
                                                       Output global_step) {
  AF_RETURN_IF_ERROR(CheckReplicas());
  if (!scope.ok()) return scope.status();
  if (!global_step.valid()) {
    return InvalidArgument(std::string(kWhere) +
                           "needs a global step (CreateGlobalStep): the chief's updates count "
                           "it and the tokens carry it");
  }
  if (global_step.dtype() != DType::kInt64) {
    return InvalidArgument(std::string(kWhere) + "the global step '" + global_step.name() +
                           "' is " + DTypeName(global_step.dtype()) + ", expected int64");
  }
  if (grads_and_vars.empty() || !grads_and_vars.front().first.valid()) {
    return InvalidArgument(std::string(kWhere) + "no (gradient, variable) pairs to apply");
  }
  const Scope sync = scope.NewSubScope("sync_replicas");
  const std::string worker_device = grads_and_vars.front().first.node->requested_device();

  // The worker's local step: on the worker's own device, whatever device function
  // the scope has (a Variable would otherwise go to a ps task and be shared).
  AF_ASSIGN_OR_RETURN(Output local_step,
                      CreateLocalVariable(sync.WithDevice(worker_device), kLocalStepName,
                                          Tensor::Scalar<int64_t>(0)));
  const Scope beside_step = Beside(sync, global_step);
  Output step_value = Identity(beside_step, global_step);
  Output local_step_init =
      Assign(sync.WithDevice(worker_device).WithOpName("local_step_init"), local_step, step_value);
  if (!scope.ok()) return scope.status();
  local_step_init_op_ = local_step_init.node->name();

  // Accumulators beside their variables; the worker's applies; the chief's takes.
  Optimizer::GradsAndVars aggregated;
  std::vector<Output> applies, set_steps, dropped;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!grad.valid() || !var.valid()) {
      return InvalidArgument(std::string(kWhere) + "an invalid gradient or variable");
    }
    const Scope at_var = Beside(sync.NewSubScope(var.node->name()), var);
    Accumulator acc = ConditionalAccumulator(at_var, var.dtype(), var.shape(),
                                             var.node->name() + kAccumulatorSuffix);
    applies.push_back(Output(AccumulatorApplyGradient(at_var, acc, local_step, grad)));
    aggregated.emplace_back(AccumulatorTakeGradient(at_var, acc, replicas_to_aggregate_), var);
    set_steps.push_back(Output(AccumulatorSetGlobalStep(at_var, acc, step_value)));
    dropped.push_back(AccumulatorNumDropped(at_var, acc));
    if (!scope.ok()) return scope.status();
  }
  Output dropped_sum = dropped.front();
  for (size_t i = 1; i < dropped.size(); ++i) dropped_sum = Add(sync, dropped_sum, dropped[i]);
  Output dropped_total = Identity(sync.WithOpName("dropped_gradients"), dropped_sum);
  const Node* chief_init = NoOp(sync.WithOpName("chief_init").WithControlDependencies(set_steps));
  if (!scope.ok()) return scope.status();
  dropped_gradients_ = dropped_total.node->name();
  chief_init_op_ = chief_init->name();

  // Tokens: a worker goes on to its next step with the global step a token carries.
  token_queue_ = FIFOQueue(beside_step.WithOpName("sync_token_q"), {DType::kInt64}, {Shape{}},
                           /*capacity=*/-1, kTokenQueueName);
  std::vector<Output> token =
      QueueDequeue(beside_step.WithControlDependencies(applies), token_queue_);
  if (!scope.ok()) return scope.status();
  Output new_local_step = Assign(sync.WithDevice(worker_device), local_step, token.at(0));

  // The chief's sync op: apply the averages, then hand out the next step's tokens.
  AF_ASSIGN_OR_RETURN(Output update,
                      optimizer_->ApplyGradients(sync.NewSubScope("apply"), aggregated, global_step));
  const Scope after_update = beside_step.WithControlDependencies({update});
  Output next_step = Identity(after_update, global_step);
  Output tokens = Tokens(after_update, next_step, total_num_replicas_);
  const Node* sync_op = QueueEnqueueMany(after_update.WithOpName("sync_op"), token_queue_, {tokens});
  if (!scope.ok()) return scope.status();
  sync_op_ = sync_op->name();

  global_step_ = global_step;
  const Node* train = NoOp(scope.WithControlDependencies({new_local_step}));
  if (!scope.ok()) return scope.status();
  built_ = true;
  return Output(train);
}

StatusOr<std::string> SyncReplicasOptimizer::InitTokensOp(Graph* graph, int num_tokens) {
  if (!built_) return FailedPrecondition(std::string(kWhere) + "no train op was built yet");
  if (num_tokens < 1) {
    return InvalidArgument(std::string(kWhere) + "num_tokens " + std::to_string(num_tokens) +
                           " is below 1");
  }
  const Scope root = Scope::ForGraph(graph);
  const Scope beside_step = Beside(root.NewSubScope("sync_replicas"), global_step_);
  Output step_value = Identity(beside_step, global_step_);
  Output tokens = Tokens(beside_step, step_value, num_tokens);
  const Node* op = QueueEnqueueMany(beside_step.WithOpName("init_tokens"), token_queue_, {tokens});
  if (!root.ok()) return root.status();
  return op->name();
}

}  // namespace actorflow
