#include "graph/scope.h"

#include <cctype>
#include <map>

namespace actorflow {

namespace {

// The fields of a device spec ("/job:ps/replica:0/task:1/device:GPU:0", partial,
// or legacy "/cpu:0") by key: job, replica, task, type (uppercase), id; '*' or an
// absent field is absent. False for a text it cannot read: placement/device_name.h
// owns the syntax and reports it; here an unreadable spec only means no verdict.
bool ReadDeviceFields(const std::string& spec, std::map<std::string, std::string>* fields) {
  auto upper = [](std::string t) {
    for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return t;
  };
  auto set = [fields](const std::string& key, std::string value) {
    if (value == "*") return;
    // Numbers compare by value: "task:01" is task 1.
    if (key != "job" && key != "type" && !value.empty() && value.size() < 10 &&
        value.find_first_not_of("0123456789") == std::string::npos) {
      value = std::to_string(std::stoi(value));
    }
    (*fields)[key] = value;
  };
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find('/', start);
    if (end == std::string::npos) end = spec.size();
    const std::string part = spec.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    const size_t colon = part.find(':');
    if (colon == std::string::npos) return false;
    const std::string key = upper(part.substr(0, colon));
    const std::string rest = part.substr(colon + 1);
    if (key == "JOB") {
      set("job", rest);
    } else if (key == "REPLICA" || key == "TASK") {
      set(key == "TASK" ? "task" : "replica", rest);
    } else {
      // device:TYPE[:ID] or the short TYPE:ID.
      const std::string device = key == "DEVICE" ? rest : part;
      const size_t id_colon = device.find(':');
      set("type", upper(device.substr(0, id_colon)));
      if (id_colon != std::string::npos) set("id", device.substr(id_colon + 1));
    }
  }
  return true;
}

// True when both specs are readable and some field present in both differs: no
// device can match both.
bool DevicesConflict(const std::string& a, const std::string& b) {
  std::map<std::string, std::string> fa, fb;
  if (!ReadDeviceFields(a, &fa) || !ReadDeviceFields(b, &fb)) return false;
  for (const auto& [key, value] : fa) {
    auto it = fb.find(key);
    if (it != fb.end() && it->second != value) return true;
  }
  return false;
}

}  // namespace

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

Scope Scope::WithDeviceFunction(DeviceFunction fn) const {
  Scope s = *this;
  s.device_function_ = std::move(fn);
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
  std::vector<Output> resolved;
  for (const Input& in : inputs) {
    Output out = AsOutput(in);
    if (!ok()) return nullptr;
    if (!out.valid()) {
      UpdateStatus(InvalidArgument("an input of a new " + op +
                                   " node is empty "
                                   "(an Output from a failed op?)"));
      return nullptr;
    }
    def.inputs.push_back(out.name());
    resolved.push_back(out);
  }
  for (const std::string& dep : control_deps_) def.inputs.push_back("^" + dep);
  def.name = NodeName(op);
  def.device = device_;
  def.attrs = std::move(attrs);
  if (!colocate_with_.empty()) {
    def.attrs["_class"] = std::vector<std::string>{"loc:@" + colocate_with_};
  }
  Status placed = ResolveDevice(resolved, &def);
  if (!placed.ok()) {
    UpdateStatus(placed);
    return nullptr;
  }
  auto added = graph()->AddNode(std::move(def));
  if (!added.ok()) {
    UpdateStatus(added.status());
    return nullptr;
  }
  return *added;
}

Status Scope::ResolveDevice(const std::vector<Output>& inputs, NodeDef* def) const {
  // The nodes this one must share a device with: the ColocateWith node and the
  // producers of its ref inputs.
  std::vector<const Node*> partners;
  if (!colocate_with_.empty()) {
    if (const Node* other = graph()->FindNode(colocate_with_)) partners.push_back(other);
  }
  if (const OpDef* op = OpRegistry::Global().Find(def->op)) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (op->IsRefInput(static_cast<int>(i))) partners.push_back(inputs[i].node);
    }
  }
  if (device_function_) {
    const Node* placed_partner = nullptr;
    for (const Node* p : partners) {
      if (!p->requested_device().empty()) {
        placed_partner = p;
        break;
      }
    }
    // A colocated node follows its partner: its own request, else the partner's.
    if (partners.empty()) {
      def->device = device_function_(*def);
    } else if (def->device.empty() && placed_partner != nullptr) {
      def->device = placed_partner->requested_device();
    }
  }
  if (def->device.empty()) return Status::OK();
  for (const Node* p : partners) {
    if (DevicesConflict(def->device, p->requested_device())) {
      return InvalidArgument("node '" + def->name + "' (" + def->op + ") requests device '" +
                             def->device + "' but must be colocated with node '" + p->name() +
                             "' (" + p->op() + "), which requests device '" +
                             p->requested_device() +
                             "': build it in a scope with the same device or none "
                             "(Scope::WithDevice)");
    }
  }
  return Status::OK();
}

}  // namespace actorflow
