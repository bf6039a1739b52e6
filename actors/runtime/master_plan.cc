// The master's planning: which tasks a step needs, and the plan (placement,
// partitions, registrations) for a step signature.

#include <algorithm>
#include <iostream>
#include <set>

#include "actors/runtime/master_state.h"
#include "actors/runtime/step_ids.h"
#include "placement/device_name.h"
#include "placement/partition.h"

namespace actorflow {

namespace {

std::string CanonicalTensorName(const std::string& name) {
  auto parsed = ParseTensorName(name);
  if (!parsed.ok()) return name;
  return parsed->second == 0 ? parsed->first : parsed->first + ":" + std::to_string(parsed->second);
}

}  // namespace

std::vector<DevicePeer> MasterState::KnownDevices() const {
  std::vector<DevicePeer> out;
  for (size_t i = 0; i < config.devices.size(); ++i) {
    out.push_back(DevicePeer{config.devices[i].name, config.devices[i].type,
                             config.device_actors[i]});
  }
  for (const auto& [name, task] : tasks) {
    if (task.state != TaskEntry::State::kConnected) continue;
    out.insert(out.end(), task.devices.begin(), task.devices.end());
  }
  return out;
}

std::string TaskOfDevice(const std::string& device) {
  auto pos = device.find("/device:");
  return pos == std::string::npos ? device : device.substr(0, pos);
}

StatusOr<std::vector<TaskId>> TasksToConnect(const MasterState& st,
                                             const std::vector<const Node*>& nodes) {
  std::vector<TaskId> out;
  if (!st.config.cluster) return out;
  const ClusterSpec& cluster = *st.config.cluster;
  auto add = [&](const TaskId& t) {
    std::string name = ClusterSpec::TaskName(t);
    if (name == st.config.local_task) return;
    auto it = st.tasks.find(name);
    if (it != st.tasks.end() && it->second.state == TaskEntry::State::kConnected) return;
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  };
  // A node's task comes from its own device spec, or from the node it is colocated
  // with (a ref input's Variable, a "_class" loc:@node), as the placer will decide.
  auto specs_of = [&](const Node* node) {
    std::vector<const Node*> sources{node};
    for (int k = 0; k < node->num_inputs(); ++k) {
      if (node->IsRefInput(k)) sources.push_back(node->input(k).node);
    }
    auto cls = node->attrs().find("_class");
    if (cls != node->attrs().end() && cls->second.Is<std::vector<std::string>>()) {
      for (const std::string& loc : cls->second.Get<std::vector<std::string>>()) {
        if (loc.rfind("loc:@", 0) != 0) continue;
        if (const Node* other = st.graph->FindNode(loc.substr(5))) sources.push_back(other);
      }
    }
    return sources;
  };
  auto tasks_of = [&](const Node* source) -> Status {
    if (source->requested_device().empty()) return Status::OK();
    AF_ASSIGN_OR_RETURN(DeviceSpec spec, ParseDeviceSpec(source->requested_device()));
    if (!spec.job) return Status::OK();
    int count = cluster.num_tasks(*spec.job);
    if (count == 0) {
      std::string jobs;
      for (const std::string& j : cluster.jobs()) jobs += (jobs.empty() ? "" : ", ") + j;
      return InvalidArgument(source->Describe() + ": its device '" + source->requested_device() +
                             "' names job '" + *spec.job + "', which the cluster lacks (jobs: " +
                             jobs + ")");
    }
    if (spec.task) {
      if (*spec.task < 0 || *spec.task >= count) {
        return InvalidArgument(source->Describe() + ": its device '" +
                               source->requested_device() + "' names task " +
                               std::to_string(*spec.task) + " of job '" + *spec.job +
                               "', which has " + std::to_string(count) + " task(s)");
      }
      add(TaskId{*spec.job, *spec.task});
    } else {
      for (int i = 0; i < count; ++i) add(TaskId{*spec.job, i});
    }
    return Status::OK();
  };
  for (const Node* node : nodes) {
    for (const Node* source : specs_of(node)) AF_RETURN_IF_ERROR(tasks_of(source));
    // A collective's peers run on the tasks its group names, wherever it runs itself.
    for (const std::string& member : CollectiveMembers(*node)) {
      AF_ASSIGN_OR_RETURN(DeviceSpec spec, ParseDeviceSpec(member));
      if (!spec.job || !spec.task) continue;  // BuildPlan names a device it cannot find
      if (*spec.task < 0 || *spec.task >= cluster.num_tasks(*spec.job)) {
        return InvalidArgument(node->Describe() + ": its group names device '" + member +
                               "', whose task is not in the cluster");
      }
      add(TaskId{*spec.job, *spec.task});
    }
  }
  return out;
}

std::vector<std::string> CollectiveMembers(const Node& node) {
  if (node.op().rfind("Collective", 0) != 0) return {};
  auto it = node.attrs().find("group_devices");
  if (it == node.attrs().end() || !it->second.Is<std::vector<std::string>>()) return {};
  return it->second.Get<std::vector<std::string>>();
}

bool HasCollectiveMember(const Plan& plan, const std::set<std::string>& devices) {
  for (const std::string& d : devices) {
    if (plan.collective_members.count(d) > 0) return true;
  }
  return false;
}

bool UsesAny(const Plan& plan, const std::set<std::string>& devices) {
  for (const PlanPart& p : plan.parts) {
    if (devices.count(p.device) > 0) return true;
  }
  return HasCollectiveMember(plan, devices);
}

namespace {

// Every member of every collective among `nodes` is a device known now (by its full
// name, as the kernels match them); InvalidArgument naming the node and the device
// otherwise. The members, for the step's failure handling.
StatusOr<std::set<std::string>> CheckCollectiveMembers(const std::vector<const Node*>& nodes,
                                                       const std::vector<DevicePeer>& known) {
  std::set<std::string> members;
  for (const Node* node : nodes) {
    for (const std::string& member : CollectiveMembers(*node)) {
      auto found = std::find_if(known.begin(), known.end(),
                                [&](const DevicePeer& d) { return d.name == member; });
      if (found != known.end()) {
        members.insert(member);
        continue;
      }
      std::string hint;
      auto spec = ParseDeviceSpec(member);
      for (const DevicePeer& d : known) {
        auto full = ParseDeviceSpec(d.name);
        if (spec.ok() && full.ok() && Matches(*spec, *full)) hint = d.name;
      }
      return InvalidArgument(node->Describe() + ": its group names device '" + member +
                             "', which is not a device of a reachable task" +
                             (hint.empty() ? "" : " (a group names full device names: '" +
                                                      hint + "'?)"));
    }
  }
  return members;
}

}  // namespace

StatusOr<std::shared_ptr<Plan>> BuildPlan(MasterSelf self, const StepRequest& req,
                                          const RunSignature& sig,
                                          const std::vector<const Node*>& nodes) {
  MasterState& st = self->state;
  const Graph& graph = *st.graph;
  auto plan = std::make_shared<Plan>();
  plan->signature = sig;
  std::vector<DevicePeer> known = st.KnownDevices();
  PlacerOptions popts;
  for (const DevicePeer& d : known) popts.devices.push_back(DeviceInfo{d.name, d.type});
  popts.default_device = st.config.default_device;
  popts.allow_soft_placement = st.config.allow_soft_placement;
  AF_ASSIGN_OR_RETURN(plan->collective_members, CheckCollectiveMembers(nodes, known));
  AF_ASSIGN_OR_RETURN(auto placement, PlaceNodes(graph, nodes, popts));
  if (st.config.log_device_placement) std::cerr << ExplainPlacement(graph, placement);
  AF_ASSIGN_OR_RETURN(std::vector<DevicePartition> partitions,
                      Partition(graph, nodes, placement, sig.feeds, sig.fetches, sig.targets));

  std::vector<std::string> feed_keys, fetch_keys;
  for (const Endpoint& e : sig.feeds) feed_keys.push_back(e.ToString());
  for (const Endpoint& e : sig.fetches) fetch_keys.push_back(e.ToString());
  std::vector<bool> fetch_covered(fetch_keys.size(), false);
  for (size_t f = 0; f < fetch_keys.size(); ++f) {
    auto it = std::find(feed_keys.begin(), feed_keys.end(), fetch_keys[f]);
    if (it != feed_keys.end()) {
      plan->fed_fetches.emplace_back(static_cast<int>(f), static_cast<int>(it - feed_keys.begin()));
      fetch_covered[f] = true;
    }
  }
  for (DevicePartition& p : partitions) {
    PlanPart part;
    auto dev = std::find_if(known.begin(), known.end(),
                            [&](const DevicePeer& d) { return d.name == p.device; });
    if (dev == known.end()) return Internal("partition for unknown device " + p.device);
    part.device = dev->name;
    part.device_actor = dev->actor;
    for (const std::string& name : p.feeds) {
      auto it = std::find(feed_keys.begin(), feed_keys.end(), CanonicalTensorName(name));
      if (it == feed_keys.end()) return Internal("partition feed '" + name + "' is not a feed");
      part.feed_sources.push_back(static_cast<int>(it - feed_keys.begin()));
    }
    for (const std::string& name : p.fetches) {
      const std::string key = CanonicalTensorName(name);
      int target = -1;
      for (size_t f = 0; f < fetch_keys.size() && target < 0; ++f) {
        if (fetch_keys[f] == key && !fetch_covered[f]) target = static_cast<int>(f);
      }
      if (target < 0) return Internal("partition fetch '" + name + "' is not a fetch");
      fetch_covered[target] = true;
      part.fetch_targets.push_back(target);
    }
    part.partition_id = NextPartitionId(st.ordinal);
    plan->parts.push_back(part);
  }
  // The same tensor fetched twice is computed once; later slots copy the first.
  for (size_t f = 0; f < fetch_keys.size(); ++f) {
    if (fetch_covered[f]) continue;
    int first = -1;
    for (size_t g = 0; g < f && first < 0; ++g) {
      if (fetch_keys[g] == fetch_keys[f]) first = static_cast<int>(g);
    }
    if (first < 0) return Internal("fetch '" + fetch_keys[f] + "' is in no partition");
    plan->duplicate_fetches.emplace_back(static_cast<int>(f), first);
  }

  // Register every partition with its device; steps wait until all answered.
  plan->registrations_pending = static_cast<int>(partitions.size());
  for (size_t i = 0; i < partitions.size(); ++i) {
    PartitionRegistration reg;
    reg.partition_id = plan->parts[i].partition_id;
    reg.session_scope = st.session_scope;
    reg.partition = std::make_shared<DevicePartition>(std::move(partitions[i]));
    reg.peers = known;
    std::weak_ptr<Plan> weak = plan;
    auto on_registered = [self, weak](Status s) {
      auto plan = weak.lock();
      if (!plan) return;
      if (!s.ok() && plan->registration_status.ok()) plan->registration_status = s;
      if (--plan->registrations_pending > 0) return;
      std::vector<std::shared_ptr<StepRequest>> waiting;
      waiting.swap(plan->waiting);
      for (auto& r : waiting) self->send(self, step_atom::value, r);
    };
    const std::string device = plan->parts[i].device;
    Registered& on = st.registered[plan->parts[i].device_actor.address()];
    on.actor = plan->parts[i].device_actor;
    on.device = device;
    on.partition_ids.push_back(reg.partition_id);
    self->request(plan->parts[i].device_actor, caf::infinite, register_atom::value, std::move(reg))
        .then([on_registered](Status& s) { on_registered(s); },
              [on_registered, device](caf::error& e) {
                on_registered(Unavailable("device " + device + " did not register a partition: " +
                                          caf::to_string(e)));
              });
  }
  (void)req;
  return plan;
}

Status ExtendGraph(MasterState& st, std::shared_ptr<const Graph> grown) {
  if (grown == nullptr) return InvalidArgument("extending a session: no graph");
  const Graph& now = *st.graph;
  if (grown->num_nodes() < now.num_nodes()) {
    return InvalidArgument("extending a session: the graph has " +
                           std::to_string(grown->num_nodes()) + " nodes, fewer than the " +
                           std::to_string(now.num_nodes()) + " it had");
  }
  for (int i = 0; i < now.num_nodes(); ++i) {
    const Node& was = *now.node(i);
    const Node& is = *grown->node(i);
    if (was.name() != is.name() || was.op() != is.op()) {
      return InvalidArgument("extending a session: node " + std::to_string(i) + " was '" +
                             was.name() + "' (" + was.op() + "), the graph now has '" + is.name() +
                             "' (" + is.op() + "): only nodes added after the graph's own extend it");
    }
  }
  st.graph = grown.get();
  st.extended_graphs.push_back(std::move(grown));
  return Status::OK();
}

}  // namespace actorflow
