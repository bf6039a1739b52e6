#include "actors/transport/connection_ends.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

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
  std::vector<std::weak_ptr<ConnectionClock>> live;  // expired ones pruned on registration
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

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

ConnectionClock::ConnectionClock(std::string peer, int64_t silent_after_ms)
    : peer_(std::move(peer)), silent_after_ms_(silent_after_ms), last_bytes_ns_(NowNs()) {}

void ConnectionClock::BytesArrived() { last_bytes_ns_.store(NowNs(), std::memory_order_relaxed); }

milliseconds ConnectionClock::SilentFor() const {
  return std::chrono::duration_cast<milliseconds>(std::chrono::nanoseconds(
      NowNs() - last_bytes_ns_.load(std::memory_order_relaxed)));
}

bool ConnectionClock::Silent() const {
  return silent_after_ms_ > 0 && !ended_.load(std::memory_order_relaxed) &&
         SilentFor().count() >= silent_after_ms_;
}

std::shared_ptr<ConnectionClock> RegisterConnection(const std::string& peer,
                                                    int64_t silent_after_ms) {
  auto clock = std::make_shared<ConnectionClock>(peer, silent_after_ms);
  Ends& ends = AllEnds();
  std::lock_guard<std::mutex> lock(ends.mu);
  ends.live.erase(std::remove_if(ends.live.begin(), ends.live.end(),
                                 [](const std::weak_ptr<ConnectionClock>& c) { return c.expired(); }),
                  ends.live.end());
  ends.live.push_back(clock);
  return clock;
}

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
  // No end recorded yet: a silent connection whose actors went down before the
  // transport closed it.
  std::shared_ptr<ConnectionClock> silent_own, silent_any;
  bool peer_known = false;  // `peer` has a live connection: only its own tells
  int silent_count = 0;
  for (const std::weak_ptr<ConnectionClock>& weak : ends.live) {
    std::shared_ptr<ConnectionClock> clock = weak.lock();
    if (!clock) continue;
    const bool own_clock = !peer.empty() && clock->peer() == peer;
    peer_known = peer_known || own_clock;
    if (!clock->Silent()) continue;
    if (own_clock) silent_own = clock;
    silent_any = clock;
    ++silent_count;
  }
  if (!peer_known && silent_count == 1) silent_own = silent_any;
  if (silent_own) return Describe(ConnectionEnd::kClosedAfterSilence, silent_own->SilentFor());
  return "its connection closed or went silent";
}

void ForgetConnectionEnds() {
  Ends& ends = AllEnds();
  std::lock_guard<std::mutex> lock(ends.mu);
  ends.recent.clear();
}

}  // namespace actorflow
