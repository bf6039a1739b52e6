#include "actors/runtime/master_actor.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>

#include "actors/transport/connect.h"
#include "actors/transport/server_limits.h"
#include "actors/runtime/master_state.h"
#include "actors/runtime/step_ids.h"
#include "graph/steady_clock.h"

namespace actorflow {
namespace {

std::string SignatureKey(const StepRequest& req) {
  std::string key;
  for (const auto& f : req.feeds) key += f.first + ',';
  key += '|';
  for (const auto& f : req.fetches) key += f + ',';
  key += '|';
  for (const auto& t : req.targets) key += t + ',';
  return key;
}

void Reply(const std::shared_ptr<StepRequest>& req, Status status, std::vector<Tensor> out = {},
           RunMetadata meta = RunMetadata()) {
  if (req->reply) {
    // `req` holds the reply past Deliver's unlock (its contract).
    req->reply->Deliver(std::move(status), std::move(out), std::move(meta));
    return;
  }
  req->promise.deliver(MakeRemoteStepResult(std::move(status), std::move(out), std::move(meta)));
}

Status ValidateFeeds(const StepRequest& req, const RunSignature& sig) {
  for (size_t i = 0; i < req.feeds.size(); ++i) {
    AF_RETURN_IF_ERROR(ValidateFeed(req.feeds[i].first, sig.feeds[i], req.feeds[i].second));
  }
  return Status::OK();
}

// The plan's DirectPlan (made on first use), or null when its steps need the master:
// more than one partition, registrations not all done, or collectives (whose
// members' tasks only the master watches).
std::shared_ptr<DirectPlan> DirectPlanOf(const MasterState& st, Plan* plan) {
  if (plan->parts.size() != 1 || plan->registrations_pending > 0 ||
      !plan->registration_status.ok() || !plan->collective_members.empty()) {
    return nullptr;
  }
  if (plan->direct == nullptr) {
    const PlanPart& part = plan->parts.front();
    auto d = std::make_shared<DirectPlan>();
    d->device_actor = part.device_actor;
    d->device = std::make_shared<const std::string>(part.device);
    d->partition_id = part.partition_id;
    d->ordinal = st.ordinal;
    d->signature = plan->signature;
    d->feed_sources = part.feed_sources;
    d->fetch_targets = part.fetch_targets;
    d->fed_fetches = plan->fed_fetches;
    d->duplicate_fetches = plan->duplicate_fetches;
    plan->direct = std::move(d);
  }
  return plan->direct;
}

void FinishStep(MasterSelf self, const std::shared_ptr<StepInFlight>& step) {
  self->state.in_flight.erase(step->step_id);
  if (!step->status.ok()) return Reply(step->request, step->status);
  RunMetadata meta;
  if (step->request->want_metadata) meta = BuildMetadata(*self->state.graph, step.get());
  for (const auto& [fetch, feed] : step->plan->fed_fetches) {
    step->outputs[fetch] = step->request->feeds[feed].second;
  }
  for (const auto& [fetch, first] : step->plan->duplicate_fetches) {
    step->outputs[fetch] = step->outputs[first];
  }
  if (step->request->accepts_direct && step->request->reply != nullptr) {
    step->request->reply->direct = DirectPlanOf(self->state, step->plan.get());
  }
  Reply(step->request, Status::OK(), std::move(step->outputs), std::move(meta));
}

void AbortStep(MasterSelf self, const StepInFlight& step, const Status& status) {
  for (const PlanPart& part : step.plan->parts) {
    self->send(part.device_actor, abort_atom::value, AbortRequest{step.step_id, status});
  }
}

void PartDone(MasterSelf self, const std::shared_ptr<StepInFlight>& step, size_t part_index,
              RunPartitionResult result) {
  if (step->part_done[part_index]) return;  // already settled (its device went down)
  step->part_done[part_index] = true;
  const PlanPart& part = step->plan->parts[part_index];
  if (!result.status.ok()) {
    if (step->status.ok()) {
      step->status = result.status.WithContext("on device " + part.device);
      AbortStep(self, *step, step->status);
    }
  } else {
    for (size_t k = 0; k < part.fetch_targets.size() && k < result.fetches.size(); ++k) {
      step->outputs[part.fetch_targets[k]] = std::move(result.fetches[k]);
    }
    if (step->request->want_metadata) {
      for (size_t k = 0; k < result.executed_nodes.size(); ++k) {
        int64_t start =
            k < result.executed_start_micros.size() ? result.executed_start_micros[k] : 0;
        step->executed.emplace_back(start, std::move(result.executed_nodes[k]));
      }
      const int64_t offset = ClockOffset(*step, part_index, part.device, result);
      for (NodeExecStats& s : result.step_stats) {
        s.start_micros -= offset;
        s.end_micros -= offset;
        step->stats.push_back(std::move(s));
      }
      for (CrossDeviceTransfer& t : result.transfers) step->transfers.push_back(std::move(t));
    }
  }
  if (--step->remaining == 0) FinishStep(self, step);
}

void EnsureHeartbeat(MasterSelf self);

// Step deadlines are the master's: one timer at the earliest deadline in flight. A
// timed request per partition instead would wake the actor clock's thread twice a
// step (to arm and to cancel), a sizeable share of a small step's CPU.
void ArmDeadlineCheck(MasterSelf self, caf::actor_clock::time_point deadline) {
  MasterState& st = self->state;
  if (st.deadline_check_armed && st.deadline_check_at <= deadline) return;
  st.deadline_check_armed = true;
  st.deadline_check_at = deadline;
  const auto wait = std::max(deadline - self->clock().now(), caf::actor_clock::duration_type{0});
  self->delayed_send(self, wait, step_deadline_atom::value, ++st.deadline_generation);
}

// Ends every step past its deadline, as a timed-out run request did: each part
// still running is done with DeadlineExceeded (the first names its device and
// aborts the step everywhere); then re-arms for the next deadline.
void CheckDeadlines(MasterSelf self, uint64_t generation) {
  MasterState& st = self->state;
  if (generation != st.deadline_generation) return;  // re-armed earlier since
  st.deadline_check_armed = false;
  const auto now = self->clock().now();
  std::vector<std::shared_ptr<StepInFlight>> late;
  bool more = false;
  caf::actor_clock::time_point next;
  for (const auto& [id, step] : st.in_flight) {
    if (step->request->options.timeout_in_ms <= 0) continue;
    if (step->deadline <= now) {
      late.push_back(step);
    } else if (!more || step->deadline < next) {
      more = true;
      next = step->deadline;
    }
  }
  for (const std::shared_ptr<StepInFlight>& step : late) {
    // Every unfinished part is named: the part that waits for a receive is as
    // unfinished as the one that computes, and only the list shows both.
    std::string unfinished;
    for (size_t i = 0; i < step->plan->parts.size(); ++i) {
      if (step->part_done[i]) continue;
      unfinished += (unfinished.empty() ? "" : ", ") + step->plan->parts[i].device;
    }
    for (size_t i = 0; i < step->plan->parts.size(); ++i) {
      if (step->part_done[i]) continue;
      RunPartitionResult r;
      r.status = StepDeadlineExceeded(step->request->options.timeout_in_ms, unfinished);
      PartDone(self, step, i, std::move(r));
    }
  }
  if (more) ArmDeadlineCheck(self, next);
}

void LaunchStep(MasterSelf self, const std::shared_ptr<Plan>& plan,
                const std::shared_ptr<StepRequest>& req) {
  const bool metadata = req->want_metadata;
  if (!plan->registration_status.ok()) return Reply(req, plan->registration_status);
  Status valid = ValidateFeeds(*req, plan->signature);
  if (!valid.ok()) return Reply(req, valid);
  auto step = std::make_shared<StepInFlight>();
  step->step_id = NextStepId(self->state.ordinal);
  step->start_micros = metadata ? SteadyMicros() : 0;
  step->request = req;
  step->plan = plan;
  step->remaining = static_cast<int>(plan->parts.size());
  step->part_done.assign(plan->parts.size(), false);
  step->outputs.resize(req->fetches.size());
  if (plan->parts.empty()) return FinishStep(self, step);
  self->state.in_flight[step->step_id] = step;
  EnsureHeartbeat(self);

  const int64_t timeout_ms = req->options.timeout_in_ms;
  if (timeout_ms > 0) {
    step->deadline = self->clock().now() + std::chrono::milliseconds(timeout_ms);
    ArmDeadlineCheck(self, step->deadline);
  }
  const bool trace = req->options.trace_level == RunOptions::TraceLevel::kFullTrace;
  if (metadata && trace) step->part_sent_micros.assign(plan->parts.size(), 0);
  for (size_t i = 0; i < plan->parts.size(); ++i) {
    const PlanPart& part = plan->parts[i];
    RunPartitionRequest run;
    run.step_id = step->step_id;
    run.partition_id = part.partition_id;
    run.collect_stats = metadata && trace;
    run.feed_values.reserve(part.feed_sources.size());
    for (int src : part.feed_sources) run.feed_values.push_back(req->feeds[src].second);
    run.record_executed = metadata;
    if (run.collect_stats) step->part_sent_micros[i] = SteadyMicros();
    // No timed request: the step's deadline is the master's own (CheckDeadlines).
    self->request(part.device_actor, caf::infinite, run_atom::value, std::move(run))
        .then([self, step, i](RunPartitionResult& r) { PartDone(self, step, i, std::move(r)); },
              [self, step, i](caf::error& e) {
                // The device's name only on this error path (the plan outlives the step).
                const std::string& device = step->plan->parts[i].device;
                RunPartitionResult r;
                r.status = Unavailable("task " + TaskOfDevice(device) + " (device " + device +
                                       ") did not answer: " + caf::to_string(e));
                PartDone(self, step, i, std::move(r));
              });
  }
}

// Connects to `tasks` (lazily, retrying until the deadline), then calls `done`.
void EnsureTasks(MasterSelf self, const std::vector<TaskId>& tasks, int64_t timeout_ms,
                 std::function<void(const Status&)> done) {
  auto remaining = std::make_shared<int>(static_cast<int>(tasks.size()));
  auto first_error = std::make_shared<Status>();
  auto one_done = [remaining, first_error, done](const Status& s) {
    if (!s.ok() && first_error->ok()) *first_error = s;
    if (--*remaining == 0) done(*first_error);
  };
  for (const TaskId& task : tasks) {
    const std::string name = ClusterSpec::TaskName(task);
    TaskEntry& entry = self->state.tasks[name];
    if (entry.state == TaskEntry::State::kConnected) {
      one_done(Status::OK());
      continue;
    }
    entry.waiters.push_back(one_done);
    if (entry.state == TaskEntry::State::kConnecting) continue;
    entry.state = TaskEntry::State::kConnecting;
    auto settle = [self, name](const Status& s, std::vector<DevicePeer> devices,
                               FrontActor front) {
      TaskEntry& e = self->state.tasks[name];
      if (s.ok()) {
        e.state = TaskEntry::State::kConnected;
        e.devices = std::move(devices);
        e.front = std::move(front);
        e.ping_outstanding = false;
        for (const DevicePeer& d : e.devices) self->monitor(d.actor);
      } else {
        e.state = TaskEntry::State::kUnknown;
      }
      auto waiters = std::move(e.waiters);
      e.waiters.clear();
      for (auto& w : waiters) w(s);
    };
    auto address = self->state.config.cluster->Address(task);
    if (!address.ok()) {
      settle(address.status(), {}, FrontActor{});
      continue;
    }
    entry.address = address->ToString();
    const std::string who = task.ToString();
    ConnectorActor connector = self->state.config.task_directory
                                   ? self->state.config.task_directory
                                   : SpawnConnector(self->system());
    self->request(connector, caf::infinite, connect_atom::value, address->host, address->port,
                  timeout_ms, who)
        .then(
            [self, settle, timeout_ms, who](Status& status, FrontActor& front) {
              if (!status.ok()) return settle(status, {}, FrontActor{});
              self->request(front, std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 1)),
                            devices_atom::value)
                  .then([settle, front](std::vector<DevicePeer>& devices) {
                          settle(Status::OK(), devices, front);
                        },
                        [settle, who](caf::error& e) {
                          settle(Unavailable(who + " did not list its devices: " +
                                             caf::to_string(e)),
                                 {}, FrontActor{});
                        });
            },
            [settle, who](caf::error& e) {
              settle(Unavailable("cannot reach " + who + ": " + caf::to_string(e)), {}, FrontActor{});
            });
  }
}

