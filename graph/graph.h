// Graph and Node: a dataflow graph of ops. A NodeDef is a node as written (graph
// JSON, builder API); a Node is a NodeDef resolved against the op registry and the
// graph: its inputs point at nodes, its attrs have defaults filled in, and its
// outputs have inferred dtypes and shapes.
//
// Invariants: a graph is append-only and always topologically ordered (a node's
// inputs have smaller ids), so a session's cached plans stay valid as nodes are
// added; node names are unique.
// Thread safety: concurrent const access is safe; AddNode needs exclusive access.
#ifndef ACTORFLOW_GRAPH_GRAPH_H_
#define ACTORFLOW_GRAPH_GRAPH_H_

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/attr_value.h"
#include "graph/op_registry.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/types.h"

namespace actorflow {

struct NodeDef {
  std::string name;
  std::string op;
  // "node" or "node:k" for output k; "^node" for a control dependency. Control
  // dependencies come after data inputs.
  std::vector<std::string> inputs;
  AttrMap attrs;       // as written, converted to the declared attr types
  std::string device;  // requested device spec, possibly empty or partial

  bool operator==(const NodeDef& o) const {
    return name == o.name && op == o.op && inputs == o.inputs && attrs == o.attrs &&
           device == o.device;
  }
  bool operator!=(const NodeDef& o) const { return !(*this == o); }
};

class Node;

// One output of a node: what a data edge carries.
struct Endpoint {
  const Node* node = nullptr;
  int index = 0;
  // "name" for output 0, "name:k" otherwise.
  std::string ToString() const;
};

// Parses "name", "name:k"; InvalidArgument for a bad index. Returns {name, k}.
StatusOr<std::pair<std::string, int>> ParseTensorName(const std::string& tensor_name);

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return def_.name; }
  const std::string& op() const { return def_.op; }
  const NodeDef& def() const { return def_; }
  const OpDef& op_def() const { return *op_def_; }
  const std::string& requested_device() const { return def_.device; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const std::vector<Endpoint>& inputs() const { return inputs_; }
  const Endpoint& input(int i) const { return inputs_[i]; }
  bool IsRefInput(int i) const { return op_def_->IsRefInput(i); }
  const std::vector<const Node*>& control_inputs() const { return control_inputs_; }

  int num_outputs() const { return static_cast<int>(output_dtypes_.size()); }
  DType output_dtype(int i) const { return output_dtypes_[i]; }
  const Shape& output_shape(int i) const { return output_shapes_[i]; }

  // Attrs with defaults filled in. Precondition for attr<T>: declared with that type.
  const AttrMap& attrs() const { return attrs_; }
  template <typename T>
  const T& attr(const std::string& name) const { return attrs_.at(name).Get<T>(); }

  // The dtype that selects the kernel: the first non-ref input's dtype, else the
  // first output's.
  DType kernel_dtype() const { return kernel_dtype_; }
  bool IsStateful() const { return op_def_->stateful; }

  // "node 'm' (MatMul)" — the prefix of every error about this node.
  std::string Describe() const;

 private:
  friend class Graph;
  int id_ = -1;
  NodeDef def_;
  const OpDef* op_def_ = nullptr;
  std::vector<Endpoint> inputs_;
  std::vector<const Node*> control_inputs_;
  AttrMap attrs_;
  std::vector<DType> output_dtypes_;
  std::vector<Shape> output_shapes_;
  DType kernel_dtype_ = DType::kFloat32;
};

// Collection keys used by training/ (variables, initializers, the global step).
inline constexpr char kVariablesCollection[] = "variables";
inline constexpr char kTrainableVariablesCollection[] = "trainable_variables";
inline constexpr char kInitializersCollection[] = "initializers";
inline constexpr char kGlobalStepCollection[] = "global_step";
// Local variables (TensorFlow's tf.local_variables: per-worker state such as a
// metric's counters) and their initializers; never in the two global ones above, so
// the Saver and GlobalVariablesInitializer skip them.
inline constexpr char kLocalVariablesCollection[] = "local_variables";
inline constexpr char kLocalInitializersCollection[] = "local_initializers";

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Builds a graph from NodeDefs in any order. Errors (InvalidArgument, naming the
  // node): duplicate names, unknown ops, dangling inputs, cycles, attrs of the wrong
  // type, and shape/dtype inference failures.
  static StatusOr<std::unique_ptr<Graph>> FromNodeDefs(const std::vector<NodeDef>& defs);

  // Adds one node whose inputs already exist. On error the graph is unchanged.
  StatusOr<const Node*> AddNode(NodeDef def);

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node* node(int id) const { return nodes_[id].get(); }
  // nullptr when absent.
  const Node* FindNode(const std::string& name) const;
  // The NodeDefs in graph order (what graph JSON serializes).
  std::vector<NodeDef> ToNodeDefs() const;
  // An independent copy: the same nodes under the same ids, with their inferred
  // dtypes and shapes, and the collections. Nothing is inferred again, so it costs a
  // fraction of FromNodeDefs(ToNodeDefs()), which gives an equal graph.
  std::unique_ptr<Graph> Clone() const;

  // A name not used yet: `base`, else the first free of `base_1`, `base_2`, ...
  // (amortized constant time per call).
  std::string UniqueName(const std::string& base) const;

  // Named lists of node names (TensorFlow's graph collections), e.g.
  // kVariablesCollection. Appending keeps order and skips duplicates.
  void AddToCollection(const std::string& key, const std::string& node_name);
  const std::vector<std::string>& GetCollection(const std::string& key) const;
  const std::map<std::string, std::vector<std::string>>& collections() const {
    return collections_;
  }

 private:
  std::map<std::string, std::vector<std::string>> collections_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, int> index_;
  // UniqueName's first suffix to try, by base: every smaller one is taken, and
  // stays taken since the graph only grows. Without it, n unnamed nodes of one op
  // would take n^2 / 2 probes. A building call's state, like AddNode's.
  mutable std::unordered_map<std::string, int> next_suffix_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_GRAPH_H_
