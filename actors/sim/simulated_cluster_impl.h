// The inside of a SimulatedCluster (actors/sim/simulated_cluster.h), shared by the
// files that implement it. Includes CAF: actors/sim only.
#ifndef ACTORFLOW_ACTORS_SIM_SIMULATED_CLUSTER_IMPL_H_
#define ACTORFLOW_ACTORS_SIM_SIMULATED_CLUSTER_IMPL_H_

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <caf/detail/test_actor_clock.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/protocol/front_protocol.h"
#include "actors/sim/driver_turns.h"
#include "actors/sim/sim_link.h"
#include "actors/sim/simulated_cluster.h"
#include "actors/sim/task_directory.h"
#include "actors/cluster/task_actors.h"

namespace actorflow {

class DriverStepChecks;

// A session whose Run fails with *process_end once that is not OK: the client of a
// driver whose simulated process has died (RunDrivers). Its steps are told to
// `checks` (actors/sim/driver_checks.h); a step without a deadline of its own gets
// `default_step_timeout_ms` (virtual; 0: none), as SessionOptions say.
std::unique_ptr<Session> NewSimulatedDriverSession(SimulatedCluster* cluster, const TaskId& task,
                                                   const Graph* graph,
                                                   std::shared_ptr<const Status> process_end,
                                                   std::shared_ptr<DriverStepChecks> checks,
                                                   int64_t default_step_timeout_ms);

// The most virtual time one message of `largest_message_bytes` can spend on a link of
// `sim`, in microseconds: transfer, jitter, and the plan's delays and reorders.
double WorstOneWayMicros(const SimulatedCluster::Options& sim, int64_t largest_message_bytes);

struct SimulatedCluster::Impl {
  struct TaskSlot {
    TaskId id;
    ConnectorActor directory;
    TaskActors actors;
    bool alive = false;
    // Actors that live and die with the task besides its own (a training run's
    // worker driver).
    std::vector<caf::actor> companions;
  };

  Options options;
  ClusterSpec cluster;
  // The same spec, shared by every task's actors (one copy, not one per task).
  std::shared_ptr<const ClusterSpec> shared_cluster;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;
  caf::scheduler::test_coordinator* sched = nullptr;
  std::unique_ptr<caf::scoped_actor> client;
  std::shared_ptr<TaskRegistry> registry = std::make_shared<TaskRegistry>();
  std::shared_ptr<SimNetwork> network;
  std::map<std::string, TaskSlot> tasks;  // by "/job:J/task:I"
  caf::actor_clock::time_point start;
  // Set while RunDrivers runs: calls from its threads wait for their answers through
  // the turns, which run the cluster (actors/sim/driver_turns.h).
  DriverTurns* turns = nullptr;

  ~Impl() {
    for (auto& [name, slot] : tasks) {
      if (slot.alive) StopTaskActors(slot.actors);
      for (caf::actor& a : slot.companions) caf::anon_send_exit(a, caf::exit_reason::kill);
      caf::anon_send_exit(slot.directory, caf::exit_reason::user_shutdown);
    }
    if (sched != nullptr) {
      // Lets the ended actors' pending timers fire; bounded, in case an actor that
      // outlives its task keeps rescheduling one.
      Drain();
      for (int rounds = 0; rounds < 1000 && sched->trigger_timeouts() > 0; ++rounds) Drain();
    }
    if (network) network->Clear();
    client.reset();
    system.reset();
  }

  void Drain() {
    if (drain_deferred) return;
    while (sched->try_run_once()) {
    }
  }

  // Set while RunDrivers carries out a kill or restart: the messages are run by its
  // own loop instead. CAF 0.17 delivers a response with the execution context its
  // promise's maker last ran in (a scheduler loop's stack frame), so every message
  // of a run must be run from loops at one stack depth.
  bool drain_deferred = false;

  void RecordTaskEvent(SimEvent::Kind kind, const TaskId& task) {
    SimEvent event;
    event.virtual_us = static_cast<int64_t>(network->NowSeconds() * 1e6);
    event.kind = kind;
    event.from = task.ToString();
    std::lock_guard<std::mutex> lock(network->mu());
    network->log().Record(std::move(event));
  }

