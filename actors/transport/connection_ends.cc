#include "actors/transport/connection_ends.h"

#include <algorithm>
#include <deque>
#include <mutex>

#include "actors/transport/peer_history.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct EndRecord {
  std::string peer;
  ConnectionEnd how;
  milliseconds silent_for;
  Clock::time_point at;
};

constexpr size_t kKeptEnds = 64;
constexpr milliseconds kAnyPeerWindow{250};

struct Ends {
  std::mutex mu;
  std::deque<EndRecord> recent;  // oldest first
};

Ends& AllEnds() {
  static Ends* ends = new Ends();  // never destroyed: used at exit
  return *ends;
}

std::string Describe(ConnectionEnd how, milliseconds silent_for) {
  if (how == ConnectionEnd::kClosedByPeer) {
    return "its connection closed (its process ended, or its host reset the connection)";
  }
  return "nothing came from it for " + SecondsText(silent_for) +
         ", not even heartbeats (it hung, or its link was cut)";
}

}  // namespace

void NoteConnectionEnded(const std::string& peer, ConnectionEnd how, milliseconds silent_for) {
  Ends& ends = AllEnds();
  std::lock_guard<std::mutex> lock(ends.mu);
  ends.recent.push_back({peer, how, silent_for, Clock::now()});
  if (ends.recent.size() > kKeptEnds) ends.recent.pop_front();
}

std::string ConnectionLossCause(const std::string& peer, milliseconds within) {
  Ends& ends = AllEnds();
  std::lock_guard<std::mutex> lock(ends.mu);
  const auto now = Clock::now();
  const auto since = now - within;
  // Without its own record, a loss is told by the ends just before it: its own
  // connection's end comes milliseconds before its actors go down, and older ends
  // (a restarted peer's stale connections) must not blur it.
  const auto since_any = now - std::min(within, kAnyPeerWindow);
  const EndRecord* own = nullptr;
  const EndRecord* any = nullptr;
  bool agree = true;
  for (const EndRecord& end : ends.recent) {
    if (end.at < since) continue;
    if (!peer.empty() && end.peer == peer) own = &end;
    if (end.at < since_any) continue;
    if (any != nullptr && any->how != end.how) agree = false;
    any = &end;
  }
  if (own != nullptr) return Describe(own->how, own->silent_for);
  if (any != nullptr && agree) return Describe(any->how, any->silent_for);
  return "its connection closed or went silent";
}

void ForgetConnectionEnds() {
  Ends& ends = AllEnds();
  std::lock_guard<std::mutex> lock(ends.mu);
  ends.recent.clear();
}

}  // namespace actorflow
