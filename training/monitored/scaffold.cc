#include "training/monitored/scaffold.h"

#include <set>
#include <utility>

#include "graph/ops.h"
#include "graph/scope.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

// The node `name` if it exists with op `op` and the single ref input `variable`.
bool IsProbe(const Graph& graph, const std::string& name, const char* op, const Node* variable) {
  const Node* node = graph.FindNode(name);
  return node != nullptr && node->op() == op && node->num_inputs() == 1 &&
         node->input(0).node == variable;
}

// The NoOp `name` if it exists and depends on exactly the nodes of collection `key`.
bool IsInitializer(const Graph& graph, const std::string& name, const std::string& key) {
  const Node* node = graph.FindNode(name);
  if (node == nullptr || node->op() != "NoOp" || node->num_inputs() != 0) return false;
  std::set<std::string> deps;
  for (const Node* dep : node->control_inputs()) deps.insert(dep->name());
  const std::vector<std::string>& wanted = graph.GetCollection(key);
  return deps == std::set<std::string>(wanted.begin(), wanted.end());
}

// `op_name` of an existing node, else builds one with `build` named "scaffold/<base>"
// made unique.
Status DefaultInitOp(Graph* graph, const std::string& base, const std::string& key,
                     Output (*build)(const Scope&), std::string* op_name) {
  const std::string reused = "scaffold/" + base;
  if (IsInitializer(*graph, reused, key)) {
    *op_name = reused;
    return Status::OK();
  }
  Scope root = Scope::ForGraph(graph);
  Output op = build(root.WithOpName(graph->UniqueName(reused)));
  if (!root.ok()) return root.status().WithContext("Scaffold: building the default " + base);
  *op_name = op.node->name();
  return Status::OK();
}

Status CheckNode(const Graph& graph, const std::string& name, const char* what) {
  if (graph.FindNode(name) != nullptr) return Status::OK();
  return NotFound(std::string("Scaffold: the ") + what + " '" + name +
                  "' is not a node of the graph");
}

}  // namespace

std::string QuotedNames(const std::vector<std::string>& names, size_t max_names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max_names; ++i) {
    out += (i == 0 ? "'" : ", '") + names[i] + "'";
  }
  if (names.size() > max_names) {
    out += " and " + std::to_string(names.size() - max_names) + " more";
  }
  return out;
}

Status Scaffold::Finalize(Graph* graph) {
  if (graph == nullptr) return InvalidArgument("Scaffold::Finalize: no graph");
  if (graph_ != nullptr && graph_ != graph) {
    return FailedPrecondition(
        "Scaffold::Finalize: this scaffold was finalized for another graph; use a new Scaffold "
        "per graph");
  }
  if (init_op_.empty() || default_init_op_) {
    default_init_op_ = true;
    AF_RETURN_IF_ERROR(DefaultInitOp(graph, "init", kInitializersCollection,
                                     &GlobalVariablesInitializer, &init_op_));
  }
  AF_RETURN_IF_ERROR(CheckNode(*graph, init_op_, "init op"));
  if (local_init_op_.empty() || default_local_init_op_) {
    default_local_init_op_ = true;
    AF_RETURN_IF_ERROR(DefaultInitOp(graph, "local_init", kLocalInitializersCollection,
                                     &LocalVariablesInitializer, &local_init_op_));
  }
  AF_RETURN_IF_ERROR(CheckNode(*graph, local_init_op_, "local init op"));
  if (!ready_variables_given_) ready_variables_ = graph->GetCollection(kVariablesCollection);
  AF_RETURN_IF_ERROR(BuildReadyProbes(graph));
  if (saver_ == nullptr && !graph->GetCollection(kVariablesCollection).empty()) {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Saver> saver, Saver::Create(graph, SaverOptions()));
    saver_ = std::move(saver);
  }
  graph_ = graph;
  return Status::OK();
}

