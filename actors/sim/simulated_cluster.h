// SimulatedCluster: a whole cluster in one process, under one deterministic scheduler
// and a virtual clock, for users' tests. Every task's real actors (fronts, masters,
// devices, parameter shards, queues) run in one actor system driven by CAF's test
// coordinator; every message between tasks crosses a simulated link (latency,
// bandwidth, jitter) and the fault plan (actors/sim/fault_plan.h), and lands in an
// event log whose hash (over the seed and every event) identifies the run. The same options and calls give the same
// event log, results and virtual times on every run and every host. CAF-free.
//
//   SimulatedCluster::Options options;
//   options.shape = *ParseSimClusterSpec("sim:ps=1,worker=2");
//   options.seed = 7;
//   auto cluster = SimulatedCluster::Start(options);
//   auto session = (*cluster)->OpenSession({"worker", 0}, graph);
//   auto outputs = (*cluster)->Run({"worker", 0}, *session, feeds, {"loss"});
//   (*cluster)->KillTask({"worker", 1});
//   EXPECT_EQ((*cluster)->EventLogHash(), expected);
//
// Thread safety: one thread drives a SimulatedCluster (its calls run the whole
// cluster until their answer arrives); under RunDrivers, its driver threads take
// turns (only the one holding the turn calls in).
#ifndef ACTORFLOW_ACTORS_SIM_SIMULATED_CLUSTER_H_
#define ACTORFLOW_ACTORS_SIM_SIMULATED_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/sim/event_log.h"
#include "actors/sim/fault_injector.h"
#include "actors/sim/sim_cluster_spec.h"
#include "actors/sim/sim_training.h"
#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

class SimulatedCluster {
 public:
  struct Options {
    SimClusterShape shape;
    FaultPlan faults;  // message faults act on every link; kill/restart entries are
                       // carried out by the caller's driver (KillTask, RestartTask)
    LinkModel link;
    uint64_t seed = 1;
    // Memory the simulation may use (estimate: sim_cluster_spec.h); <0: what the
    // machine has available.
    int64_t model_bytes = 0;
    int64_t available_bytes = -1;
    // How many timers a call may fire before it gives up (a run that never ends).
    int64_t max_timers_per_call = 1000000;
  };

  // Starts every task. InvalidArgument for bad options (the link, the shape);
  // ResourceExhausted, with the estimate, when the simulation would not fit.
  static StatusOr<std::unique_ptr<SimulatedCluster>> Start(const Options& options);
  ~SimulatedCluster();

  const ClusterSpec& cluster() const;

  // Opens a session of `graph` on `task`'s master; the id names it in Run and Close.
  StatusOr<uint64_t> OpenSession(const TaskId& task, const Graph& graph);
  // One step, running the cluster (firing timers in virtual-time order) until its
  // answer arrives. `timeout_in_ms` is virtual (0: none). `metadata`, when given,
  // gets the step's run metadata (executed nodes, cross-task transfers).
  StatusOr<std::vector<Tensor>> Run(const TaskId& task, uint64_t session, const FeedList& feeds,
                                    const std::vector<std::string>& fetches,
                                    const std::vector<std::string>& targets = {},
                                    int64_t timeout_in_ms = 0, RunMetadata* metadata = nullptr);
  Status CloseSession(const TaskId& task, uint64_t session);
  // The session's graph grew: `graph` is it with nodes added (the front's
  // extend_atom, actors/protocol/front_protocol.h); the session keeps its id,
  // plans and resources.
  Status ExtendSession(const TaskId& task, uint64_t session, const Graph& graph);