// Deregisters a dropped plan's partitions from the devices that still have them
// (fire and forget: a device answers nothing to an anonymous sender).
void DropPlan(MasterSelf self, const Plan& plan) {
  MasterState& st = self->state;
  if (plan.direct != nullptr) plan.direct->valid.store(false, std::memory_order_release);
  std::map<caf::actor_addr, std::vector<uint64_t>> by_device;
  for (const PlanPart& part : plan.parts) {
    auto on = st.registered.find(part.device_actor.address());
    if (on == st.registered.end()) continue;  // the device went down
    auto& ids = on->second.partition_ids;
    auto it = std::find(ids.begin(), ids.end(), part.partition_id);
    if (it == ids.end()) continue;
    ids.erase(it);
    by_device[on->first].push_back(part.partition_id);
    if (ids.empty()) {
      caf::anon_send(on->second.actor, deregister_atom::value, std::move(by_device[on->first]));
      by_device.erase(on->first);
      st.registered.erase(on);
    }
  }
  for (auto& [address, ids] : by_device) {
    caf::anon_send(st.registered[address].actor, deregister_atom::value, std::move(ids));
  }
}

void HandleStep(MasterSelf self, std::shared_ptr<StepRequest> req) {
  MasterState& st = self->state;
  if (st.closed) return Reply(req, FailedPrecondition("Run on a closed session"));
  const std::string key = SignatureKey(*req);
  auto it = st.plans.find(key);
  if (it != st.plans.end()) {
    std::shared_ptr<Plan> plan = it->second;
    if (plan->registrations_pending > 0) {
      plan->waiting.push_back(req);
      return;
    }
    if (!plan->registration_status.ok()) {  // a later step retries
      st.plans.erase(key);
      DropPlan(self, *plan);
    }
    return LaunchStep(self, plan, req);
  }
  std::vector<std::string> feed_names;
  for (const auto& f : req->feeds) feed_names.push_back(f.first);
  auto sig = ResolveRunSignature(*st.graph, feed_names, req->fetches, req->targets);
  if (!sig.ok()) return Reply(req, sig.status());
  auto nodes = PruneForRun(*st.graph, *sig);
  if (!nodes.ok()) return Reply(req, nodes.status());
  auto missing = TasksToConnect(st, *nodes);
  if (!missing.ok()) return Reply(req, missing.status());
  if (!missing->empty()) {
    int64_t timeout = req->options.timeout_in_ms > 0 ? req->options.timeout_in_ms
                                                     : st.config.connect_timeout_ms;
    EnsureTasks(self, *missing, timeout, [self, req](const Status& s) {
      if (!s.ok()) return Reply(req, s);
      // Plan it now that the devices are known.
      self->send(self, step_atom::value, req);
    });
    return;
  }
  auto plan = BuildPlan(self, *req, *sig, *nodes);
  if (!plan.ok()) return Reply(req, plan.status());
  st.plans.emplace(key, *plan);
  if ((*plan)->registrations_pending > 0) {
    (*plan)->waiting.push_back(req);
    return;
  }
  LaunchStep(self, *plan, req);
}

