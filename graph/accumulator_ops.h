// TensorFlow 1's ConditionalAccumulator (dense): the aggregation point of synchronous
// replicas (SyncReplicasOptimizer). Ops and their attrs: graph/ops_accumulator.cc;
// the rules: kernels/accumulator_state.h.
//
// An accumulator lives in the task that runs its node, like a queue (graph/ops.h):
// with a shared_name every session and graph that names it on that task reaches the
// same one; without one it is the session's own. Every function below places its op
// on the accumulator node's device (its requested device, colocated with it) with a
// control dependency on the node, so running any op creates the accumulator on first
// use. The ops have CPU kernels only (they run inside the actor runtime; a session
// without it, DirectSession, answers FailedPrecondition): an accumulator pinned to
// a ps task with a GPU runs on that task's CPU.
//
// It holds a sum of gradients of one dtype (float32 or float64) and shape (unknown
// dims are fixed by the first gradient applied), their count, a global step (starts
// at 0) and a count of stale gradients dropped.
//   - ApplyGradient(local_step, g): a gradient whose local_step is below the global
//     step is stale and dropped (counted, no error); otherwise it is added. Never
//     waits. InvalidArgument naming the accumulator for a wrong dtype or shape.
//   - TakeGradient(n): waits (in the accumulator's actor, never in a thread) until n
//     >= 1 gradients are summed, answers their average, resets the sum and adds 1 to
//     the global step. Waiting takes are served in arrival order. timeout_ms > 0
//     bounds one take's wait (DeadlineExceeded, the accumulator unchanged), 0 =
//     SessionOptions::operation_timeout_in_ms; a take whose step is aborted is
//     withdrawn. An average answered to a step aborted before it arrived goes back
//     while nothing else changed the accumulator, else it is lost (counted).
//   - SetGlobalStep(s): sets the global step, even to a lower one (TensorFlow does
//     too, logging a warning; nothing is logged here).
// Errors on bad input come back as a Status naming the node; dtypes and known shapes
// are checked while building (the scope's status), the rest when the op runs.
//
//   Accumulator acc = ConditionalAccumulator(root.WithDevice("/job:ps/task:0"),
//                                            DType::kFloat32, Shape{2, 3}, "grad_w");
//   AccumulatorApplyGradient(root, acc, local_step, grad_w);   // int64 [], float32 [2,3]
//   Output avg = AccumulatorTakeGradient(root, acc, 2);        // float32 [2,3]
#ifndef ACTORFLOW_GRAPH_ACCUMULATOR_OPS_H_
#define ACTORFLOW_GRAPH_ACCUMULATOR_OPS_H_

#include <cstdint>
#include <string>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/shape.h"
#include "graph/types.h"

namespace actorflow {

struct Accumulator {
  const Node* node = nullptr;  // the ConditionalAccumulator node
  std::string container;
  std::string shared_name;  // the node's name when it was built without one
  DType dtype = DType::kFloat32;
  Shape shape;  // may be unknown
  bool valid() const { return node != nullptr; }
};

// dtype: float32 or float64. shared_name "" = the session's own accumulator, named by
// the node's name within the session. An invalid Accumulator (and the scope's
// error) when the node cannot be built.
Accumulator ConditionalAccumulator(const Scope& scope, DType dtype, const Shape& shape,
                                   const std::string& shared_name = "",
                                   const std::string& container = "");
// local_step: int64 [] (an integer literal is made int64); gradient: the accumulator's
// dtype and shape.
const Node* AccumulatorApplyGradient(const Scope& scope, const Accumulator& accumulator,
                                     const Input& local_step, const Input& gradient);
// num_required: int32 [] (>= 1; an int64 literal that fits is made int32). The
// average: the accumulator's dtype and shape.
Output AccumulatorTakeGradient(const Scope& scope, const Accumulator& accumulator,
                               const Input& num_required, int64_t timeout_ms = 0);
// new_global_step: int64 [] (an integer literal is made int64).
const Node* AccumulatorSetGlobalStep(const Scope& scope, const Accumulator& accumulator,
                                     const Input& new_global_step);
// int32 []: the gradients summed since the last take.
Output AccumulatorNumAccumulated(const Scope& scope, const Accumulator& accumulator);
// int64 []: the stale gradients dropped since the accumulator was created.
Output AccumulatorNumDropped(const Scope& scope, const Accumulator& accumulator);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_ACCUMULATOR_OPS_H_
