// The network of a simulated cluster: every message from an actor of one task to an
// actor of another passes through a link proxy, which asks the FaultInjector
// (actors/sim/fault_injector.h) whether and when it arrives, records it in the
// EventLog, and delivers it on the actor system's clock (virtual under CAF's test
// coordinator). Includes CAF: actors/ and tests only.
//
// How handles cross: a proxy stands for one actor of the destination task, as seen
// from the source task. A message passing through it gets its sender replaced by the
// reverse proxy (so that answers cross the link too), and the actor handles it
// carries (a front's device list, a partition's peers, a restarted device) replaced
// by proxies from the receiving task back to the sending one. A proxy ends, with its
// target's exit reason, when its target ends, so monitors across tasks work as CAF's
// remote proxies make them work between processes: one link latency later, and after
// every message the target's task sent the other way that is still in flight.
#ifndef ACTORFLOW_ACTORS_SIM_SIM_LINK_H_
#define ACTORFLOW_ACTORS_SIM_SIM_LINK_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include <caf/all.hpp>

#include "actors/sim/event_log.h"
#include "actors/sim/fault_injector.h"

namespace actorflow {

class SimNetwork : public std::enable_shared_from_this<SimNetwork> {
 public:
  SimNetwork(caf::actor_system& system, FaultInjector injector);
  ~SimNetwork();

  // A handle that actors of task `from` use to reach `target`, an actor of task `to`.
  // The same proxy for the same (from, to, target); `target` itself when from == to.
  caf::strong_actor_ptr Link(const TaskId& from, const TaskId& to, caf::strong_actor_ptr target);
  template <class Handle>
  Handle LinkHandle(const TaskId& from, const TaskId& to, const Handle& target) {
    return caf::actor_cast<Handle>(Link(from, to, caf::actor_cast<caf::strong_actor_ptr>(target)));
  }

  // Virtual seconds since the network was made (the system clock's time).
  double NowSeconds() const;

  EventLog& log() { return log_; }
  FaultInjector& injector() { return injector_; }
  std::mutex& mu() { return mu_; }

  // Drops every proxy (each still delivers what it already scheduled).
  void Clear();

  // The latest virtual time a message from task `from` to task `to` is scheduled to
  // arrive (the clock's epoch before the first), as a slot that lives as long as the
  // network: a proxy looks its two directions up once, and reads and raises them
  // under mu(). A proxy delivers its target's death after the target's task's
  // messages in flight, as a connection reports a closed peer after its data.
  caf::actor_clock::time_point* ArrivalSlot(const std::string& from, const std::string& to);

 private:
  caf::actor_system& system_;
  FaultInjector injector_;
  EventLog log_;
  caf::actor_clock::time_point start_;
  std::mutex mu_;          // guards injector_, log_ and last_arrival_
  std::map<std::pair<std::string, std::string>, caf::actor_clock::time_point> last_arrival_;
  std::mutex proxies_mu_;  // guards proxies_
  std::map<std::tuple<std::string, int, std::string, int, caf::actor_addr>, caf::strong_actor_ptr>
      proxies_;
};

// The fault plan's message kind of a message, by its first element's atom: "tensor",
// "push", "pull", "heartbeat", "checkpoint", "queue" or "step" (everything else).
const char* MessageKindOf(const caf::type_erased_tuple& content);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_SIM_LINK_H_