// Devices that went away (their task died or stopped answering): fail what runs on
// them with `lost`, and forget the plans and registrations that refer to them.
void LoseDevices(MasterSelf self, const std::set<std::string>& devices,
                 const std::vector<caf::actor_addr>& addresses, const Status& lost) {
  MasterState& st = self->state;
  for (const caf::actor_addr& a : addresses) st.registered.erase(a);  // partitions went too
  for (auto it = st.plans.begin(); it != st.plans.end();) {
    bool uses = UsesAny(*it->second, devices);
    if (!uses) {
      ++it;
      continue;
    }
    DropPlan(self, *it->second);
    it = st.plans.erase(it);
  }
  std::vector<std::shared_ptr<StepInFlight>> affected;
  for (auto& [id, step] : st.in_flight) affected.push_back(step);
  for (auto& step : affected) {
    // A lost collective member fails every part: its peers would wait for it.
    const bool member_lost = HasCollectiveMember(*step->plan, devices);
    for (size_t i = 0; i < step->plan->parts.size(); ++i) {
      if ((!member_lost && !devices.count(step->plan->parts[i].device)) || step->part_done[i]) {
        continue;
      }
      RunPartitionResult r;
      r.status = lost;
      PartDone(self, step, i, std::move(r));
    }
  }
}