  StatusOr<TaskSlot*> Slot(const TaskId& task) {
    auto it = tasks.find(task.ToString());
    if (it == tasks.end()) {
      return InvalidArgument("task " + task.ToString() + " is not in the simulated cluster");
    }
    return &it->second;
  }

  StatusOr<TaskSlot*> LiveSlot(const TaskId& task) {
    AF_ASSIGN_OR_RETURN(TaskSlot * slot, Slot(task));
    if (!slot->alive) return Unavailable("task " + task.ToString() + " is down (killed)");
    return slot;
  }

  void Spawn(TaskSlot& slot) {
    ServerOptions server;
    server.shared_cluster = shared_cluster;
    server.task = slot.id;
    server.cpus = options.shape.devices_per_task;
    slot.actors = SpawnTaskActors(*system, server, slot.directory);
    registry->Put(cluster.Address(slot.id)->ToString(), slot.id, slot.actors.front);
    slot.alive = true;
    Drain();
  }

  // Sends `xs` to `dest` and runs the cluster, timers in virtual-time order, until
  // `handler` (one of the reply's signature, which sets *answered) has run.
  template <class Handle, class Handler, class... Ts>
  Status AskWith(bool* answered, const Handle& dest, const std::string& what, Handler handler,
                 Ts&&... xs) {
    *answered = false;
    (*client)->send(dest, std::forward<Ts>(xs)...);
    for (int64_t timers = 0; timers <= options.max_timers_per_call; ++timers) {
      Drain();
      (*client)->receive(handler, caf::after(std::chrono::seconds(0)) >> [] {});
      if (*answered) return Status::OK();
      if (!sched->trigger_timeout()) {
        return Internal(what + ": the simulated cluster went quiet without answering");
      }
    }
    return DeadlineExceeded(what + ": no answer after " + std::to_string(options.max_timers_per_call) +
                            " timers of the simulated cluster");
  }

  template <class Reply, class Handle, class... Ts>
  Status Ask(Reply* reply, const Handle& dest, const std::string& what, Ts&&... xs) {
    if (turns != nullptr) {
      if (turns->OnTurnThread()) return AskAsDriver(reply, dest, what, std::forward<Ts>(xs)...);
      // Running the cluster from it would race the drivers' turns.
      return FailedPrecondition(
          what + ": called from a thread the simulated cluster's drivers did not start "
                 "through a Coordinator (graph/cooperative.h), while drivers run");
    }
    bool answered = false;
    return AskWith(
        &answered, dest, what,
        [&](Reply& r) {
          *reply = std::move(r);
          answered = true;
        },
        std::forward<Ts>(xs)...);
  }

  // Ask from a driver thread: the request goes out from an actor of the simulation
  // (scheduled like every other, so the run stays deterministic) and the thread
  // passes the turn until its answer is in.
  template <class Reply, class Handle, class... Ts>
  Status AskAsDriver(Reply* reply, const Handle& dest, const std::string& what, Ts&&... xs) {
    struct Answer {
      bool done = false;
      Status error;
      Reply value;
    };
    auto answer = std::make_shared<Answer>();
    system->spawn([dest, answer, what, request = std::make_tuple(std::forward<Ts>(xs)...)](
                      caf::event_based_actor* self) mutable {
      std::apply(
          [&](auto&&... args) {
            self->request(dest, caf::infinite, std::move(args)...)
                .then(
                    [answer](Reply& r) {
                      answer->value = std::move(r);
                      answer->done = true;
                    },
                    [answer, what](caf::error& e) {
                      answer->error = Unavailable(what + " got no answer: " + caf::to_string(e));
                      answer->done = true;
                    });
          },
          request);
    });
    if (!turns->WaitUntil([answer] { return answer->done; }, -1)) {
      return Internal(what + ": the simulated cluster went quiet without answering");
    }
    AF_RETURN_IF_ERROR(answer->error);
    *reply = std::move(answer->value);
    return Status::OK();
  }
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_SIMULATED_CLUSTER_IMPL_H_
