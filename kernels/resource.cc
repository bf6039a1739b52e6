#include "kernels/resource.h"

namespace actorflow {

Tensor& VariableResource::MutableValue() {
  if (!value.RefCountIsOne()) value = value.DeepCopy();
  return value;
}

StatusOr<std::shared_ptr<VariableResource>> ResourceManager::LookupOrCreateVariable(
    const std::string& container, const std::string& name, DType dtype, const Shape& shape) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& vars = containers_[container];
  auto it = vars.find(name);
  if (it != vars.end()) {
    if (it->second->dtype() != dtype) {
      return InvalidArgument("variable '" + name + "' exists with dtype " +
                             DTypeName(it->second->dtype()) + ", requested " + DTypeName(dtype));
    }
    return it->second;
  }
  auto var = std::make_shared<VariableResource>(name, dtype, shape);
  vars.emplace(name, var);
  return var;
}

StatusOr<std::shared_ptr<VariableResource>> ResourceManager::LookupVariable(
    const std::string& container, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto c = containers_.find(container);
  if (c != containers_.end()) {
    auto it = c->second.find(name);
    if (it != c->second.end()) return it->second;
  }
  return NotFound("no variable '" + name + "' in container '" + container + "'");
}

uint64_t ResourceManager::NextEpoch() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void ResourceManager::Clear(const std::vector<std::string>& containers) {
  std::lock_guard<std::mutex> lock(mu_);
  if (containers.empty()) {
    epoch_.store(NextEpoch(), std::memory_order_release);
    containers_.clear();
    resources_.clear();
    return;
  }
  bool dropped_variables = false;
  for (const std::string& c : containers) {
    dropped_variables = containers_.erase(c) > 0 || dropped_variables;
    resources_.erase(c);
  }
  // Only a dropped variable invalidates what VariableLookupCache holds.
  if (dropped_variables) epoch_.store(NextEpoch(), std::memory_order_release);
}

std::vector<std::string> ResourceManager::VariableNames(const std::string& container) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  auto c = containers_.find(container);
  if (c == containers_.end()) return names;
  for (const auto& [name, var] : c->second) names.push_back(name);
  return names;
}

StatusOr<std::shared_ptr<VariableResource>> VariableForNode(ResourceManager* resources,
                                                    const Node& variable_node) {
  if (variable_node.op() != "Variable") {
    return InvalidArgument(variable_node.Describe() + " is not a Variable");
  }
  const std::string& shared_name = variable_node.attr<std::string>("shared_name");
  return resources->LookupOrCreateVariable(
      variable_node.attr<std::string>("container"),
      shared_name.empty() ? variable_node.name() : shared_name,
      variable_node.attr<DType>("dtype"), variable_node.attr<Shape>("shape"));
}

StatusOr<std::shared_ptr<VariableResource>> VariableLookupCache::Get(ResourceManager* resources,
                                                                     const Node& variable_node,
                                                                     size_t slot) {
  const uint64_t epoch = resources->epoch();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot < entries_.size() && entries_[slot].epoch == epoch) return entries_[slot].variable;
  }
  auto variable = VariableForNode(resources, variable_node);
  if (!variable.ok()) return variable;
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() <= slot) entries_.resize(slot + 1);
  // The epoch was read before the lookup: a Clear in between leaves a stale epoch,
  // never a stale hit.
  entries_[slot] = Entry{epoch, *variable};
  return variable;
}

std::string SessionContainer(uint64_t session_scope) {
  return session_scope == 0 ? std::string() : "_session_" + std::to_string(session_scope);
}

}  // namespace actorflow
