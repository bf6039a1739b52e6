#include "placement/graph_dot.h"

#include <map>
#include <tuple>

#include "graph/types.h"

namespace actorflow {
namespace {

constexpr char kHeader[] =
    "  rankdir=TB;\n"
    "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", "
    "fontsize=10];\n"
    "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n";

// A DOT double-quoted string: quotes and backslashes escaped; a newline becomes
// "\n" (a centred line break in a label).
std::string DotQuoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Carried(const Node& node, int index) {
  return std::string(DTypeName(node.output_dtype(index))) + " " +
         node.output_shape(index).ToString();
}

// Fills that tell the kinds of node apart at a glance.
const char* FillOf(const Node& node) {
  const std::string& op = node.op();
  if (op == "Variable" || op == "VariableV2") return "#fde0b6";
  if (op == "Placeholder") return "#cfe3f7";
  if (op == "Const") return "#eeeeee";
  if (op == "_Send" || op == "_Recv") return "#f7c6c6";
  return "#ffffff";
}

std::string NodeStatement(const std::string& id, const Node& node, const std::string& indent) {
  std::string label = node.name() + "\n" + node.op();
  for (int k = 0; k < node.num_outputs(); ++k) {
    label += "\n" + (node.num_outputs() > 1 ? std::to_string(k) + ": " : std::string()) +
             Carried(node, k);
  }
  return indent + id + " [label=" + DotQuoted(label) + ", fillcolor=\"" + FillOf(node) + "\"];\n";
}

// The node and edge statements of `graph`, ids made by `prefix` + "n<id>".
std::string Body(const Graph& graph, const std::string& prefix, const std::string& indent) {
  std::string dot;
  auto id_of = [&](const Node* node) { return prefix + "n" + std::to_string(node->id()); };
  for (int i = 0; i < graph.num_nodes(); ++i) {
    if (const Node* node = graph.node(i)) dot += NodeStatement(id_of(node), *node, indent);
  }
  for (int i = 0; i < graph.num_nodes(); ++i) {
    const Node* node = graph.node(i);
    if (node == nullptr) continue;
    for (int k = 0; k < node->num_inputs(); ++k) {
      const Endpoint& input = node->input(k);
      std::string label = input.index > 0 ? ":" + std::to_string(input.index) + " " : "";
      if (node->IsRefInput(k)) label = "ref " + label;
      label += Carried(*input.node, input.index);
      dot += indent + id_of(input.node) + " -> " + id_of(node) + " [label=" + DotQuoted(label) +
             "];\n";
    }
    for (const Node* control : node->control_inputs()) {
      dot += indent + id_of(control) + " -> " + id_of(node) + " [style=dashed];\n";
    }
  }
  return dot;
}

std::string AttrString(const Node& node, const std::string& name) {
  auto it = node.attrs().find(name);
  if (it == node.attrs().end() || !it->second.Is<std::string>()) return "";
  return it->second.Get<std::string>();
}

}  // namespace

std::string GraphToDot(const Graph& graph) {
  return "digraph actorflow {\n" + std::string(kHeader) + Body(graph, "", "  ") + "}\n";
}

StatusOr<std::vector<DevicePartition>> PlaceAndPartitionWholeGraph(const Graph& graph,
                                                                   const PlacerOptions& options) {
  std::vector<const Node*> nodes;
  for (int i = 0; i < graph.num_nodes(); ++i) {
    if (const Node* node = graph.node(i)) nodes.push_back(node);
  }
  AF_ASSIGN_OR_RETURN(auto placement, PlaceNodes(graph, nodes, options));
  return Partition(graph, nodes, placement, /*feeds=*/{}, /*fetches=*/{}, /*targets=*/{});
}

std::string PartitionsToDot(const std::vector<DevicePartition>& partitions) {
  std::string dot = "digraph actorflow {\n" + std::string(kHeader) + "  compound=true;\n";
  // (tensor_name, send_device, recv_device) -> the _Send's id.
  using PairKey = std::tuple<std::string, std::string, std::string>;
  std::map<PairKey, std::string> sends;
  std::vector<std::pair<PairKey, std::string>> recvs;  // in partition order
  for (size_t d = 0; d < partitions.size(); ++d) {
    const DevicePartition& partition = partitions[d];
    const std::string prefix = "d" + std::to_string(d) + "_";
    dot += "  subgraph cluster_" + std::to_string(d) + " {\n";
    dot += "    label=" + DotQuoted(partition.device) + ";\n";
    dot +=
        "    style=\"rounded,filled\"; fillcolor=\"#f6f6f6\"; color=\"#999999\"; "
        "fontname=\"Helvetica\"; fontsize=11;\n";
    if (partition.graph != nullptr) {
      dot += Body(*partition.graph, prefix, "    ");
      for (int i = 0; i < partition.graph->num_nodes(); ++i) {
        const Node* node = partition.graph->node(i);
        if (node == nullptr || (node->op() != "_Send" && node->op() != "_Recv")) continue;
        PairKey key{AttrString(*node, "tensor_name"), AttrString(*node, "send_device"),
                    AttrString(*node, "recv_device")};
        const std::string id = prefix + "n" + std::to_string(node->id());
        if (node->op() == "_Send") {
          sends[key] = id;
        } else {
          recvs.emplace_back(key, id);
        }
      }
    }
    dot += "  }\n";
  }
  for (const auto& [key, recv_id] : recvs) {
    auto send = sends.find(key);
    if (send == sends.end()) continue;  // a pair the partitioner always completes
    dot += "  " + send->second + " -> " + recv_id + " [label=" + DotQuoted(std::get<0>(key)) +
           ", style=bold, color=\"#d62728\", fontcolor=\"#d62728\", penwidth=2];\n";
  }
  return dot + "}\n";
}

}  // namespace actorflow
