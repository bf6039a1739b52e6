#include "training/optimizers/variables.h"

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops.h"

namespace actorflow {
namespace {

// The collections a variable is recorded in.
struct VariableCollections {
  const char* variables;
  const char* initializers;
  bool trainable;
};

// A Variable `name` with its initializer "<name>/Assign", recorded in `collections`.
StatusOr<Output> AddVariable(const Scope& scope, const std::string& name,
                             const Input& initial_value, const VariableCollections& collections) {
  if (!scope.ok()) return scope.status();
  if (name.empty()) return InvalidArgument("CreateVariable: the variable name is empty");
  // The dtype and shape come from the initial value; a literal's are known before
  // its Const exists, so that a rejected variable leaves no node behind.
  DType dtype;
  Shape shape;
  if (initial_value.literal()) {
    dtype = initial_value.literal()->dtype();
    shape = initial_value.literal()->shape();
  } else {
    const Output& value = initial_value.output();
    if (!value.valid()) {
      return InvalidArgument("the initial value of variable '" + name +
                             "' is an invalid Output (from an op that failed?)");
    }
    dtype = value.dtype();
    shape = value.shape();
  }
  if (!shape.IsFullyDefined()) {
    return InvalidArgument("the initial value of variable '" + name + "' has shape " +
                           shape.ToString() +
                           ": a variable needs a fully defined shape (give the value one, "
                           "e.g. with Reshape by a constant shape)");
  }
  Output var = Variable(scope.WithOpName(name), shape, dtype);
  if (!scope.ok()) return scope.status();
  // "<name>/Const" for a literal, "<name>/Assign": the initializer.
  Scope init_scope = scope.NewSubScope(name);
  Output assign = Assign(init_scope.WithOpName("Assign"), var, init_scope.AsOutput(initial_value));
  if (!scope.ok()) return scope.status();

  Graph* graph = scope.graph();
  graph->AddToCollection(collections.variables, var.node->name());
  if (collections.trainable) {
    graph->AddToCollection(kTrainableVariablesCollection, var.node->name());
  }
  graph->AddToCollection(collections.initializers, assign.node->name());
  return var;
}

// A NoOp depending on every node of the collection `key`.
Output InitializerOf(const Scope& scope, const std::string& key, const char* what) {
  if (!scope.ok()) return Output();
  const Graph& graph = *scope.graph();
  std::vector<Output> initializers;
  for (const std::string& name : graph.GetCollection(key)) {
    const Node* node = graph.FindNode(name);
    if (node == nullptr) {
      scope.UpdateStatus(NotFound(std::string("the ") + what + " collection names '" + name +
                                  "', which is not a node of the graph"));
      return Output();
    }
    initializers.push_back(Output(node));
  }
  return Output(NoOp(scope.WithControlDependencies(initializers)));
}

}  // namespace

StatusOr<Output> CreateVariable(const Scope& scope, const std::string& name,
                                const Input& initial_value, bool trainable) {
  return AddVariable(scope, name, initial_value,
                     {kVariablesCollection, kInitializersCollection, trainable});
}

StatusOr<Output> CreateLocalVariable(const Scope& scope, const std::string& name,
                                     const Input& initial_value) {
  return AddVariable(scope, name, initial_value,
                     {kLocalVariablesCollection, kLocalInitializersCollection,
                      /*trainable=*/false});
}

Output GlobalVariablesInitializer(const Scope& scope) {
  return InitializerOf(scope, kInitializersCollection, "initializers");
}

Output LocalVariablesInitializer(const Scope& scope) {
  return InitializerOf(scope, kLocalInitializersCollection, "local initializers");
}

StatusOr<Output> CreateGlobalStep(const Scope& scope) {
  if (!scope.ok()) return scope.status();
  if (GetGlobalStep(*scope.graph()).ok()) {
    return AlreadyExists("the graph already has a global step '" +
                         scope.graph()->GetCollection(kGlobalStepCollection).front() + "'");
  }
  AF_ASSIGN_OR_RETURN(Output step, CreateVariable(scope, "global_step", Tensor::Scalar<int64_t>(0),
                                                  /*trainable=*/false));
  scope.graph()->AddToCollection(kGlobalStepCollection, step.node->name());
  return step;
}

StatusOr<Output> GetGlobalStep(const Graph& graph) {
  const std::vector<std::string>& names = graph.GetCollection(kGlobalStepCollection);
  if (names.empty()) return NotFound("the graph has no global step (use CreateGlobalStep)");
  const Node* node = graph.FindNode(names.front());
  if (node == nullptr) {
    return NotFound("the global step collection names '" + names.front() +
                    "', which is not a node of the graph");
  }
  return Output(node);
}

}  // namespace actorflow
