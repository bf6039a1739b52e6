// Variables with initializers, recorded in the graph's collections (TensorFlow 1.x's
// tf.Variable, global_variables_initializer and the global step), so that training
// code finds every variable, every trainable one and every initializer by name.
//
//   Scope root = Scope::NewRootScope();
//   auto w = CreateVariable(root, "w", TruncatedNormal(root, {784, 10}, DType::kFloat32, 1));
//   auto step = CreateGlobalStep(root);
//   auto init = GlobalVariablesInitializer(root.WithOpName("init"));
//   session->Run({}, {}, {"init"}, nullptr);   // every variable now has its value
//
// Collections (graph/graph.h): kVariablesCollection and kTrainableVariablesCollection
// list Variable node names; kInitializersCollection lists their "<name>/Assign" nodes;
// kGlobalStepCollection names the global step. Local variables (CreateLocalVariable)
// are listed in kLocalVariablesCollection and kLocalInitializersCollection only.
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_TRAINING_OPTIMIZERS_VARIABLES_H_
#define ACTORFLOW_TRAINING_OPTIMIZERS_VARIABLES_H_

#include <string>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/status.h"

namespace actorflow {

// Adds a Variable node `name` (under the scope's name scope) with the dtype and shape
// of `initial_value`, and its initializer "<name>/Assign" := initial_value. The
// initial value may be a literal, a Tensor or any Output with a fully defined shape
// (random ops included: the initializer draws when it runs). Records the variable in
// kVariablesCollection (and kTrainableVariablesCollection when `trainable`) and the
// Assign in kInitializersCollection. Returns the Variable's Output [initial shape].
// Errors: InvalidArgument for an empty name or an initial value whose shape is not
// fully defined; a builder error (e.g. a duplicate name) naming the node; the scope's
// first error when it had already failed.
StatusOr<Output> CreateVariable(const Scope& scope, const std::string& name,
                                const Input& initial_value, bool trainable = true);

// A NoOp (named by the scope: use scope.WithOpName("init")) with a control dependency
// on every initializer in kInitializersCollection; running it initializes every
// variable. Build it after all variables exist (later ones are not covered). On error
// returns an invalid Output and records the error in the scope.
Output GlobalVariablesInitializer(const Scope& scope);

// A local variable (TensorFlow's tf.local_variables): built as CreateVariable builds
// one (not trainable), but recorded in kLocalVariablesCollection with its initializer
// "<name>/Assign" in kLocalInitializersCollection, and in neither kVariablesCollection
// nor kInitializersCollection: GlobalVariablesInitializer, the Saver and a monitored
// session's ready check skip it; LocalVariablesInitializer initializes it (a
// MonitoredTrainingSession runs that on every task, chief or not, at each creation).
//
// Devices: the variable goes where the scope puts a Variable. Local state belongs on
// the task that uses it, so give the scope that task's device:
//   CreateLocalVariable(model.WithDevice("/job:worker/task:1"), "count", 0.0f)
// With a device function as well (placement/replica_device_setter.h), the scope's
// explicit device wins: a WithDevice naming a job other than the ps job keeps the
// variable (and its initializer) there, and it takes no turn of the ps strategy. A
// scope with a replica device setter and NO WithDevice (or one naming no job) puts
// the local variable on a ps task like any Variable (as TensorFlow does), where every
// worker building the same name would share it.
// Errors: CreateVariable's.
StatusOr<Output> CreateLocalVariable(const Scope& scope, const std::string& name,
                                     const Input& initial_value);

// A NoOp (named by the scope) with a control dependency on every initializer in
// kLocalInitializersCollection (a NoOp with no inputs when there is none). Build it
// after the local variables exist. On error returns an invalid Output and records
// the error in the scope.
Output LocalVariablesInitializer(const Scope& scope);

// The global step: a non-trainable int64 scalar variable "global_step" initialized to
// 0 and recorded in kGlobalStepCollection. AlreadyExists when the graph has one.
StatusOr<Output> CreateGlobalStep(const Scope& scope);

// The global step recorded in the graph's kGlobalStepCollection; NotFound if none.
StatusOr<Output> GetGlobalStep(const Graph& graph);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_OPTIMIZERS_VARIABLES_H_
