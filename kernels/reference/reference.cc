#include "kernels/reference/reference.h"

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace {

const reference::RefTable& Table() {
  static const reference::RefTable* table = [] {
    auto* t = new reference::RefTable();
    reference::AddElementwiseOps(t);
    reference::AddReductionOps(t);
    reference::AddArrayOps(t);
    reference::AddNnOps(t);
    reference::AddConvOps(t);
    reference::AddNormOps(t);
    reference::AddSparseOps(t);
    reference::AddShapeOps(t);
    reference::AddMathOps(t);
    reference::AddRnnOps(t);
    return t;
  }();
  return *table;
}

}  // namespace

bool HasReference(const std::string& op) { return Table().count(op) > 0; }

StatusOr<std::vector<Tensor>> ReferenceCompute(const std::string& op, const AttrMap& attrs,
                                               const std::vector<Tensor>& inputs,
                                               const std::vector<DType>& output_dtypes) {
  auto it = Table().find(op);
  if (it == Table().end()) {
    return Unimplemented("no reference kernel for op '" + op + "'");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].IsInitialized()) {
      return InvalidArgument(op + ": input " + std::to_string(i) + " has no value");
    }
  }
  AF_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, it->second(reference::RefCall{op, attrs, inputs}));
  if (!output_dtypes.empty()) {
    if (output_dtypes.size() != outputs.size()) {
      return Internal(op + ": the node declares " + std::to_string(output_dtypes.size()) +
                      " output(s), the reference computes " + std::to_string(outputs.size()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].dtype() != output_dtypes[i]) {
        return Internal(op + ": output " + std::to_string(i) + " has dtype " +
                        DTypeName(outputs[i].dtype()) + " in the reference but the node says " +
                        DTypeName(output_dtypes[i]));
      }
    }
  }
  return outputs;
}

}  // namespace actorflow
