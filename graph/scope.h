// The C++ builder API's context: Scope carries the graph being built, the name
// scope, the device scope, control dependencies and colocation, and the first error
// seen while building (TensorFlow's C++ API style: op functions never fail loudly;
// they record the error in the scope and return an empty Output).
//
//   Scope root = Scope::NewRootScope();
//   auto a = Const(root, 3.0f);
//   auto b = Const(root.WithDevice("/cpu:0"), 5.0f);
//   auto sum = Add(root.WithOpName("sum"), a, b);
//   if (!root.ok()) ... root.status() names the node that failed.
//
// Devices: WithDevice requests a device for the nodes built in the scope;
// WithDeviceFunction lets a function choose it from the node (TensorFlow's device
// functions, e.g. placement/replica_device_setter.h). A node built in a ColocateWith
// scope, or with a ref input (an update of a variable), is placed with that node: a
// device function leaves it the scope's request, or else its partner's device. A
// requested device that conflicts with the partner's explicit request is an
// InvalidArgument when the node is added, naming both nodes and devices (the placer
// would reject the pair at the first Run).
//
// Thread safety: a Scope and its graph are for one building thread at a time.
#ifndef ACTORFLOW_GRAPH_SCOPE_H_
#define ACTORFLOW_GRAPH_SCOPE_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// A tensor-valued edge end in the graph being built.
struct Output {
  const Node* node = nullptr;
  int index = 0;

  Output() = default;
  Output(const Node* n, int i = 0) : node(n), index(i) {}  // NOLINT: implicit by design
  bool valid() const { return node != nullptr; }
  DType dtype() const { return node->output_dtype(index); }
  const Shape& shape() const { return node->output_shape(index); }
  // "name" or "name:k": what Session::Run takes as a fetch or feed.
  std::string name() const { return Endpoint{node, index}.ToString(); }
};

// An op function's argument: an Output, or a literal that becomes a Const node
// (float literals are float32, integer literals int32, as in TensorFlow).
class Input {
 public:
  Input(Output output) : output_(output) {}  // NOLINT
  Input(const Node* node) : output_(node, 0) {}  // NOLINT
  Input(float v) : literal_(Tensor::Scalar(v)) {}  // NOLINT
  Input(double v) : literal_(Tensor::Scalar(v)) {}  // NOLINT
  Input(int32_t v) : literal_(Tensor::Scalar(v)) {}  // NOLINT
  Input(int64_t v) : literal_(Tensor::Scalar(v)) {}  // NOLINT
  Input(bool v) : literal_(Tensor::Scalar(v)) {}  // NOLINT
  Input(Tensor t) : literal_(std::move(t)) {}  // NOLINT
  Input(std::initializer_list<float> v) : literal_(Tensor::FromVector(std::vector<float>(v))) {}  // NOLINT
  Input(std::initializer_list<int32_t> v)  // NOLINT
      : literal_(Tensor::FromVector(std::vector<int32_t>(v))) {}

  const Output& output() const { return output_; }
  const std::optional<Tensor>& literal() const { return literal_; }

 private:
  Output output_;
  std::optional<Tensor> literal_;
};

class Scope {
 public:
  // A root scope over a new graph that the scope (and its copies) own.
  static Scope NewRootScope();
  // A root scope over an existing graph; the caller keeps the graph alive.
  static Scope ForGraph(Graph* graph);

  // Child scopes share the graph and the error state.
  Scope NewSubScope(const std::string& name) const;   // names become "name/op"
  Scope WithOpName(const std::string& name) const;    // the next op's exact name
  Scope WithDevice(const std::string& device) const;  // requested device spec
  // The device of each later node is `fn(def)`, def being the node as it would be
  // added (its op, name, inputs, attrs and the WithDevice request, which `fn` should
  // keep where it is set). Not applied to colocated nodes (see the top of this file).
  // An empty fn removes the function.
  using DeviceFunction = std::function<std::string(const NodeDef& def)>;
  Scope WithDeviceFunction(DeviceFunction fn) const;
  Scope WithControlDependencies(const std::vector<Output>& deps) const;
  // Ops built in the returned scope are placed with `other`'s node ("_class" attr).
  Scope ColocateWith(const Output& other) const;

  Graph* graph() const { return state_->graph; }
  std::shared_ptr<Graph> graph_ptr() const { return state_->owned_graph; }
  bool ok() const { return state_->status.ok(); }
  // The first error recorded by any scope sharing this graph.
  const Status& status() const { return state_->status; }
  void UpdateStatus(const Status& s) const;

  // For op functions. Adds a node named after the scope (WithOpName, else a unique
  // name from `op`), with this scope's device, control dependencies and colocation,
  // and the given inputs (literals become Const nodes). Returns nullptr, with the
  // error recorded, if the scope already failed or the node is invalid.
  const Node* AddNode(const std::string& op, const std::vector<Input>& inputs,
                      AttrMap attrs = {}) const;
  // Resolves an Input to an Output (adding a Const for a literal).
  Output AsOutput(const Input& input) const;

 private:
  struct State {
    Graph* graph = nullptr;
    std::shared_ptr<Graph> owned_graph;
    Status status;
  };
  explicit Scope(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::string NodeName(const std::string& op) const;

  std::shared_ptr<State> state_;
  std::string name_prefix_;  // "outer/inner/" or empty
  std::string op_name_;      // exact name for the next op, or empty
  // The device of a node: device_, device_function_'s choice, or its colocation
  // partner's; InvalidArgument when it conflicts with the partner's request.
  Status ResolveDevice(const std::vector<Output>& inputs, NodeDef* def) const;

  std::string device_;
  DeviceFunction device_function_;
  std::vector<std::string> control_deps_;
  std::string colocate_with_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_SCOPE_H_
