// Collective ops (builders and contracts: graph/collective_ops.h; kernels:
// kernels/collective/collective_kernels.cc).
//
// Common attrs: group_key (string, not empty), group_devices (list of strings: the
// members' full device names in rank order, at least one, no repeats), instance_key
// (int). All take one input and give one output of the input's dtype.
// CollectiveAllReduce: merge_op "sum" | "mean", algorithm "auto" | "ring" |
//   "recursive_doubling"; output shape = input shape. Reduces float32, float64,
//   int32 and int64.
// CollectiveBroadcast: root_rank (int, a member's rank); output shape = input shape.
// CollectiveAllGather: output [unknown, input dims 1...] (input rank >= 1).
// CollectiveReduceScatter: merge_op; output 1-D of unknown size.
// All are stateful: each run is one meeting of the group, never folded or merged.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"

namespace actorflow {
namespace op_set_internal {
namespace {

Status CheckGroup(const InferenceContext& ctx) {
  if (ctx.attr<std::string>("group_key").empty()) {
    return InvalidArgument("attr 'group_key' is empty: a collective names its group");
  }
  const auto& devices = ctx.attr<std::vector<std::string>>("group_devices");
  if (devices.empty()) {
    return InvalidArgument("attr 'group_devices' is empty: a group has at least one member");
  }
  std::set<std::string> seen;
  for (const std::string& d : devices) {
    if (d.empty()) return InvalidArgument("attr 'group_devices' has an empty device name");
    if (!seen.insert(d).second) {
      return InvalidArgument("attr 'group_devices' names device '" + d + "' twice");
    }
  }
  return Status::OK();
}

Status CheckReducible(const InferenceContext& ctx) {
  const DType dtype = ctx.input_dtype(0);
  if (dtype == DType::kBool) {
    return InvalidArgument("input 0 has dtype bool: a reduction takes float32, float64, "
                           "int32 or int64");
  }
  const std::string& merge = ctx.attr<std::string>("merge_op");
  if (merge != "sum" && merge != "mean") {
    return InvalidArgument("attr 'merge_op' is '" + merge + "': it must be 'sum' or 'mean'");
  }
  return Status::OK();
}

Status InferAllReduce(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckGroup(ctx));
  AF_RETURN_IF_ERROR(CheckReducible(ctx));
  const std::string& algorithm = ctx.attr<std::string>("algorithm");
  if (algorithm != "auto" && algorithm != "ring" && algorithm != "recursive_doubling") {
    return InvalidArgument("attr 'algorithm' is '" + algorithm +
                           "': it must be 'auto', 'ring' or 'recursive_doubling'");
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status InferBroadcast(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckGroup(ctx));
  const int64_t root = ctx.attr<int64_t>("root_rank");
  const auto members = static_cast<int64_t>(ctx.attr<std::vector<std::string>>("group_devices").size());
  if (root < 0 || root >= members) {
    return InvalidArgument("attr 'root_rank' is " + std::to_string(root) + ": the group has " +
                           std::to_string(members) + " member(s)");
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status InferAllGather(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckGroup(ctx));
  const Shape& in = ctx.input_shape(0);
  if (in.unknown_rank()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::UnknownRank());
    return Status::OK();
  }
  AF_RETURN_IF_ERROR(CheckRank("input 0", in, 1, 8));
  Shape out = in;
  out.set_dim(0, -1);
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status::OK();
}

Status InferReduceScatter(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckGroup(ctx));
  AF_RETURN_IF_ERROR(CheckReducible(ctx));
  ctx.set_output(0, ctx.input_dtype(0), Shape{-1});
  return Status::OK();
}

std::vector<OpDef> CollectiveOpSet() {
  using T = AttrType;
  auto with = [](std::vector<AttrDef> more) {
    std::vector<AttrDef> all = {Required("group_key", T::kString),
                                Required("group_devices", T::kStringList),
                                Required("instance_key", T::kInt)};
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const AttrDef merge = Default("merge_op", T::kString, AttrValue(std::string("sum")));
  std::vector<OpDef> ops;
  ops.push_back(Stateful(MakeOp(
      "CollectiveAllReduce", 1, 1,
      with({merge, Default("algorithm", T::kString, AttrValue(std::string("auto")))}),
      InferAllReduce)));
  ops.push_back(Stateful(MakeOp("CollectiveBroadcast", 1, 1,
                                with({Default("root_rank", T::kInt, AttrValue(int64_t{0}))}),
                                InferBroadcast)));
  ops.push_back(Stateful(MakeOp("CollectiveAllGather", 1, 1, with({}), InferAllGather)));
  ops.push_back(
      Stateful(MakeOp("CollectiveReduceScatter", 1, 1, with({merge}), InferReduceScatter)));
  return ops;
}

[[maybe_unused]] const bool kCollectiveOpsRegistered = [] {
  for (OpDef& def : CollectiveOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
