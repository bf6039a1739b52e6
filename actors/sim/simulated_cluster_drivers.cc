// SimulatedCluster::RunDrivers: users' driver programs, unchanged, on the simulated
// cluster, one thread per task taking turns (actors/sim/driver_turns.h).
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "actors/cluster/driver_environment.h"
#include "actors/cluster/server.h"
#include "actors/sim/driver_checks.h"
#include "actors/sim/driver_turns.h"
#include "actors/sim/simulated_cluster.h"
#include "actors/sim/simulated_cluster_impl.h"

namespace actorflow {
namespace {

using driver_timer_atom = caf::atom_constant<caf::atom("drvtimer")>;

constexpr char kTargetPrefix[] = "actorflow://";

// The process the calling driver thread stands for: not OK once its task was killed
// (set on a driver's own thread, where it opens its sessions).
thread_local std::shared_ptr<const Status> current_process_end;

// What a driver's Server::Start(config) gives on a simulated cluster: the task runs
// in the simulation already, so the server only names it.
class SimulatedTaskServer final : public Server {
 public:
  explicit SimulatedTaskServer(TaskAddress address) : address_(std::move(address)) {}
  uint16_t port() const override { return address_.port; }
  std::string host() const override { return address_.host; }
  void SetCluster(const ClusterSpec& /*cluster*/) override {}
  void Stop() override {}
  Status failure() const override { return Status::OK(); }
  BulkChannelStats bulk_received() const override { return {}; }
  std::string bulk_endpoint() const override { return ""; }
  BulkChannelStats bulk_sent() const override { return {}; }
  uint16_t step_port() const override { return 0; }
  int64_t steps_on_step_channel() const override { return 0; }

 private:
  TaskAddress address_;
};

class SimulatedDriverEnvironment final : public DriverEnvironment {
 public:
  SimulatedDriverEnvironment(SimulatedCluster* cluster, std::shared_ptr<DriverStepChecks> checks)
      : cluster_(cluster), checks_(std::move(checks)) {
    for (const TaskId& task : cluster->cluster().AllTasks()) {
      StatusOr<TaskAddress> address = cluster->cluster().Address(task);
      if (address.ok()) tasks_[kTargetPrefix + address->ToString()] = task;
    }
  }

  StatusOr<std::unique_ptr<Server>> StartServer(const TfConfig& config) override {
    StatusOr<TaskAddress> address = cluster_->cluster().Address(config.task);
    if (!address.ok()) {
      return InvalidArgument("Server::Start on the simulated cluster: task " +
                             config.task.ToString() + " is not one of its tasks");
    }
    return std::unique_ptr<Server>(std::make_unique<SimulatedTaskServer>(*address));
  }

  bool Serves(const std::string& target) const override { return tasks_.count(target) > 0; }

  StatusOr<std::unique_ptr<Session>> OpenSession(const Graph* graph,
                                                 const SessionOptions& options) override {
    auto it = tasks_.find(options.target);
    if (it == tasks_.end()) {
      return InvalidArgument("target '" + options.target + "' is not a task of the simulated cluster");
    }
    return NewSimulatedDriverSession(cluster_, it->second, graph, current_process_end, checks_,
                                     options.default_step_timeout_in_ms);
  }

