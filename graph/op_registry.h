// The op registry: what each op takes, what it returns, its attrs with their types
// and defaults, and how its output dtypes and shapes follow from its inputs. The
// whole op set is registered in graph/ops_*.cc, one file per family (listed in
// graph/op_set_internal.h).
//
// Thread safety: registration happens during static initialization (graph/ops_*.cc);
// afterwards the registry is read-only and may be read from any thread.
#ifndef ACTORFLOW_GRAPH_OP_REGISTRY_H_
#define ACTORFLOW_GRAPH_OP_REGISTRY_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/attr_value.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

struct AttrDef {
  std::string name;
  AttrType type;
  // Filled in when the attr is not written.
  std::optional<AttrValue> default_value;
  // With no default: a required attr is an error when missing; an optional one is
  // simply absent from Node::attrs() (Sum's "axis" absent = reduce every axis).
  bool required = true;
};

class InferenceContext;
using InferenceFn = std::function<Status(InferenceContext& ctx)>;

struct OpDef {
  std::string name;
  // Number of data inputs; -1 means variadic with at least `min_inputs`.
  int num_inputs = 0;
  int min_inputs = 0;
  // Inputs that refer to a variable's storage rather than its value (Assign's first
  // input). Such an input must come from a Variable node; the executor does not run
  // that node for it, and the kernel reaches the variable through its resources.
  std::vector<int> ref_inputs;
  int num_outputs = 1;
  std::vector<AttrDef> attrs;
  // Stateful ops (variables, random numbers) keep state in their kernel or resources.
  bool stateful = false;
  // Sets every output's dtype and shape, or returns InvalidArgument explaining why
  // the inputs/attrs are wrong (the caller prefixes the node's name).
  InferenceFn infer;
  // When set, the node's number of outputs follows from its attrs (defaults filled
  // in) and `num_outputs` is ignored: IteratorGetNext has one output per entry of its
  // output_dtypes attr. Must return >= 0; `infer` validates the attrs themselves.
  std::function<int(const AttrMap& attrs)> num_outputs_fn;

  bool IsRefInput(int i) const;
  const AttrDef* FindAttr(const std::string& attr_name) const;
};

class OpRegistry {
 public:
  static OpRegistry& Global();

  // Precondition: no op of that name yet (a duplicate is a programmer bug).
  void Register(OpDef def);
  // nullptr when unknown.
  const OpDef* Find(const std::string& op) const;
  std::vector<std::string> OpNames() const;

 private:
  std::map<std::string, OpDef> ops_;
};

// What an InferenceFn sees of the node being added: input dtypes and shapes, the
// values of constant inputs, and the attrs with defaults filled in.
class InferenceContext {
 public:
  InferenceContext(const std::string& node_name, const OpDef& op, const AttrMap& attrs,
                   std::vector<DType> input_dtypes, std::vector<Shape> input_shapes,
                   std::vector<const Tensor*> input_constants);

  const std::string& node_name() const { return node_name_; }
  int num_inputs() const { return static_cast<int>(input_dtypes_.size()); }
  DType input_dtype(int i) const { return input_dtypes_[i]; }
  const Shape& input_shape(int i) const { return input_shapes_[i]; }
  // The input's value when it comes straight from a Const node, else nullptr.
  const Tensor* input_constant(int i) const { return input_constants_[i]; }

  // Precondition: the attr is declared by the op with that C++ type (after
  // conversion: int64_t, double, bool, std::string, DType, Shape, Tensor,
  // std::vector<int64_t>, std::vector<std::string>).
  template <typename T>
  const T& attr(const std::string& name) const { return attrs_.at(name).Get<T>(); }
  const AttrValue& attr_value(const std::string& name) const { return attrs_.at(name); }
  bool has_attr(const std::string& name) const { return attrs_.count(name) > 0; }

  void set_output(int i, DType dtype, Shape shape);
  DType output_dtype(int i) const { return output_dtypes_[i]; }
  const Shape& output_shape(int i) const { return output_shapes_[i]; }
  const std::vector<DType>& output_dtypes() const { return output_dtypes_; }
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }

 private:
  std::string node_name_;
  const OpDef& op_;
  const AttrMap& attrs_;
  std::vector<DType> input_dtypes_;
  std::vector<Shape> input_shapes_;
  std::vector<const Tensor*> input_constants_;
  std::vector<DType> output_dtypes_;
  std::vector<Shape> output_shapes_;
};

// Registers an op at static-initialization time: AF_REGISTER_OP(def_expression);
struct OpRegistration {
  explicit OpRegistration(OpDef def) { OpRegistry::Global().Register(std::move(def)); }
};

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_OP_REGISTRY_H_
