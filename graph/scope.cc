#include "graph/scope.h"

namespace actorflow {

Scope Scope::NewRootScope() {
  auto state = std::make_shared<State>();
  state->owned_graph = std::make_shared<Graph>();
  state->graph = state->owned_graph.get();
  return Scope(state);
}

Scope Scope::ForGraph(Graph* graph) {
  auto state = std::make_shared<State>();
  state->graph = graph;
  return Scope(state);
}

Scope Scope::NewSubScope(const std::string& name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (!name.empty()) s.name_prefix_ += name + "/";
  return s;
}

Scope Scope::WithOpName(const std::string& name) const {
  Scope s = *this;
  s.op_name_ = name;
  return s;
}

Scope Scope::WithDevice(const std::string& device) const {
  Scope s = *this;
  s.device_ = device;
  return s;
}

Scope Scope::WithControlDependencies(const std::vector<Output>& deps) const {
  Scope s = *this;
  for (const Output& d : deps) {
    if (d.valid()) s.control_deps_.push_back(d.node->name());
  }
  return s;
}

Scope Scope::ColocateWith(const Output& other) const {
  Scope s = *this;
  if (other.valid()) s.colocate_with_ = other.node->name();
  return s;
}

void Scope::UpdateStatus(const Status& s) const {
  if (state_->status.ok() && !s.ok()) state_->status = s;
}

std::string Scope::NodeName(const std::string& op) const {
  if (!op_name_.empty()) return name_prefix_ + op_name_;
  return graph()->UniqueName(name_prefix_ + op);
}

Output Scope::AsOutput(const Input& input) const {
  if (!input.literal()) return input.output();
  AttrMap attrs;
  attrs["value"] = *input.literal();
  Scope const_scope = *this;
  const_scope.op_name_.clear();
  const_scope.control_deps_.clear();
  return Output(const_scope.AddNode("Const", {}, std::move(attrs)), 0);
}

const Node* Scope::AddNode(const std::string& op, const std::vector<Input>& inputs,
                           AttrMap attrs) const {
  if (!ok()) return nullptr;
  NodeDef def;
  def.op = op;
  for (const Input& in : inputs) {
    Output out = AsOutput(in);
    if (!ok()) return nullptr;
    if (!out.valid()) {
      UpdateStatus(InvalidArgument("an input of a new " + op + " node is empty "
                                   "(an Output from a failed op?)"));
      return nullptr;
    }
    def.inputs.push_back(out.name());
  }
  for (const std::string& dep : control_deps_) def.inputs.push_back("^" + dep);
  def.name = NodeName(op);
  def.device = device_;
  def.attrs = std::move(attrs);
  if (!colocate_with_.empty()) {
    def.attrs["_class"] = std::vector<std::string>{"loc:@" + colocate_with_};
  }
  auto added = graph()->AddNode(std::move(def));
  if (!added.ok()) {
    UpdateStatus(added.status());
    return nullptr;
  }
  return *added;
}

}  // namespace actorflow
