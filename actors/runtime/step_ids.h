// Step and partition ids that are unique among every master that may share a
// device, by construction rather than by chance.
//
// Device actors are shared: the ps task's devices serve the masters of every worker
// (each worker task, in its own process, has its own masters), and a long-lived
// Server serves the masters of many sessions. A device keys its rendezvous, its
// active steps and its recently aborted steps by step id, and its partitions by
// partition id, so two masters must never hand it the same id. An id is
//
//   bit 63: 0 (ids are positive)
//   bits 53..62 (10 bits): the task ordinal: 1 + the task's position in the cluster
//       spec (jobs in name order, tasks by index), 0 outside a cluster. Distinct
//       for the processes of distinct tasks.
//   bits 31..52 (22 bits): the process id (Linux caps pids below 2^22). Distinct
//       for processes alive at the same time on one host, so also for a task and
//       its restarted successor while the old one's steps may still be known, and
//       for clients that are not tasks of the cluster.
//   bits 0..30 (31 bits): a counter shared by every master of the process (an
//       atomic increment per id), starting at 1. It wraps after 2^31 ids; a device
//       forgets a step long before that (it remembers the last 4096 aborted ones),
//       so a wrapped id never meets its earlier twin.
// Step ids and partition ids use separate counters.
//
// Limits: at most 1023 tasks in a cluster (larger ordinals wrap, and then only the
// pid keeps such tasks apart on one host).
//
// Thread safety: all functions are safe to call from any thread.
#ifndef ACTORFLOW_ACTORS_RUNTIME_STEP_IDS_H_
#define ACTORFLOW_ACTORS_RUNTIME_STEP_IDS_H_

#include <cstdint>
#include <string>

#include "placement/cluster_spec.h"

namespace actorflow {

// The ordinal of `task_name` ("/job:J/replica:0/task:I") in `cluster`: 1 + its
// position among ClusterSpec::AllTasks() in job-name and index order; 0 when there
// is no cluster or the task is not in it.
uint32_t TaskOrdinal(const ClusterSpec* cluster, const std::string& task_name);

// The next step id (partition id) of this process for a master of task `ordinal`.
int64_t NextStepId(uint32_t ordinal);
uint64_t NextPartitionId(uint32_t ordinal);

// The fields of an id (for tests and diagnostics).
struct IdFields {
  uint32_t ordinal = 0;
  uint32_t process = 0;
  uint32_t counter = 0;
};
IdFields DecodeId(uint64_t id);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_STEP_IDS_H_
