// The shape of a simulated cluster: `--cluster sim:ps=P,worker=W[,devices=D]` of
// `actorflow simulate`, and what it would cost in memory before anything starts.
// CAF-free.
#ifndef ACTORFLOW_ACTORS_SIM_SIM_CLUSTER_SPEC_H_
#define ACTORFLOW_ACTORS_SIM_SIM_CLUSTER_SPEC_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "graph/status.h"
#include "placement/cluster_spec.h"

namespace actorflow {

// The most tasks one job of a simulated cluster may have, and devices per task.
inline constexpr int kMaxSimTasksPerJob = 100000;
inline constexpr int kMaxSimDevicesPerTask = 64;

struct SimClusterShape {
  std::map<std::string, int> tasks;  // job -> task count ("ps", "worker", others)
  int devices_per_task = 1;          // CPU devices of every task

  int64_t TotalTasks() const;
  int64_t TotalDevices() const { return TotalTasks() * devices_per_task; }
  // A ClusterSpec with the same jobs and tasks. Simulated tasks listen nowhere; each
  // gets the placeholder address "<job>-<index>.sim:1" so that names stay unique.
  StatusOr<ClusterSpec> ToClusterSpec() const;
};

// A decimal count without sign or spaces, at most 9 digits (so it fits an int);
// false for anything else.
bool ParseSmallCount(std::string_view digits, int* count);

// Reads "sim:ps=P,worker=W[,devices=D]" (in any order; without ps=P a cluster of
// workers only, for all-reduce training). InvalidArgument naming the part
// for: a missing "sim:" prefix, an entry that is not "key=count", a repeated job, a key
// other than ps, worker and devices, a count that is not an integer, no worker ("a simulated cluster needs at least
// one worker"), a job of 0 tasks, a count above kMaxSimTasksPerJob, devices outside
// 1..kMaxSimDevicesPerTask.
StatusOr<SimClusterShape> ParseSimClusterSpec(std::string_view text);

// What a simulation of `shape` training a model of `model_bytes` (its variables) is
// estimated to hold in memory: per device, its actor, executor and partition
// (kSimBytesPerDevice) plus three model-sized buffers (the worker's copy of the
// variables, its gradients, its activations at batch sizes the simulator runs); per ps
// task, its share of the variables with two optimizer slots.
// Measured (actorflow simulate, Iris, 2 steps): 27 KB a device with one device per
// task (20 000 workers: 537 MB), 28 KB with 64 (12 864 devices: 357 MB), 10 KB with
// 8; 64 KiB leaves a margin of more than 2x, and memory is linear in the devices
// (every task shares one cluster spec).
inline constexpr int64_t kSimBytesPerDevice = 64 * 1024;
int64_t EstimateSimulationBytes(const SimClusterShape& shape, int64_t model_bytes);

// ResourceExhausted, giving the estimate, when it exceeds `available_bytes` (the
// machine's available memory when negative: MemAvailable of /proc/meminfo).
Status CheckSimulationFits(const SimClusterShape& shape, int64_t model_bytes,
                           int64_t available_bytes = -1);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_SIM_CLUSTER_SPEC_H_