// A device's actor is gone (its connection closed): fail what runs on it.
void DeviceDown(MasterSelf self, const caf::actor_addr& source) {
  MasterState& st = self->state;
  std::string device;
  for (auto& [name, task] : st.tasks) {
    for (const DevicePeer& d : task.devices) {
      if (d.actor.address() == source) device = d.name;
    }
    if (!device.empty()) {
      task.state = TaskEntry::State::kUnknown;
      task.devices.clear();
      task.front = FrontActor{};
      break;
    }
  }
  bool local = false;
  for (size_t i = 0; i < st.config.device_actors.size() && device.empty(); ++i) {
    if (st.config.device_actors[i].address() == source) {
      device = st.config.devices[i].name;
      local = true;
    }
  }
  if (device.empty()) return;
  LoseDevices(self, {device}, {source},
              local ? Unavailable("device " + device +
                                  " stopped; its server restarts a failed device: run the "
                                  "step again")
                    : Unavailable("task " + TaskOfDevice(device) + " went down (device " +
                                  device + " is gone)"));
}

// See device_restarted_atom at MasterActor (actors/protocol/master_protocol.h). The old actor's
// down message may come before or after this; whichever comes second changes nothing.
void DeviceRestarted(MasterSelf self, const DevicePeer& fresh) {
  MasterState& st = self->state;
  for (size_t i = 0; i < st.config.devices.size(); ++i) {
    if (st.config.devices[i].name != fresh.name) continue;
    const DeviceActor old = st.config.device_actors[i];
    if (old == fresh.actor || !fresh.actor) return;
    self->demonitor(old.address());
    LoseDevices(self, {fresh.name}, {old.address()},
                Unavailable("device " + fresh.name +
                            " failed and was restarted while the step ran: run the step again"));
    st.config.device_actors[i] = fresh.actor;
    self->monitor(fresh.actor);
    return;
  }
}

