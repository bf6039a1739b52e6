#include "placement/replica_device_setter.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "placement/device_name.h"

namespace actorflow {
namespace {

// The bytes of a Variable node's value: its shape and dtype attrs (0 when unknown).
int64_t VariableBytes(const NodeDef& def) {
  auto shape = def.attrs.find("shape");
  auto dtype = def.attrs.find("dtype");
  if (shape == def.attrs.end() || dtype == def.attrs.end() || !shape->second.Is<Shape>() ||
      !dtype->second.Is<DType>()) {
    return 0;
  }
  const int64_t n = shape->second.Get<Shape>().num_elements();
  return n < 0 ? 0 : n * static_cast<int64_t>(DTypeSize(dtype->second.Get<DType>()));
}

// The strategy's state, shared by the copies of one device function.
struct PsChooser {
  PsStrategy strategy;
  int next = 0;                // kRoundRobin: the next task
  std::vector<int64_t> bytes;  // kGreedyBytes: per task, the bytes placed so far

  int Choose(const NodeDef& def) {
    const int tasks = static_cast<int>(bytes.size());
    if (strategy == PsStrategy::kRoundRobin) {
      const int task = next;
      next = (next + 1) % tasks;
      return task;
    }
    const int task = static_cast<int>(std::min_element(bytes.begin(), bytes.end()) - bytes.begin());
    bytes[task] += VariableBytes(def);
    return task;
  }
};

}  // namespace

StatusOr<Scope::DeviceFunction> ReplicaDeviceSetter(const ReplicaDeviceSetterOptions& options) {
  if (options.ps_tasks < 0) {
    return InvalidArgument("replica device setter: ps_tasks must be >= 0, got " +
                           std::to_string(options.ps_tasks));
  }
  auto ps = ParseDeviceSpec(options.ps_device);
  if (!ps.ok()) return ps.status().WithContext("replica device setter: ps_device");
  if (ps->task) {
    return InvalidArgument("replica device setter: ps_device '" + options.ps_device +
                           "' names a task; give the job only (the strategy picks the task)");
  }
  auto worker = ParseDeviceSpec(options.worker_device);
  if (!worker.ok()) return worker.status().WithContext("replica device setter: worker_device");

  auto chooser = std::make_shared<PsChooser>();
  chooser->strategy = options.strategy;
  chooser->bytes.assign(static_cast<size_t>(options.ps_tasks), 0);
  const DeviceSpec ps_spec = *ps;
  const DeviceSpec worker_spec = *worker;
  const std::vector<std::string> ps_ops = options.ps_ops;
  return Scope::DeviceFunction([chooser, ps_spec, worker_spec, ps_ops](const NodeDef& def) {
    // The node's own request wins field by field; one that cannot be read is left
    // as it is, for the placer to report.
    DeviceSpec own;
    if (!def.device.empty()) {
      auto parsed = ParseDeviceSpec(def.device);
      if (!parsed.ok()) return def.device;
      own = *parsed;
    }
    const bool on_ps =
        !chooser->bytes.empty() && std::find(ps_ops.begin(), ps_ops.end(), def.op) != ps_ops.end();
    if (!on_ps) return MergeDefaults(own, worker_spec).ToString();
    DeviceSpec target = ps_spec;
    if (!own.job || own.job == ps_spec.job) target.task = chooser->Choose(def);
    return MergeDefaults(own, target).ToString();
  });
}

StatusOr<Scope::DeviceFunction> ReplicaDeviceSetter(const ClusterSpec& cluster,
                                                    const std::string& worker_device,
                                                    PsStrategy strategy) {
  ReplicaDeviceSetterOptions options;
  options.ps_tasks = cluster.num_tasks("ps");
  options.worker_device = worker_device;
  options.strategy = strategy;
  return ReplicaDeviceSetter(options);
}

}  // namespace actorflow
