#include "actors/runtime/step_ids.h"

#include <unistd.h>

#include <atomic>

namespace actorflow {
namespace {

constexpr int kCounterBits = 31;
constexpr int kProcessBits = 22;
constexpr int kOrdinalBits = 10;
constexpr uint64_t kCounterMask = (uint64_t{1} << kCounterBits) - 1;
constexpr uint64_t kProcessMask = (uint64_t{1} << kProcessBits) - 1;
constexpr uint64_t kOrdinalMask = (uint64_t{1} << kOrdinalBits) - 1;

std::atomic<uint64_t> next_step{1};
std::atomic<uint64_t> next_partition{1};

uint64_t Compose(uint32_t ordinal, std::atomic<uint64_t>& counter) {
  // Skip 0 in the counter field after a wrap, so that no id is ever 0.
  uint64_t n = counter.fetch_add(1, std::memory_order_relaxed) & kCounterMask;
  if (n == 0) n = counter.fetch_add(1, std::memory_order_relaxed) & kCounterMask;
  static const uint64_t process = static_cast<uint64_t>(getpid()) & kProcessMask;
  return ((ordinal & kOrdinalMask) << (kCounterBits + kProcessBits)) |
         (process << kCounterBits) | n;
}

}  // namespace

uint32_t TaskOrdinal(const ClusterSpec* cluster, const std::string& task_name) {
  if (cluster == nullptr || task_name.empty()) return 0;
  const std::vector<TaskId> tasks = cluster->AllTasks();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (ClusterSpec::TaskName(tasks[i]) == task_name) return static_cast<uint32_t>(i + 1);
  }
  return 0;
}

int64_t NextStepId(uint32_t ordinal) { return static_cast<int64_t>(Compose(ordinal, next_step)); }

uint64_t NextPartitionId(uint32_t ordinal) { return Compose(ordinal, next_partition); }

IdFields DecodeId(uint64_t id) {
  IdFields f;
  f.counter = static_cast<uint32_t>(id & kCounterMask);
  f.process = static_cast<uint32_t>((id >> kCounterBits) & kProcessMask);
  f.ordinal = static_cast<uint32_t>((id >> (kCounterBits + kProcessBits)) & kOrdinalMask);
  return f;
}

}  // namespace actorflow