// A task whose front did not answer its heartbeat: every device of it is lost.
void TaskDown(MasterSelf self, const std::string& name, const Status& lost) {
  TaskEntry& task = self->state.tasks[name];
  std::set<std::string> devices;
  std::vector<caf::actor_addr> addresses;
  for (const DevicePeer& d : task.devices) {
    devices.insert(d.name);
    addresses.push_back(d.actor.address());
    self->demonitor(d.actor.address());
  }
  task.state = TaskEntry::State::kUnknown;
  task.devices.clear();
  task.front = FrontActor{};
  task.ping_outstanding = false;
  LoseDevices(self, devices, addresses, lost);
}

// Keeps the heartbeat ticking while steps are in flight (see heartbeat_atom).
void EnsureHeartbeat(MasterSelf self) {
  MasterState& st = self->state;
  if (st.heartbeat_ticking || st.config.heartbeat_timeout_ms <= 0 || !st.config.cluster) return;
  st.heartbeat_ticking = true;
  const int64_t interval = HeartbeatIntervalMs(st.config.heartbeat_timeout_ms);
  self->delayed_send(self, std::chrono::milliseconds(interval), heartbeat_atom::value);
}

void Heartbeat(MasterSelf self) {
  MasterState& st = self->state;
  st.heartbeat_ticking = false;
  if (st.in_flight.empty()) return;  // idle: no pings, no ticks
  std::set<std::string> used;
  for (const auto& [id, step] : st.in_flight)
    for (const PlanPart& p : step->plan->parts) used.insert(TaskOfDevice(p.device));
  const int64_t timeout_ms = st.config.heartbeat_timeout_ms;
  for (const std::string& name : used) {
    auto it = st.tasks.find(name);
    if (it == st.tasks.end()) continue;  // the master's own task
    TaskEntry& task = it->second;
    if (task.state != TaskEntry::State::kConnected || !task.front || task.ping_outstanding) continue;
    task.ping_outstanding = true;
    FrontActor pinged = task.front;
    self->request(pinged, std::chrono::milliseconds(timeout_ms), ping_atom::value)
        .then(
            [self, name](std::string&) { self->state.tasks[name].ping_outstanding = false; },
            [self, name, pinged, timeout_ms](caf::error& e) {
              TaskEntry& task = self->state.tasks[name];
              if (task.front != pinged) return;  // reconnected since
              const std::string why = e == caf::sec::request_timeout
                                          ? "no heartbeat answer within " +
                                                std::to_string(timeout_ms) + " ms"
                                          : caf::to_string(e);
              TaskDown(self, name,
                       Unavailable(name + " (" + task.address + ") is down: " + why));
            });
  }
  EnsureHeartbeat(self);
}