  // One step of RunTogether: Run's arguments.
  struct Step {
    TaskId task;
    uint64_t session = 0;
    FeedList feeds;
    std::vector<std::string> fetches;
    std::vector<std::string> targets;
    int64_t timeout_in_ms = 0;  // virtual; 0: none
  };
  // Starts every step at once (in order, at the same virtual time) and runs the
  // cluster until each has answered: what between-graph replicas do, each its own
  // client, when their steps meet (a collective's members, a sync update). One
  // result per step, in order; a step on a dead or unknown task gets Run's error.
  // DeadlineExceeded for the steps still open after max_timers_per_call timers,
  // Internal when the cluster goes quiet with steps open.
  std::vector<StatusOr<std::vector<Tensor>>> RunTogether(const std::vector<Step>& steps);

  // A Session (kernels/session.h) whose steps run on `task`'s master in this
  // cluster: what training code that takes a SessionFactory runs on. It opens its
  // session at the first Run and extends it whenever `graph` has grown since (as a
  // remote session does); RunOptions::timeout_in_ms is virtual. `graph` and this
  // cluster must outlive it.
  std::unique_ptr<Session> NewSession(const TaskId& task, const Graph* graph);

  // Kills a task as if its process died (its actors end; links to it report it
  // down), and brings it back with empty state. FailedPrecondition for a task
  // already dead / alive; InvalidArgument for a task not in the cluster.
  Status KillTask(const TaskId& task);
  Status RestartTask(const TaskId& task);

  // Data-parallel training with parameter servers on this cluster: a worker driver
  // on every worker task, the shards on the ps tasks (actors/sim/sim_training.h says
  // how a run goes, ends and is checked). The fault plan's kill and restart entries
  // are carried out when due (at_step: the global step any worker saw). A run that
  // cannot go on is reported (hung), not an error; InvalidArgument for bad options.
  StatusOr<SimTrainingReport> TrainDataParallel(const SimTrainingOptions& options);

  // A user's driver program, unchanged, as every task of `tasks` would run it under
  // `actorflow launch` (default: every task of job "worker"): one thread per task,
  // on which TfConfigFromEnv() names that task, Server::Start(config) gives a server
  // whose target() opens sessions of this cluster (NewSession,
  // NewMonitoredTrainingSession), and threads started through a Coordinator,
  // waits and sleeps (graph/cooperative.h) run on the virtual clock. One thread runs
  // at a time and the cluster runs while they all wait (actors/sim/driver_turns.h),
  // so the same driver, options and seed give the same event log on every run.
  // The fault plan's kill and restart entries (at_s) are carried out when due: a
  // driver whose task is killed sees its calls fail (its run ends with that error,
  // as the process would die), and once the task is restarted the driver runs on it
  // again, as a restarted process would. The drivers' steps are checked as the
  // report's invariants say.
  struct DriverRun {
    TaskId task;
    Status status;  // what the driver returned (Internal for an exception)
    double started_s = 0, ended_s = 0;  // virtual
  };
  struct DriversReport {
    std::vector<DriverRun> runs;  // in the order they ended
    double virtual_seconds = 0;
    int64_t steps = 0;              // Session::Run calls of the drivers
    int64_t global_step_reads = 0;  // of which fetched the graph's global step
    // steps_end_by_deadline and global_step_monotone (actors/sim/driver_checks.h):
    // every step with a deadline ended by it plus the links' worst round trips; the
    // global step, as each task's drivers read it, never went back.
    std::vector<SimInvariantResult> invariants;
    int64_t invariant_violations() const;
  };
  // InvalidArgument for a task not in the cluster (or named twice), a kill or
  // restart entry given at_step (drivers have no step the simulation could see), or
  // a call from one of the drivers.
  StatusOr<DriversReport> RunDrivers(const std::function<Status()>& driver,
                                     std::vector<TaskId> tasks = {});

  // Runs every message and timer due up to `seconds` of virtual time from now.
  void AdvanceSeconds(double seconds);

  double VirtualSeconds() const;
  const EventLog& event_log() const;
  std::string EventLogHash() const { return event_log().Hash(); }

 private:
  struct Impl;
  explicit SimulatedCluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_SIMULATED_CLUSTER_H_
