#include "actors/transport/peer_watch.h"

#include <algorithm>
#include <utility>

#include "actors/transport/peer_history.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A refused connection answers at once; one to a partitioned host may not answer at
// all, and the watch must still notice its own destruction soon.
constexpr milliseconds kAttemptWait{200};
constexpr milliseconds kFirstPause{100};
constexpr milliseconds kLongestPause{1000};

}  // namespace

PeerWatch::PeerWatch(std::vector<TaskAddress> peers, milliseconds give_up_after,
                     std::function<void()> on_all_reached)
    : waiting_(std::move(peers)) {
  thread_ = std::thread([this, give_up_after, done = std::move(on_all_reached)]() mutable {
    Watch(give_up_after, std::move(done));
  });
}

PeerWatch::~PeerWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

std::vector<std::string> PeerWatch::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const TaskAddress& peer : waiting_) out.push_back(peer.ToString());
  return out;
}

void PeerWatch::Watch(milliseconds give_up_after, std::function<void()> on_all_reached) {
  const auto give_up = Clock::now() + give_up_after;
  milliseconds pause = kFirstPause;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_ && !waiting_.empty()) {
    std::vector<TaskAddress> round = waiting_;
    lock.unlock();
    // Only this thread changes waiting_; the lock is for waiting()'s readers.
    std::vector<TaskAddress> still_waiting;
    for (size_t i = 0; i < round.size(); ++i) {
      const TaskAddress& peer = round[i];
      if (ProbeTcpConnect(peer.host, peer.port, kAttemptWait).empty()) {
        {
          // Out of waiting() before it is in the history: no reader sees both.
          std::lock_guard<std::mutex> reached(mu_);
          waiting_ = still_waiting;
          waiting_.insert(waiting_.end(), round.begin() + i + 1, round.end());
        }
        NotePeerReached(peer.ToString());
      } else {
        still_waiting.push_back(peer);
      }
    }
    lock.lock();
    waiting_ = std::move(still_waiting);
    if (waiting_.empty()) break;
    if (Clock::now() >= give_up) return;
    stop_cv_.wait_for(lock, pause, [this] { return stopping_; });
    pause = std::min(pause * 2, kLongestPause);
  }
  if (stopping_ || !waiting_.empty()) return;
  lock.unlock();
  if (on_all_reached) on_all_reached();
}

}  // namespace actorflow
