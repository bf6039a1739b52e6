// SyncReplicasOptimizer: TensorFlow 1.x's tf.train.SyncReplicasOptimizer, synchronous
// data parallelism for any graph a user builds with ReplicaDeviceSetter, between-graph
// (one graph and one session per worker task):
//
//   GradientDescentOptimizer sgd(0.1);
//   SyncReplicasOptimizer sync(&sgd, /*replicas_to_aggregate=*/2, /*total_num_replicas=*/2);
//   AF_ASSIGN_OR_RETURN(auto train_op, sync.Minimize(worker_scope, loss, global_step));
//   options.hooks.push_back(sync.MakeSessionRunHook(is_chief));
//   ... NewMonitoredTrainingSession(graph, target, options); run train_op until ShouldStop
//
// What the graph does (TensorFlow's design):
// - Beside each trainable variable (on its ps task, colocated) a ConditionalAccumulator
//   (graph/accumulator_ops.h) shared by every worker's graph under the shared name
//   "<var>/grad_accum".
// - The worker's train op computes the gradients, applies each to its accumulator
//   tagged with the worker's local step, then takes one token from the token queue (a
//   FIFOQueue beside the global step, shared name "sync_token_q") and makes the
//   token its new local step. A gradient whose local step is below its accumulator's
//   step is stale (it came from a worker that fell behind: a backup worker's) and is
//   dropped there, counted (dropped_gradients()).
// - The chief's sync op, run again and again by a thread of the chief's hook: takes
//   the average of replicas_to_aggregate gradients from every accumulator, applies
//   them with the wrapped optimizer (which increments the global step), then enqueues
//   total_num_replicas tokens holding the new global step, one per worker. With
//   total_num_replicas > replicas_to_aggregate the slowest workers are backups: their
//   gradients of a finished step are dropped.
// - The local step ("sync_rep_local_step", a local variable on the worker's device)
//   starts at the global step (local_step_init) on every worker; the chief also sets
//   every accumulator's step to the global step (chief_init) and enqueues
//   replicas_to_aggregate starting tokens (or the hook's num_tokens).
//
// A restarted chief against live ps tasks runs chief_init again: the accumulators
// follow the live global step (an aggregate a killed chief took but never applied is
// gone; the next workers' gradients replace it), so training goes on; it never goes
// back (MonitoredTrainingSession does not re-initialize live variables).
//
// Sparse gradients (embedding tables) are made dense before they are accumulated.
//
// Errors (InvalidArgument, from Minimize/ApplyGradients): replicas_to_aggregate < 1;
// total_num_replicas < 1; replicas_to_aggregate above total_num_replicas (each worker
// sends one gradient per token and total_num_replicas tokens come per step, so a step
// would wait for ever); no global step; a second build with the same object.
//
// Thread safety: as Scope (one building thread per graph). The hook is used by the
// monitored session that owns it.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_SYNC_REPLICAS_OPTIMIZER_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_SYNC_REPLICAS_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/accumulator_ops.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status.h"
#include "training/monitored/session_run_hook.h"
#include "training/optimizers/optimizer.h"

namespace actorflow {

class SyncReplicasOptimizer {
 public:
  // Shared names of the graph's shared resources: the token queue, and each
  // variable's accumulator ("<variable node>" + kAccumulatorSuffix).
  static constexpr char kTokenQueueName[] = "sync_token_q";
  static constexpr char kAccumulatorSuffix[] = "/grad_accum";
  static constexpr char kLocalStepName[] = "sync_rep_local_step";

  // `optimizer` applies the aggregated gradients and must outlive this object.
  // total_num_replicas <= 0 means replicas_to_aggregate (no backup workers).
  SyncReplicasOptimizer(Optimizer* optimizer, int replicas_to_aggregate,
                        int total_num_replicas = 0);
  SyncReplicasOptimizer(const SyncReplicasOptimizer&) = delete;
  SyncReplicasOptimizer& operator=(const SyncReplicasOptimizer&) = delete;

  // The worker's train op: the gradients of `loss` for var_list (default: every
  // trainable variable), then ApplyGradients. `global_step` must be valid.
  StatusOr<Output> Minimize(const Scope& scope, Output loss, Output global_step,
                            std::vector<Output> var_list = {});
  // Builds the accumulators, the worker's train op (returned, a NoOp named by the
  // scope), the chief's sync op, chief_init and local_step_init. The worker's
  // device (where the local step lives) is the first gradient's.
  StatusOr<Output> ApplyGradients(const Scope& scope, const Optimizer::GradsAndVars& grads_and_vars,
                                  Output global_step);

  // The hook a MonitoredTrainingSession runs on every worker. On all: local step :=
  // global step after the model is ready. On the chief also: chief_init, num_tokens
  // starting tokens (-1: replicas_to_aggregate; 0: none), and the thread that runs
  // the sync op until the session closes (an error of the sync op stops training,
  // named). At its end the chief prints how many stale gradients were dropped.
  // Precondition: Minimize or ApplyGradients succeeded.
  std::shared_ptr<SessionRunHook> MakeSessionRunHook(bool is_chief, int num_tokens = -1);

  // Built graph pieces (node names), for drivers that run them without the hook.
  const std::string& sync_op() const { return sync_op_; }
  const std::string& chief_init_op() const { return chief_init_op_; }
  const std::string& local_step_init_op() const { return local_step_init_op_; }
  // int64 []: the stale gradients dropped by every accumulator so far.
  const std::string& dropped_gradients() const { return dropped_gradients_; }
  // The token queue (int64 [] elements, one per worker and step, holding the global
  // step that the worker's next gradient is for).
  const Queue& token_queue() const { return token_queue_; }
  // Adds (to the graph of `global_step`) an op enqueuing `num_tokens` tokens that
  // hold the global step; returns its name. Precondition: built.
  StatusOr<std::string> InitTokensOp(Graph* graph, int num_tokens);

  int replicas_to_aggregate() const { return replicas_to_aggregate_; }
  int total_num_replicas() const { return total_num_replicas_; }

 private:
  Status CheckReplicas() const;

  Optimizer* optimizer_;
  int replicas_to_aggregate_;
  int total_num_replicas_;
  bool built_ = false;
  Output global_step_;
  Queue token_queue_;
  std::string sync_op_;
  std::string chief_init_op_;
  std::string local_step_init_op_;
  std::string dropped_gradients_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_SYNC_REPLICAS_OPTIMIZER_H_