Status Scaffold::BuildReadyProbes(Graph* graph) {
  probes_.clear();
  Scope root = Scope::ForGraph(graph);
  for (const std::string& name : ready_variables_) {
    const Node* variable = graph->FindNode(name);
    if (variable == nullptr) {
      return NotFound("Scaffold: the ready variable '" + name + "' is not a node of the graph");
    }
    if (variable->op() != "Variable") {
      return InvalidArgument("Scaffold: the ready variable '" + name + "' is a " + variable->op() +
                             ", not a Variable");
    }
    ReadyProbe probe{name, "scaffold/" + name + "/is_initialized", "scaffold/" + name + "/shape"};
    // Both are placed with the variable (a ref input), wherever it is; they name its
    // requested device too, for whoever reads the graph.
    const Scope beside = root.WithDevice(variable->requested_device());
    if (!IsProbe(*graph, probe.is_initialized, "IsVariableInitialized", variable)) {
      Output ready = IsVariableInitialized(
          beside.WithOpName(graph->UniqueName(probe.is_initialized)), Output(variable));
      if (!root.ok()) return root.status().WithContext("Scaffold: the ready check");
      probe.is_initialized = ready.node->name();
    }
    if (!IsProbe(*graph, probe.shape, "VariableShape", variable)) {
      Output shape =
          VariableShape(beside.WithOpName(graph->UniqueName(probe.shape)), Output(variable));
      if (!root.ok()) return root.status().WithContext("Scaffold: the ready check");
      probe.shape = shape.node->name();
    }
    probes_.push_back(std::move(probe));
  }
  return Status::OK();
}

StatusOr<std::vector<std::string>> Scaffold::UninitializedVariables(
    Session* session, const RunOptions& options) const {
  if (graph_ == nullptr) return FailedPrecondition("Scaffold: Finalize it first");
  std::vector<std::string> missing;
  if (probes_.empty()) return missing;
  std::vector<std::string> fetches;
  for (const ReadyProbe& p : probes_) fetches.push_back(p.is_initialized);
  std::vector<Tensor> ready;
  AF_RETURN_IF_ERROR(session->Run(options, {}, fetches, {}, &ready, nullptr));
  for (size_t i = 0; i < probes_.size(); ++i) {
    if (!ready[i].data<bool>()[0]) missing.push_back(probes_[i].variable);
  }
  return missing;
}

Status Scaffold::CheckLiveVariablesMatchGraph(Session* session, const RunOptions& options) const {
  if (graph_ == nullptr) return FailedPrecondition("Scaffold: Finalize it first");
  if (probes_.empty()) return Status::OK();
  std::vector<std::string> fetches;
  for (const ReadyProbe& p : probes_) fetches.push_back(p.shape);
  std::vector<Tensor> shapes;
  Status s = session->Run(options, {}, fetches, {}, &shapes, nullptr);
  if (!s.ok()) return s.WithContext("checking that the live variables match this graph");
  std::vector<std::string> differ;
  for (size_t i = 0; i < probes_.size(); ++i) {
    const Node* variable = graph_->FindNode(probes_[i].variable);
    const Shape& declared = variable->output_shape(0);
    const Tensor& live = shapes[i];
    std::vector<int64_t> dims(live.data<int64_t>(), live.data<int64_t>() + live.NumElements());
    if (Shape(dims) == declared) continue;
    const std::string device =
        variable->requested_device().empty() ? "" : " on " + variable->requested_device();
    differ.push_back("'" + probes_[i].variable + "'" + device + " holds shape " +
                     Shape(dims).ToString() + ", this graph declares " + declared.ToString());
  }
  if (differ.empty()) return Status::OK();
  std::string list;
  for (const std::string& d : differ) list += (list.empty() ? "" : "; ") + d;
  return FailedPrecondition(
      "the live variables do not match this graph: " + list +
      ". This task's graph differs from the one that initialized them (the chief's, or an "
      "earlier run's on still-running ps tasks): build the same model on every task, or "
      "restart the ps tasks to start over");
}

StatusOr<std::vector<std::string>> Scaffold::InitializersOf(
    const std::vector<std::string>& variables) const {
  if (graph_ == nullptr) return FailedPrecondition("Scaffold: Finalize it first");
  std::vector<std::string> initializers;
  for (const std::string& variable : variables) {
    std::string found;
    for (const std::string& name : graph_->GetCollection(kInitializersCollection)) {
      const Node* init = graph_->FindNode(name);
      if (init != nullptr && init->num_inputs() > 0 && init->IsRefInput(0) &&
          init->input(0).node->name() == variable) {
        found = name;
        break;
      }
    }
    if (found.empty()) {
      return NotFound("variable '" + variable + "' has no initializer in the graph's " +
                      kInitializersCollection + " collection");
    }
    initializers.push_back(found);
  }
  return initializers;
}

}  // namespace actorflow
