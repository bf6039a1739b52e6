#include "graph/collective_ops.h"

#include <utility>

namespace actorflow {
namespace {

AttrMap GroupAttrs(const CollectiveGroup& group, int64_t instance_key) {
  AttrMap attrs;
  attrs["group_key"] = group.key;
  attrs["group_devices"] = group.devices;
  attrs["instance_key"] = instance_key;
  return attrs;
}

Output AddCollective(const Scope& scope, const char* op, const Input& input, AttrMap attrs) {
  return Output(scope.AddNode(op, {input}, std::move(attrs)), 0);
}

}  // namespace

Output CollectiveAllReduce(const Scope& scope, const Input& input, const CollectiveGroup& group,
                           int64_t instance_key, const std::string& merge_op,
                           const std::string& algorithm) {
  AttrMap attrs = GroupAttrs(group, instance_key);
  attrs["merge_op"] = merge_op;
  attrs["algorithm"] = algorithm;
  return AddCollective(scope, "CollectiveAllReduce", input, std::move(attrs));
}

Output CollectiveBroadcast(const Scope& scope, const Input& input, const CollectiveGroup& group,
                           int64_t instance_key, int64_t root_rank) {
  AttrMap attrs = GroupAttrs(group, instance_key);
  attrs["root_rank"] = root_rank;
  return AddCollective(scope, "CollectiveBroadcast", input, std::move(attrs));
}

Output CollectiveAllGather(const Scope& scope, const Input& input, const CollectiveGroup& group,
                           int64_t instance_key) {
  return AddCollective(scope, "CollectiveAllGather", input, GroupAttrs(group, instance_key));
}

Output CollectiveReduceScatter(const Scope& scope, const Input& input,
                               const CollectiveGroup& group, int64_t instance_key,
                               const std::string& merge_op) {
  AttrMap attrs = GroupAttrs(group, instance_key);
  attrs["merge_op"] = merge_op;
  return AddCollective(scope, "CollectiveReduceScatter", input, std::move(attrs));
}

}  // namespace actorflow
