#include "placement/placer.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <tuple>

#include "kernels/kernel.h"
#include "placement/device_name.h"

namespace actorflow {
namespace {

struct AvailableDevice {
  std::string name;  // canonical full name
  DeviceSpec spec;
  std::string type;  // kernel registry device type
};

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  // The smaller id becomes the root, so a group's root is its first member.
  void Union(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

std::string SingleQuoted(const std::string& s) { return "'" + s + "'"; }

std::string DeviceList(const std::vector<AvailableDevice>& devices) {
  std::string out;
  for (const AvailableDevice& d : devices) out += (out.empty() ? "" : ", ") + d.name;
  return out;
}

StatusOr<std::vector<AvailableDevice>> CollectDevices(const PlacerOptions& options,
                                                      const DeviceSpec& default_spec) {
  std::vector<DeviceInfo> infos = options.devices;
  if (infos.empty()) {
    DeviceSpec only = MergeDefaults(default_spec, ParseDeviceSpec(kLocalCpuDeviceName).value());
    infos.push_back(DeviceInfo{only.ToString(), kDeviceCpu});
  }
  std::vector<AvailableDevice> devices;
  for (const DeviceInfo& info : infos) {
    auto spec = ParseDeviceSpec(info.name);
    if (!spec.ok()) return spec.status().WithContext("available devices");
    if (!spec->IsFullySpecified()) {
      return InvalidArgument("available device '" + info.name +
                             "' is not a full device name (expected "
                             "/job:NAME/replica:N/task:N/device:TYPE:N)");
    }
    if (!info.type.empty() && info.type != *spec->type) {
      return InvalidArgument("available device '" + info.name + "' has type '" + info.type +
                             "' but its name says '" + *spec->type + "'");
    }
    AvailableDevice d{spec->ToString(), *spec, *spec->type};
    for (const AvailableDevice& other : devices) {
      if (other.name == d.name) return InvalidArgument("device '" + d.name + "' is listed twice");
    }
    devices.push_back(std::move(d));
  }
  return devices;
}

// The devices matching `spec`, best first: the default device's task, then its type,
// then the lowest task and id.
std::vector<const AvailableDevice*> Candidates(const std::vector<AvailableDevice>& devices,
                                               const DeviceSpec& spec,
                                               const DeviceSpec& default_device) {
  std::vector<const AvailableDevice*> out;
  for (const AvailableDevice& d : devices) {
    if (Matches(spec, d.spec)) out.push_back(&d);
  }
  const DeviceSpec default_task = default_device.TaskPart();
  auto key = [&](const AvailableDevice* d) {
    return std::make_tuple(!Matches(default_task, d->spec), d->type != default_device.type,
                           *d->spec.job, *d->spec.replica, *d->spec.task, d->type, *d->spec.id);
  };
  std::stable_sort(out.begin(), out.end(), [&](const AvailableDevice* a, const AvailableDevice* b) {
    return key(a) < key(b);
  });
  return out;
}

// "no GPU kernel for op Mul with dtype int32 (registered dtypes: float32)", or ""
// when every member has its kernel on `type`. Sets *culprit to the first member
// without one.
std::string MissingKernel(const std::vector<const Node*>& members, const std::string& type,
                          const Node** culprit) {
  for (const Node* n : members) {
    if (KernelRegistry::Global().HasKernel(n->op(), type, n->kernel_dtype())) continue;
    *culprit = n;
    std::string registered;
    for (DType d : KernelRegistry::Global().RegisteredDTypes(n->op(), type)) {
      registered += (registered.empty() ? "" : ", ") + std::string(DTypeName(d));
    }
    return "no " + type + " kernel for op " + n->op() + " with dtype " +
           DTypeName(n->kernel_dtype()) +
           (registered.empty() ? "" : " (registered dtypes: " + registered + ")");
  }
  return "";
}

// The first candidate on which every member has a kernel; nullptr if none. `why`
// explains the first candidate's missing kernel.
const AvailableDevice* FirstWithKernels(const std::vector<const AvailableDevice*>& candidates,
                                        const std::vector<const Node*>& members, std::string* why,
                                        const Node** culprit) {
  for (const AvailableDevice* d : candidates) {
    const Node* missing = nullptr;
    std::string text = MissingKernel(members, d->type, &missing);
    if (text.empty()) return d;
    if (why->empty()) {
      *why = text;
      *culprit = missing;
    }
  }
  return nullptr;
}

// Colocation groups over the whole graph: ref inputs and "_class" = ["loc:@x"].
StatusOr<UnionFind> ColocationGroups(const Graph& graph) {
  UnionFind groups(graph.num_nodes());
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* n = graph.node(id);
    for (int k = 0; k < n->num_inputs(); ++k) {
      if (n->IsRefInput(k)) groups.Union(id, n->input(k).node->id());
    }
    auto it = n->attrs().find("_class");
    if (it == n->attrs().end()) continue;
    std::vector<std::string> entries;
    if (it->second.Is<std::string>()) {
      entries.push_back(it->second.Get<std::string>());
    } else if (it->second.Is<std::vector<std::string>>()) {
      entries = it->second.Get<std::vector<std::string>>();
    } else {
      return InvalidArgument(n->Describe() + ": attr '_class' must be a list of strings " +
                             "like [\"loc:@other\"], got " + it->second.DebugString());
    }
    const std::string kPrefix = "loc:@";
    for (const std::string& entry : entries) {
      if (entry.compare(0, kPrefix.size(), kPrefix) != 0) continue;
      const Node* other = graph.FindNode(entry.substr(kPrefix.size()));
      if (other == nullptr) {
        return InvalidArgument(n->Describe() + ": attr '_class' asks for colocation with '" +
                               entry + "' but the graph has no node '" +
                               entry.substr(kPrefix.size()) + "'");
      }
      groups.Union(id, other->id());
    }
  }
  return groups;
}

struct Request {
  const Node* node;
  DeviceSpec spec;
};

// Places one colocation group; writes a Placement for every member.
Status PlaceGroup(const std::vector<const Node*>& members,
                  const std::vector<AvailableDevice>& devices, const AvailableDevice& def,
                  const PlacerOptions& options, std::map<int, Placement>* out) {
  std::vector<Request> requests;
  DeviceSpec merged;
  for (const Node* n : members) {
    if (n->requested_device().empty()) continue;
    auto spec = ParseDeviceSpec(n->requested_device());
    if (!spec.ok()) return spec.status().WithContext(n->Describe());
    for (const Request& r : requests) {
      if (!IsCompatible(r.spec, *spec)) {
        return InvalidArgument("cannot colocate " + r.node->Describe() + " (requested device " +
                               SingleQuoted(r.node->requested_device()) + ") with " +
                               n->Describe() + " (requested device " +
                               SingleQuoted(n->requested_device()) +
                               "): the requests conflict, but colocated nodes (a ref input or "
                               "'_class') must share one device");
      }
    }
    merged = MergeDefaults(merged, *spec);
    requests.push_back(Request{n, *spec});
  }

  auto assign = [&](const AvailableDevice& d, const std::function<std::string(const Node*)>& why) {
    for (const Node* n : members) (*out)[n->id()] = Placement{d.name, why(n)};
  };

  if (requests.empty()) {
    const Node* culprit = nullptr;
    std::string missing = MissingKernel(members, def.type, &culprit);
    if (!missing.empty() && def.type != kDeviceCpu) {
      // A GPU default is a preference, as in TensorFlow: a group it has no kernel
      // for (integer ops) runs on the default task's CPU.
      DeviceSpec cpu = def.spec.TaskPart();
      cpu.type = kDeviceCpu;
      std::string unused;
      const Node* unused_culprit = nullptr;
      if (const AvailableDevice* d = FirstWithKernels(Candidates(devices, cpu, def.spec), members,
                                                      &unused, &unused_culprit)) {
        const std::string reason = "default, on the CPU: " + missing + " (default device " +
                                   def.name + ")";
        assign(*d, [&](const Node*) { return reason; });
        return Status::OK();
      }
    }
    if (!missing.empty()) {
      return InvalidArgument("cannot place " + culprit->Describe() + " on the default device " +
                             def.name + ": " + missing +
                             "; request a device that has one (NodeDef.device)");
    }
    assign(def, [](const Node*) { return std::string("default"); });
    return Status::OK();
  }

  const Node* anchor = requests.front().node;
  const std::string requested = anchor->requested_device();
  std::vector<const AvailableDevice*> candidates = Candidates(devices, merged, def.spec);
  std::string why;
  const Node* culprit = nullptr;
  if (const AvailableDevice* d = FirstWithKernels(candidates, members, &why, &culprit)) {
    assign(*d, [&](const Node* n) {
      return n->requested_device().empty() ? "colocated with " + anchor->name()
                                           : "requested " + n->requested_device();
    });
    return Status::OK();
  }
  if (candidates.empty()) why = "no available device matches it";

  if (options.allow_soft_placement) {
    // The CPU of the requested task, else of the default task.
    DeviceSpec task_cpu = MergeDefaults(merged.TaskPart(), def.spec.TaskPart());
    task_cpu.type = kDeviceCpu;
    DeviceSpec default_cpu = def.spec.TaskPart();
    default_cpu.type = kDeviceCpu;
    for (const DeviceSpec& fallback : {task_cpu, default_cpu}) {
      std::string unused;
      const Node* unused_culprit = nullptr;
      const AvailableDevice* d = FirstWithKernels(Candidates(devices, fallback, def.spec), members,
                                                  &unused, &unused_culprit);
      if (d == nullptr) continue;
      std::string reason = "soft placement: " + why + " (requested " + requested + ")";
      assign(*d, [&](const Node*) { return reason; });
      return Status::OK();
    }
  }

  std::string subject = culprit != nullptr && culprit != anchor
                            ? culprit->Describe() + ", colocated with " + anchor->Describe() + ","
                            : anchor->Describe();
  std::string message = "cannot place " + subject + " on the requested device " +
                        SingleQuoted(requested) + ": " + why;
  if (candidates.empty()) message += "; available devices: " + DeviceList(devices);
  message += options.allow_soft_placement
                 ? "; no CPU of the requested or the default task can run the group either"
                 : ". Set allow_soft_placement to let it run on a CPU instead";
  return InvalidArgument(message);
}

}  // namespace

StatusOr<std::map<int, Placement>> PlaceNodes(const Graph& graph,
                                              const std::vector<const Node*>& nodes,
                                              const PlacerOptions& options) {
  const std::string default_name =
      options.default_device.empty() ? kLocalCpuDeviceName : options.default_device;
  auto default_spec = ParseDeviceSpec(default_name);
  if (!default_spec.ok()) return default_spec.status().WithContext("default device");
  AF_ASSIGN_OR_RETURN(std::vector<AvailableDevice> devices, CollectDevices(options, *default_spec));

  // A partial default resolves to its best match.
  std::vector<const AvailableDevice*> defaults = Candidates(devices, *default_spec, *default_spec);
  if (defaults.empty()) {
    return InvalidArgument("default device '" + default_name +
                           "' is not among the available devices: " + DeviceList(devices));
  }
  const AvailableDevice* def = defaults.front();

  AF_ASSIGN_OR_RETURN(UnionFind groups, ColocationGroups(graph));
  std::map<int, std::vector<const Node*>> members;  // by group root
  for (int id = 0; id < graph.num_nodes(); ++id) {
    members[groups.Find(id)].push_back(graph.node(id));
  }

  std::map<int, Placement> all;
  for (const Node* n : nodes) {
    if (n == nullptr || n->id() < 0 || n->id() >= graph.num_nodes() || graph.node(n->id()) != n) {
      return InvalidArgument("PlaceNodes: a node in the set does not belong to the graph" +
                             (n == nullptr ? std::string() : ": " + n->Describe()));
    }
    if (all.count(n->id())) continue;
    AF_RETURN_IF_ERROR(PlaceGroup(members[groups.Find(n->id())], devices, *def, options, &all));
  }
  std::map<int, Placement> placement;
  for (const Node* n : nodes) placement[n->id()] = all[n->id()];
  return placement;
}

std::string ExplainPlacement(const Graph& graph, const std::map<int, Placement>& placement) {
  std::string out;
  for (const auto& [id, p] : placement) {
    const Node* n = id >= 0 && id < graph.num_nodes() ? graph.node(id) : nullptr;
    out += (n != nullptr ? n->name() + " (" + n->op() + ")" : "<node " + std::to_string(id) + ">");
    out += ": " + p.device + " \u2014 " + p.reason + "\n";
  }
  return out;
}

}  // namespace actorflow