 private:
  SimulatedCluster* cluster_;
  std::shared_ptr<DriverStepChecks> checks_;
  std::map<std::string, TaskId> tasks_;  // by target
};

// A kill or restart of the plan, carried out once its time comes.
struct DueFault {
  bool kill = true;
  TaskId task;
  double at_s = 0;
  bool fired = false;  // its timer went off (set inside the simulation)
  bool done = false;   // carried out
};

// One task's driver across its runs.
struct TaskDriver {
  TaskId task;
  bool running = false;
  bool rerun = false;  // the task was killed since the current (or last) run began
  // The current run's process: not OK once its task was killed (its sessions fail).
  std::shared_ptr<Status> process_end;
};

}  // namespace

int64_t SimulatedCluster::DriversReport::invariant_violations() const {
  int64_t n = 0;
  for (const SimInvariantResult& r : invariants) n += static_cast<int64_t>(r.violations.size());
  return n;
}

StatusOr<SimulatedCluster::DriversReport> SimulatedCluster::RunDrivers(
    const std::function<Status()>& driver, std::vector<TaskId> tasks) {
  if (impl_->turns != nullptr) {
    return InvalidArgument("RunDrivers: drivers are running already (a driver cannot run more)");
  }
  if (!driver) return InvalidArgument("RunDrivers: no driver function");
  if (tasks.empty()) {
    for (const TaskId& task : impl_->cluster.AllTasks()) {
      if (task.job == "worker") tasks.push_back(task);
    }
    if (tasks.empty()) {
      return InvalidArgument("RunDrivers: no tasks given, and the cluster has no job 'worker'");
    }
  }
  std::map<std::string, TaskDriver> drivers;
  for (const TaskId& task : tasks) {
    AF_RETURN_IF_ERROR(impl_->Slot(task).status().WithContext("RunDrivers"));
    if (drivers.count(task.ToString()) > 0) {
      return InvalidArgument("RunDrivers: task " + task.ToString() + " is named twice");
    }
    drivers[task.ToString()].task = task;
  }
  std::vector<DueFault> due;
  for (size_t i = 0; i < impl_->options.faults.faults.size(); ++i) {
    const Fault& f = impl_->options.faults.faults[i];
    if (f.action != Fault::Action::kKill && f.action != Fault::Action::kRestart) continue;
    if (f.at_step >= 0) {
      return InvalidArgument("RunDrivers: faults[" + std::to_string(i) + "] (" +
                             ActionName(f.action) + " " + f.task.ToString() +
                             ") is given at_step; drivers' kills and restarts take at_s");
    }
    due.push_back(DueFault{f.action == Fault::Action::kKill, f.task, f.at_s});
  }

  DriversReport report;
  const Options& sim = impl_->options;
  // A step's answer past its deadline crosses two round trips: the client's to the
  // master, and the master's to the step's partitions (whose aborts it collects).
  auto checks = std::make_shared<DriverStepChecks>(
      [&sim](int64_t bytes) { return 4 * WorstOneWayMicros(sim, bytes + 4096); });
  SimulatedDriverEnvironment environment(this, checks);
  int64_t timers = 0;
  std::unique_ptr<DriverTurns> turns;
  std::function<void(TaskDriver&)> start_run;
  const auto alive = [this](const TaskId& task) {
    StatusOr<Impl::TaskSlot*> slot = impl_->Slot(task);
    return slot.ok() && (*slot)->alive;
  };
  const auto carry_out = [&](const DueFault& fault) {
    impl_->drain_deferred = true;
    struct Undefer {
      Impl* impl;
      ~Undefer() { impl->drain_deferred = false; }
    } undefer{impl_.get()};
    auto it = drivers.find(fault.task.ToString());
    if (fault.kill) {
      if (!KillTask(fault.task).ok() || it == drivers.end()) return;
      it->second.rerun = true;
      if (it->second.running) {
        *it->second.process_end = Cancelled(
            "task " + fault.task.ToString() + " was killed at virtual second " +
            std::to_string(VirtualSeconds()) + ": this run of its driver ends, as its process would");
      }
      return;
    }
    if (!RestartTask(fault.task).ok() || it == drivers.end()) return;
    TaskDriver& task_driver = it->second;
    if (!task_driver.running && task_driver.rerun) {
      task_driver.rerun = false;
      start_run(task_driver);
    }
  };

  DriverTurns::Hooks hooks;
  hooks.now_micros = [this] { return static_cast<int64_t>(VirtualSeconds() * 1e6); };
  hooks.start_timer = [this](int64_t us, std::function<void()> fire) {
    impl_->system->spawn([us, fire = std::move(fire)](caf::event_based_actor* self) -> caf::behavior {
      self->delayed_send(self, std::chrono::microseconds(std::max<int64_t>(us, 0)),
                         driver_timer_atom::value);
      return {[self, fire](driver_timer_atom) {
        fire();
        self->quit();
      }};
    });
  };
  hooks.more_to_come = [&due] {
    for (const DueFault& fault : due) {
      if (!fault.done) return true;
    }
    return false;
  };
  hooks.advance = [&] {
    bool worked = false;
    while (impl_->sched->try_run_once()) worked = true;
    for (DueFault& fault : due) {
      if (fault.fired && !fault.done) {
        fault.done = true;
        carry_out(fault);
        worked = true;
      }
    }
    if (worked) return true;
    if (timers >= impl_->options.max_timers_per_call) return false;
    if (!impl_->sched->trigger_timeout()) return false;
    ++timers;
    return true;
  };
  // A thread a driver starts belongs to the driver's simulated process: its task's
  // TfConfig, the simulated sessions, and the process's end when the task is killed.
  hooks.adopter_context = [&environment]() -> std::function<void(const std::function<void()>&)> {
    StatusOr<TfConfig> config = TfConfigFromEnv();
    std::shared_ptr<const Status> process_end = current_process_end;
    return [config, process_end, &environment](const std::function<void()>& body) {
      std::unique_ptr<ScopedTfConfig> scoped_config;
      if (config.ok()) scoped_config = std::make_unique<ScopedTfConfig>(*config);
      ScopedDriverEnvironment scoped_environment(&environment);
      current_process_end = process_end;
      body();
      current_process_end = nullptr;
    };
  };
  const auto start_timer = hooks.start_timer;
  turns = std::make_unique<DriverTurns>(std::move(hooks));

  start_run = [&](TaskDriver& task_driver) {
    task_driver.running = true;
    task_driver.process_end = std::make_shared<Status>();
    const double started = VirtualSeconds();
    turns->Start("the driver of " + task_driver.task.ToString(), [&, started] {
      Status status;
      {
        ScopedTfConfig config(TfConfig{impl_->cluster, task_driver.task});
        ScopedDriverEnvironment scoped_environment(&environment);
        current_process_end = task_driver.process_end;
        try {
          status = driver();
        } catch (const std::exception& e) {
          status = Internal("the driver on " + task_driver.task.ToString() + " threw: " + e.what());
        } catch (...) {
          status = Internal("the driver on " + task_driver.task.ToString() + " threw");
        }
      }
      current_process_end = nullptr;
      report.runs.push_back(DriverRun{task_driver.task, status, started, VirtualSeconds()});
      task_driver.running = false;
      if (task_driver.rerun && alive(task_driver.task)) {
        task_driver.rerun = false;
        start_run(task_driver);
      }
    });
  };

  impl_->turns = turns.get();
  for (DueFault& fault : due) {
    const double in_s = fault.at_s - VirtualSeconds();
    start_timer(static_cast<int64_t>(in_s * 1e6), [&fault] { fault.fired = true; });
  }
  for (const TaskId& task : tasks) start_run(drivers[task.ToString()]);
  turns->Run();
  turns.reset();  // joins the drivers' threads
  impl_->turns = nullptr;
  report.virtual_seconds = VirtualSeconds();
  report.steps = checks->steps();
  report.global_step_reads = checks->global_step_reads();
  report.invariants = checks->Results();
  return report;
}

}  // namespace actorflow
