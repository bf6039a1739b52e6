// Runtime ops: inserted by graph partitioning (placement/partition.h) where a data or
// control edge crosses devices, never written by users. The actor runtime implements
// their kernels. A pair shares tensor_name (the edge key, "src:k" or "^src"),
// send_device and recv_device.
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"

namespace actorflow {
namespace op_set_internal {
namespace {

Status InferSend(InferenceContext&) { return Status::OK(); }

Status InferRecv(InferenceContext& ctx) {
  ctx.set_output(0, ctx.attr<DType>("dtype"),
                 ctx.has_attr("shape") ? ctx.attr<Shape>("shape") : Shape::UnknownRank());
  return Status::OK();
}

std::vector<OpDef> RuntimeOpSet() {
  using T = AttrType;
  const std::vector<AttrDef> endpoints = {Required("tensor_name", T::kString),
                                          Required("send_device", T::kString),
                                          Required("recv_device", T::kString)};
  std::vector<AttrDef> recv_attrs = endpoints;
  recv_attrs.push_back(Required("dtype", T::kType));
  recv_attrs.push_back(Optional("shape", T::kShape));
  // Both are stateful: each runs once per step for its side effect on the rendezvous.
  return {Stateful(MakeOp("_Send", 1, 0, endpoints, InferSend)),
          Stateful(MakeOp("_Recv", 0, 1, std::move(recv_attrs), InferRecv))};
}

[[maybe_unused]] const bool kRuntimeOpsRegistered = [] {
  for (OpDef& def : RuntimeOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
