#include "graph/prune.h"

#include <algorithm>

namespace actorflow {

namespace {

StatusOr<Endpoint> ResolveTensor(const Graph& graph, const std::string& name, const char* role,
                                 Code missing_code) {
  AF_ASSIGN_OR_RETURN(auto parsed, ParseTensorName(name));
  const Node* node = graph.FindNode(parsed.first);
  if (node == nullptr) {
    return Status(missing_code, std::string(role) + " '" + name + "' names no node in the graph");
  }
  if (parsed.second >= node->num_outputs()) {
    return Status(missing_code, std::string(role) + " '" + name + "': node '" + node->name() +
                                    "' has " + std::to_string(node->num_outputs()) +
                                    " output(s)");
  }
  return Endpoint{node, parsed.second};
}

}  // namespace

StatusOr<RunSignature> ResolveRunSignature(const Graph& graph,
                                           const std::vector<std::string>& feeds,
                                           const std::vector<std::string>& fetches,
                                           const std::vector<std::string>& targets) {
  RunSignature sig;
  for (const std::string& f : feeds) {
    AF_ASSIGN_OR_RETURN(Endpoint e, ResolveTensor(graph, f, "feed", Code::kInvalidArgument));
    for (const Endpoint& other : sig.feeds) {
      if (other.node == e.node && other.index == e.index) {
        return InvalidArgument("feed '" + f + "' is given twice");
      }
    }
    sig.feeds.push_back(e);
  }
  for (const std::string& f : fetches) {
    AF_ASSIGN_OR_RETURN(Endpoint e, ResolveTensor(graph, f, "fetch", Code::kNotFound));
    sig.fetches.push_back(e);
  }
  for (const std::string& t : targets) {
    const Node* node = graph.FindNode(t);
    if (node == nullptr) return NotFound("target '" + t + "' names no node in the graph");
    sig.targets.push_back(node);
  }
  return sig;
}

Status ValidateFeed(const std::string& name, const Endpoint& fed, const Tensor& value) {
  if (!value.IsInitialized()) return InvalidArgument("feed '" + name + "' has no value");
  DType want = fed.node->output_dtype(fed.index);
  if (value.dtype() != want) {
    return InvalidArgument("feed '" + name + "' has dtype " + DTypeName(value.dtype()) +
                           ", but '" + fed.ToString() + "' expects " + DTypeName(want));
  }
  const Shape& shape = fed.node->output_shape(fed.index);
  if (!shape.IsCompatibleWith(value.shape())) {
    return InvalidArgument("feed '" + name + "' has shape " + value.shape().ToString() +
                           ", but '" + fed.ToString() + "' accepts " + shape.ToString());
  }
  return Status::OK();
}

StatusOr<std::vector<const Node*>> PruneForRun(const Graph& graph, const RunSignature& sig) {
  auto is_fed = [&](const Node* node, int index) {
    for (const Endpoint& f : sig.feeds) {
      if (f.node == node && f.index == index) return true;
    }
    return false;
  };
  std::vector<char> needed(graph.num_nodes(), 0);
  std::vector<const Node*> stack;
  auto want = [&](const Node* node) {
    if (!needed[node->id()]) {
      needed[node->id()] = 1;
      stack.push_back(node);
    }
  };
  for (const Endpoint& f : sig.fetches) {
    if (!is_fed(f.node, f.index)) want(f.node);
  }
  for (const Node* t : sig.targets) want(t);
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (int k = 0; k < node->num_inputs(); ++k) {
      const Endpoint& in = node->input(k);
      if (node->IsRefInput(k) || is_fed(in.node, in.index)) continue;
      want(in.node);
    }
    for (const Node* dep : node->control_inputs()) want(dep);
  }
  std::vector<const Node*> nodes;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!needed[id]) continue;
    const Node* node = graph.node(id);
    if (node->op() == "Placeholder") {
      return InvalidArgument("you must feed a value for placeholder '" + node->name() +
                             "' (" + DTypeName(node->output_dtype(0)) + ", shape " +
                             node->output_shape(0).ToString() + "): a fetch depends on it");
    }
    nodes.push_back(node);
  }
  return nodes;
}

}  // namespace actorflow
