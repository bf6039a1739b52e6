// The event log of a simulated run: every message delivered, dropped, delayed or
// duplicated, and every task killed or restarted, with its virtual time, in the order
// the deterministic scheduler produced them. Its hash is what two runs of one seed
// compare (`event_log_hash` of `actorflow simulate --json`). CAF-free.
#ifndef ACTORFLOW_ACTORS_SIM_EVENT_LOG_H_
#define ACTORFLOW_ACTORS_SIM_EVENT_LOG_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace actorflow {

struct SimEvent {
  enum class Kind { kDelivered, kDropped, kDelayed, kDuplicated, kReordered, kKilled, kRestarted };
  int64_t virtual_us = 0;
  Kind kind = Kind::kDelivered;
  std::string from;          // a task name ("/job:worker/task:1")
  std::string to;            // empty for task events
  std::string message_kind;  // empty for task events
  int64_t bytes = 0;
  std::string reason;        // the fault that acted, if any
};

const char* EventKindName(SimEvent::Kind kind);

class EventLog {
 public:
  // Keeps at most `max_kept` events in memory (the hash covers every event).
  explicit EventLog(size_t max_kept = 1 << 20) : max_kept_(max_kept) {}

  void Record(SimEvent event);
  // Mixes the run's seed into the hash (before any event), so that runs of different
  // seeds hash differently even when their messages happen to be the same.
  void MixSeed(uint64_t seed);

  // FNV-1a (64 bit) over every recorded event's fields in order, as 16 hex digits.
  // Equal logs give equal hashes on every host (fixed-width, little-endian encoding).
  std::string Hash() const;
  uint64_t count() const { return count_; }
  uint64_t Count(SimEvent::Kind kind) const { return by_kind_[static_cast<size_t>(kind)]; }
  // The kept events (the first max_kept).
  const std::vector<SimEvent>& events() const { return events_; }

  // One JSON object per line: {"us", "event", "from", "to", "kind", "bytes", "reason"}.
  void WriteJsonLines(std::ostream& out) const;

 private:
  void Mix(const void* data, size_t size);

  size_t max_kept_;
  std::vector<SimEvent> events_;
  uint64_t count_ = 0;
  uint64_t by_kind_[7] = {};
  uint64_t hash_ = 0xcbf29ce484222325ULL;  // the FNV-1a offset basis
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_EVENT_LOG_H_