// Ends the session: see close_atom at MasterActor (actors/protocol/master_protocol.h).
caf::result<Status> Close(MasterSelf self) {
  MasterState& st = self->state;
  st.closed = true;
  const Status cancelled = Cancelled("the session was closed while the step ran");
  for (auto& [key, plan] : st.plans) {
    std::vector<std::shared_ptr<StepRequest>> waiting;
    waiting.swap(plan->waiting);
    for (auto& r : waiting) Reply(r, cancelled);
  }
  std::vector<std::shared_ptr<StepInFlight>> steps;
  for (auto& [id, step] : st.in_flight) steps.push_back(step);
  for (auto& step : steps) {
    for (size_t i = 0; i < step->plan->parts.size(); ++i) {
      if (step->part_done[i]) continue;
      RunPartitionResult r;
      r.status = cancelled;
      PartDone(self, step, i, std::move(r));  // the first one aborts the step everywhere
    }
  }
  for (auto& [key, plan] : st.plans) {
    if (plan->direct != nullptr) plan->direct->valid.store(false, std::memory_order_release);
  }
  st.plans.clear();
  std::map<caf::actor_addr, Registered> registered;
  registered.swap(st.registered);
  if (registered.empty()) return Status::OK();
  auto promise = self->make_response_promise<Status>();
  auto remaining = std::make_shared<size_t>(registered.size());
  auto first_error = std::make_shared<Status>();
  auto one_done = [promise, remaining, first_error](const Status& s) mutable {
    if (!s.ok() && first_error->ok()) *first_error = s;
    if (--*remaining == 0) promise.deliver(*first_error);
  };
  const int64_t timeout_ms = std::max<int64_t>(1, st.config.close_timeout_ms);
  for (auto& [address, on] : registered) {
    const std::string device = on.device;
    self->request(on.actor, std::chrono::milliseconds(timeout_ms), deregister_atom::value,
                  std::move(on.partition_ids))
        .then([one_done](Status& s) mutable { one_done(s); },
              [one_done, device, timeout_ms](caf::error& e) mutable {
                one_done(Unavailable("device " + device + " did not confirm within " +
                                     std::to_string(timeout_ms) +
                                     " ms that it dropped the closed session's partitions: " +
                                     caf::to_string(e)));
              });
  }
  return promise;
}

MasterStats Stats(const MasterState& st) {
  MasterStats s;
  s.plans = static_cast<int64_t>(st.plans.size());
  for (const auto& [address, on] : st.registered) {
    s.partitions += static_cast<int64_t>(on.partition_ids.size());
  }
  s.in_flight = static_cast<int64_t>(st.in_flight.size());
  s.closed = st.closed;
  return s;
}

MasterActor::behavior_type MasterBehavior(MasterSelf self, MasterConfig config) {
  self->state.config = std::move(config);
  // Ids unique on every device this master shares with others (actors/runtime/step_ids.h).
  self->state.ordinal =
      TaskOrdinal(self->state.config.cluster.get(), self->state.config.local_task);
  self->state.session_scope = NextPartitionId(self->state.ordinal);
  self->state.graph = self->state.config.owned_graph ? self->state.config.owned_graph.get()
                                                     : self->state.config.graph;
  for (const DeviceActor& d : self->state.config.device_actors) self->monitor(d);
  self->set_down_handler([self](caf::down_msg& down) { DeviceDown(self, down.source); });
  return {
      [self](step_atom, std::shared_ptr<StepRequest>& req) { HandleStep(self, std::move(req)); },
      [self](close_atom) -> caf::result<Status> { return Close(self); },
      [self](extend_atom, std::shared_ptr<const Graph>& grown) -> Status {
        if (self->state.closed) return FailedPrecondition("extending a closed session");
        return ExtendGraph(self->state, std::move(grown));
      },
      [self](master_stats_atom) -> MasterStats { return Stats(self->state); },
      [self](heartbeat_atom) { Heartbeat(self); },
      [self](step_deadline_atom, uint64_t generation) { CheckDeadlines(self, generation); },
      [self](device_restarted_atom, const DevicePeer& fresh) { DeviceRestarted(self, fresh); },
  };
}

}  // namespace

MasterActor SpawnMasterActor(caf::actor_system& system, MasterConfig config) {
  return system.spawn(MasterBehavior, std::move(config));
}

}  // namespace actorflow
