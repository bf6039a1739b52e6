#include "graph/op_registry.h"

#include <algorithm>
#include <cassert>

namespace actorflow {

bool OpDef::IsRefInput(int i) const {
  return std::find(ref_inputs.begin(), ref_inputs.end(), i) != ref_inputs.end();
}

const AttrDef* OpDef::FindAttr(const std::string& attr_name) const {
  for (const AttrDef& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry();  // never destroyed: used at exit
  return *registry;
}

void OpRegistry::Register(OpDef def) {
  assert(ops_.count(def.name) == 0 && "op registered twice");
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

const OpDef* OpRegistry::Find(const std::string& op) const {
  auto it = ops_.find(op);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::OpNames() const {
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

InferenceContext::InferenceContext(const std::string& node_name, const OpDef& op,
                                   const AttrMap& attrs, std::vector<DType> input_dtypes,
                                   std::vector<Shape> input_shapes,
                                   std::vector<const Tensor*> input_constants)
    : node_name_(node_name),
      op_(op),
      attrs_(attrs),
      input_dtypes_(std::move(input_dtypes)),
      input_shapes_(std::move(input_shapes)),
      input_constants_(std::move(input_constants)),
      output_dtypes_(op.num_outputs_fn ? std::max(0, op.num_outputs_fn(attrs)) : op.num_outputs,
                     DType::kFloat32),
      output_shapes_(output_dtypes_.size(), Shape::UnknownRank()) {}

void InferenceContext::set_output(int i, DType dtype, Shape shape) {
  output_dtypes_[i] = dtype;
  output_shapes_[i] = std::move(shape);
}

}  // namespace actorflow
