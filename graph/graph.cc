#include "graph/graph.h"

#include <algorithm>
#include <functional>

#include "graph/checked_size.h"

namespace actorflow {

std::string Endpoint::ToString() const {
  if (node == nullptr) return "<none>";
  return index == 0 ? node->name() : node->name() + ":" + std::to_string(index);
}

StatusOr<std::pair<std::string, int>> ParseTensorName(const std::string& tensor_name) {
  auto colon = tensor_name.rfind(':');
  if (colon == std::string::npos) return std::make_pair(tensor_name, 0);
  std::string index_text = tensor_name.substr(colon + 1);
  if (index_text.empty() || index_text.size() > 6 ||
      index_text.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("bad tensor name '" + tensor_name +
                           "': expected NODE or NODE:OUTPUT_INDEX");
  }
  return std::make_pair(tensor_name.substr(0, colon), std::stoi(index_text));
}

std::string Node::Describe() const { return "node '" + name() + "' (" + op() + ")"; }

const Node* Graph::FindNode(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : nodes_[it->second].get();
}

std::string Graph::UniqueName(const std::string& base) const {
  if (index_.count(base) == 0) return base;
  int& next = next_suffix_[base];
  for (int i = std::max(next, 1);; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (index_.count(candidate) == 0) {
      next = i;  // not i + 1: the caller may not add it
      return candidate;
    }
  }
}

void Graph::AddToCollection(const std::string& key, const std::string& node_name) {
  auto& names = collections_[key];
  for (const auto& n : names) {
    if (n == node_name) return;
  }
  names.push_back(node_name);
}

const std::vector<std::string>& Graph::GetCollection(const std::string& key) const {
  static const std::vector<std::string> kEmpty;
  auto it = collections_.find(key);
  return it == collections_.end() ? kEmpty : it->second;
}

std::vector<NodeDef> Graph::ToNodeDefs() const {
  std::vector<NodeDef> defs;
  defs.reserve(nodes_.size());
  for (const auto& n : nodes_) defs.push_back(n->def_);
  return defs;
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto copy = std::make_unique<Graph>();
  copy->collections_ = collections_;
  copy->index_ = index_;
  copy->nodes_.reserve(nodes_.size());
  // Ids are a topological order: a node's inputs are copied before it.
  for (const auto& n : nodes_) {
    auto node = std::make_unique<Node>(*n);
    for (Endpoint& in : node->inputs_) in.node = copy->nodes_[in.node->id_].get();
    for (const Node*& c : node->control_inputs_) c = copy->nodes_[c->id_].get();
    copy->nodes_.push_back(std::move(node));
  }
  return copy;
}

StatusOr<const Node*> Graph::AddNode(NodeDef def) {
  auto node = std::make_unique<Node>();
  const std::string where = "node '" + def.name + "'";
  if (def.name.empty()) return InvalidArgument("a node has an empty name (op " + def.op + ")");
  if (def.name.find_first_of(":^ ") != std::string::npos) {
    return InvalidArgument(where + ": a node name may not contain ':', '^' or spaces");
  }
  if (index_.count(def.name)) return InvalidArgument(where + ": duplicate node name");
  const OpDef* op = OpRegistry::Global().Find(def.op);
  if (op == nullptr) return InvalidArgument(where + ": unknown op '" + def.op + "'");
  node->op_def_ = op;

  // Attrs: convert what was written to the declared types, then fill defaults.
  AttrMap written;
  for (const auto& [attr_name, value] : def.attrs) {
    const AttrDef* attr_def = op->FindAttr(attr_name);
    if (attr_def == nullptr) {
      // Attrs starting with '_' are the runtime's (colocation "_class"); kept as is.
      if (!attr_name.empty() && attr_name[0] == '_') {
        written[attr_name] = value;
        continue;
      }
      return InvalidArgument(where + " (" + def.op + "): unknown attr '" + attr_name + "'");
    }
    auto converted = value.ConvertTo(attr_def->type);
    if (!converted.ok()) {
      return InvalidArgument(where + " (" + def.op + "): attr '" + attr_name +
                             "': " + converted.status().message());
    }
    written[attr_name] = std::move(converted).value();
  }
  node->attrs_ = written;
  for (const AttrDef& a : op->attrs) {
    if (node->attrs_.count(a.name)) continue;
    if (!a.default_value) {
      if (!a.required) continue;
      return InvalidArgument(where + " (" + def.op + "): missing required attr '" + a.name + "'");
    }
    node->attrs_[a.name] = *a.default_value;
  }
  def.attrs = std::move(written);

  // Inputs: data inputs first, then control inputs.
  std::vector<DType> in_dtypes;
  std::vector<Shape> in_shapes;
  std::vector<const Tensor*> in_constants;
  bool seen_control = false;
  for (const std::string& input : def.inputs) {
    if (!input.empty() && input[0] == '^') {
      seen_control = true;
      const Node* src = FindNode(input.substr(1));
      if (src == nullptr) {
        return InvalidArgument(where + ": control input '" + input + "' names no node");
      }
      node->control_inputs_.push_back(src);
      continue;
    }
    if (seen_control) {
      return InvalidArgument(where + ": data input '" + input + "' after a control input");
    }
    auto parsed = ParseTensorName(input);
    if (!parsed.ok()) return parsed.status().WithContext(where);
    const Node* src = FindNode(parsed->first);
    if (src == nullptr) {
      return InvalidArgument(where + ": input '" + input + "' names no node");
    }
    if (parsed->second >= src->num_outputs()) {
      return InvalidArgument(where + ": input '" + input + "': node '" + src->name() +
                             "' has only " + std::to_string(src->num_outputs()) + " output(s)");
    }
    int input_index = static_cast<int>(node->inputs_.size());
    if (op->IsRefInput(input_index) && src->op() != "Variable") {
      return InvalidArgument(where + " (" + def.op + "): input " +
                             std::to_string(input_index) + " must be a Variable node, got '" +
                             src->name() + "' (" + src->op() + ")");
    }
    node->inputs_.push_back(Endpoint{src, parsed->second});
    in_dtypes.push_back(src->output_dtype(parsed->second));
    in_shapes.push_back(src->output_shape(parsed->second));
    in_constants.push_back(src->op() == "Const" ? &src->attr<Tensor>("value") : nullptr);
  }
  int n_in = static_cast<int>(node->inputs_.size());
  if (op->num_inputs >= 0 && n_in != op->num_inputs) {
    return InvalidArgument(where + " (" + def.op + "): expected " +
                           std::to_string(op->num_inputs) + " input(s), got " +
                           std::to_string(n_in));
  }
  if (op->num_inputs < 0 && n_in < op->min_inputs) {
    return InvalidArgument(where + " (" + def.op + "): expected at least " +
                           std::to_string(op->min_inputs) + " input(s), got " +
                           std::to_string(n_in));
  }

  InferenceContext ctx(def.name, *op, node->attrs_, in_dtypes, in_shapes, in_constants);
  if (op->infer) {
    Status s = op->infer(ctx);
    if (!s.ok()) return Status(s.code(), where + " (" + def.op + "): " + s.message());
  }
  // No tensor can have an output shape whose element or byte count overflows int64
  // (a Fill, a Reshape or a broadcast of huge dims): refused here, before a kernel
  // could allocate a wrapped-around size.
  for (size_t i = 0; i < ctx.output_shapes().size(); ++i) {
    Status s = CheckRepresentableShape(ctx.output_shapes()[i], ctx.output_dtypes()[i]);
    if (!s.ok()) {
      return InvalidArgument(where + " (" + def.op + "): output " + std::to_string(i) + ": " +
                             s.message());
    }
  }
  node->output_dtypes_ = ctx.output_dtypes();
  node->output_shapes_ = ctx.output_shapes();
  node->kernel_dtype_ = node->output_dtypes_.empty() ? DType::kFloat32 : node->output_dtypes_[0];
  for (int i = 0; i < n_in; ++i) {
    if (!op->IsRefInput(i)) {
      node->kernel_dtype_ = in_dtypes[i];
      break;
    }
  }

  node->def_ = std::move(def);
  node->id_ = static_cast<int>(nodes_.size());
  index_[node->def_.name] = node->id_;
  nodes_.push_back(std::move(node));
  return static_cast<const Node*>(nodes_.back().get());
}

StatusOr<std::unique_ptr<Graph>> Graph::FromNodeDefs(const std::vector<NodeDef>& defs) {
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < defs.size(); ++i) {
    if (!by_name.emplace(defs[i].name, i).second) {
      return InvalidArgument("node '" + defs[i].name + "': duplicate node name");
    }
  }
  // Depth-first topological order that keeps an already ordered list unchanged, so
  // parse -> serialize -> parse is stable. 0 = unvisited, 1 = on stack, 2 = done.
  std::vector<int> state(defs.size(), 0);
  std::vector<size_t> order;
  std::function<Status(size_t)> visit = [&](size_t i) -> Status {
    if (state[i] == 2) return Status::OK();
    if (state[i] == 1) {
      return InvalidArgument("node '" + defs[i].name + "': the graph has a cycle through it");
    }
    state[i] = 1;
    for (const std::string& input : defs[i].inputs) {
      std::string src = input;
      if (!src.empty() && src[0] == '^') {
        src = src.substr(1);
      } else {
        auto parsed = ParseTensorName(input);
        if (!parsed.ok()) return parsed.status().WithContext("node '" + defs[i].name + "'");
        src = parsed->first;
      }
      auto it = by_name.find(src);
      if (it == by_name.end()) {
        return InvalidArgument("node '" + defs[i].name + "': input '" + input +
                               "' names no node");
      }
      AF_RETURN_IF_ERROR(visit(it->second));
    }
    state[i] = 2;
    order.push_back(i);
    return Status::OK();
  };
  for (size_t i = 0; i < defs.size(); ++i) AF_RETURN_IF_ERROR(visit(i));

  auto graph = std::make_unique<Graph>();
  for (size_t i : order) {
    auto added = graph->AddNode(defs[i]);
    if (!added.ok()) return added.status();
  }
  return graph;
}

}  // namespace actorflow
