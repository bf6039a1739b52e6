// PeerWatch: finds out, once, that each other task of the cluster is up, so that a
// task killed later is named at once by whoever connects to it next, rather than
// waited for as one still starting (actors/transport/peer_history.h). A server that
// never connected to a peer (its first session using that peer comes after the
// peer died) would otherwise wait out the whole connect budget.
//
// A background thread tries a TCP connection to every address that has not
// answered yet (closing it at once), backing off from 100 ms to 1 s between rounds,
// and records each answer with NotePeerReached. It ends when every address has
// answered, after `give_up_after`, or when the watch is destroyed. It blocks no
// actor: it is a plain thread of the process. CAF-free.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_PEER_WATCH_H_
#define ACTORFLOW_ACTORS_TRANSPORT_PEER_WATCH_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "placement/cluster_spec.h"

namespace actorflow {

class PeerWatch {
 public:
  // Starts watching `peers`. `on_all_reached` (may be empty) runs once, on the
  // watch's thread, when every peer has answered.
  PeerWatch(std::vector<TaskAddress> peers, std::chrono::milliseconds give_up_after,
            std::function<void()> on_all_reached);
  // Stops the thread (within one connection attempt) and joins it.
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // The peers that have not answered yet, as "host:port". A peer leaves this list
  // before the peer history records it (SincePeerReached), never after.
  std::vector<std::string> waiting() const;

 private:
  void Watch(std::chrono::milliseconds give_up_after, std::function<void()> on_all_reached);

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::vector<TaskAddress> waiting_;
  std::thread thread_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_PEER_WATCH_H_
