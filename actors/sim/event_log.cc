#include "actors/sim/event_log.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace actorflow {

const char* EventKindName(SimEvent::Kind kind) {
  switch (kind) {
    case SimEvent::Kind::kDelivered: return "delivered";
    case SimEvent::Kind::kDropped: return "dropped";
    case SimEvent::Kind::kDelayed: return "delayed";
    case SimEvent::Kind::kDuplicated: return "duplicated";
    case SimEvent::Kind::kReordered: return "reordered";
    case SimEvent::Kind::kKilled: return "killed";
    case SimEvent::Kind::kRestarted: return "restarted";
  }
  return "?";
}

void EventLog::Mix(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash_ ^= bytes[i];
    hash_ *= 0x100000001b3ULL;  // the FNV prime
  }
}

void EventLog::Record(SimEvent event) {
  // A fixed-width little-endian encoding, each string preceded by its length, so that
  // no two different events encode alike.
  const auto mix_u64 = [this](uint64_t v) {
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(v >> (8 * i));
    Mix(le, sizeof le);
  };
  const auto mix_string = [&](const std::string& s) {
    mix_u64(s.size());
    Mix(s.data(), s.size());
  };
  mix_u64(static_cast<uint64_t>(event.virtual_us));
  mix_u64(static_cast<uint64_t>(event.kind));
  mix_string(event.from);
  mix_string(event.to);
  mix_string(event.message_kind);
  mix_u64(static_cast<uint64_t>(event.bytes));
  mix_string(event.reason);
  ++count_;
  ++by_kind_[static_cast<size_t>(event.kind)];
  if (events_.size() < max_kept_) events_.push_back(std::move(event));
}

void EventLog::MixSeed(uint64_t seed) {
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(seed >> (8 * i));
  Mix(le, sizeof le);
}

std::string EventLog::Hash() const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash_));
  return hex;
}

void EventLog::WriteJsonLines(std::ostream& out) const {
  for (const SimEvent& e : events_) {
    nlohmann::ordered_json line;
    line["us"] = e.virtual_us;
    line["event"] = EventKindName(e.kind);
    line["from"] = e.from;
    line["to"] = e.to;
    line["kind"] = e.message_kind;
    line["bytes"] = e.bytes;
    line["reason"] = e.reason;
    out << line.dump() << "\n";
  }
}

}  // namespace actorflow
