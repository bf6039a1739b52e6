#include "actors/master_actor.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <unordered_map>

#include "actors/messages.h"
#include "graph/prune.h"
#include "placement/partition.h"

namespace actorflow {
namespace {

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Canonical(const Endpoint& e) { return e.ToString(); }

std::string CanonicalTensorName(const std::string& name) {
  auto parsed = ParseTensorName(name);
  if (!parsed.ok()) return name;
  return parsed->second == 0 ? parsed->first : parsed->first + ":" + std::to_string(parsed->second);
}

// One partition of a plan, registered with one device.
struct PlanPart {
  size_t device_index = 0;
  uint64_t partition_id = 0;
  std::vector<int> feed_sources;  // per partition feed: index into the client's feeds
  std::vector<int> fetch_targets;  // per partition fetch: index into the client's fetches
};

struct Plan {
  RunSignature signature;
  std::vector<PlanPart> parts;
  // Client fetches answered straight from a feed: fetch index -> feed index.
  std::vector<std::pair<int, int>> fed_fetches;
  int registrations_pending = 0;
  Status registration_status;
  std::vector<std::shared_ptr<StepRequest>> waiting;  // steps that came before registration
};

// A step in flight: what has come back from its devices so far.
struct StepInFlight {
  int64_t step_id = 0;
  int64_t start_micros = 0;
  std::shared_ptr<StepRequest> request;
  std::shared_ptr<Plan> plan;
  int remaining = 0;
  Status status;
  std::vector<Tensor> outputs;
  std::vector<std::pair<int64_t, std::string>> executed;  // (start, node)
  std::vector<NodeExecStats> stats;
};

struct MasterState {
  MasterConfig config;
  std::unordered_map<std::string, std::shared_ptr<Plan>> plans;
  uint64_t next_partition_id = 1;
  int64_t next_step_id = 1;
  const char* name = "actorflow_master";
};

using MasterActor = caf::stateful_actor<MasterState>;

std::string SignatureKey(const StepRequest& req) {
  std::string key;
  for (const auto& f : req.feeds) key += f.first + ',';
  key += '|';
  for (const auto& f : req.fetches) key += f + ',';
  key += '|';
  for (const auto& t : req.targets) key += t + ',';
  return key;
}

Status ValidateFeeds(const StepRequest& req, const RunSignature& sig) {
  for (size_t i = 0; i < req.feeds.size(); ++i) {
    const std::string& name = req.feeds[i].first;
    const Tensor& value = req.feeds[i].second;
    const Endpoint& e = sig.feeds[i];
    if (!value.IsInitialized()) return InvalidArgument("feed '" + name + "' has no value");
    DType want = e.node->output_dtype(e.index);
    if (value.dtype() != want) {
      return InvalidArgument("feed '" + name + "' has dtype " + DTypeName(value.dtype()) +
                             ", but '" + e.ToString() + "' expects " + DTypeName(want));
    }
    const Shape& shape = e.node->output_shape(e.index);
    if (!shape.IsCompatibleWith(value.shape())) {
      return InvalidArgument("feed '" + name + "' has shape " + value.shape().ToString() +
                             ", but '" + e.ToString() + "' accepts " + shape.ToString());
    }
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<Plan>> BuildPlan(MasterActor* self, const StepRequest& req) {
  MasterState& st = self->state;
  const Graph& graph = *st.config.graph;
  std::vector<std::string> feed_names;
  for (const auto& f : req.feeds) feed_names.push_back(f.first);
  auto plan = std::make_shared<Plan>();
  AF_ASSIGN_OR_RETURN(plan->signature,
                      ResolveRunSignature(graph, feed_names, req.fetches, req.targets));
  const RunSignature& sig = plan->signature;
  AF_ASSIGN_OR_RETURN(std::vector<const Node*> nodes, PruneForRun(graph, sig));
  PlacerOptions popts;
  popts.devices = st.config.devices;
  popts.default_device = st.config.default_device;
  popts.allow_soft_placement = st.config.allow_soft_placement;
  AF_ASSIGN_OR_RETURN(auto placement, PlaceNodes(graph, nodes, popts));
  if (st.config.log_device_placement) std::cerr << ExplainPlacement(graph, placement);
  AF_ASSIGN_OR_RETURN(std::vector<DevicePartition> partitions,
                      Partition(graph, nodes, placement, sig.feeds, sig.fetches, sig.targets));

  std::vector<std::string> feed_keys, fetch_keys;
  for (const Endpoint& e : sig.feeds) feed_keys.push_back(Canonical(e));
  for (const Endpoint& e : sig.fetches) fetch_keys.push_back(Canonical(e));
  std::vector<bool> fetch_covered(fetch_keys.size(), false);
  for (size_t f = 0; f < fetch_keys.size(); ++f) {
    auto it = std::find(feed_keys.begin(), feed_keys.end(), fetch_keys[f]);
    if (it != feed_keys.end()) {
      plan->fed_fetches.emplace_back(static_cast<int>(f), static_cast<int>(it - feed_keys.begin()));
      fetch_covered[f] = true;
    }
  }
  for (DevicePartition& p : partitions) {
    PlanPart part;
    auto dev = std::find_if(st.config.devices.begin(), st.config.devices.end(),
                            [&](const DeviceInfo& d) { return d.name == p.device; });
    if (dev == st.config.devices.end()) {
      return Internal("partition for unknown device " + p.device);
    }
    part.device_index = static_cast<size_t>(dev - st.config.devices.begin());
    for (const std::string& name : p.feeds) {
      auto it = std::find(feed_keys.begin(), feed_keys.end(), CanonicalTensorName(name));
      if (it == feed_keys.end()) return Internal("partition feed '" + name + "' is not a feed");
      part.feed_sources.push_back(static_cast<int>(it - feed_keys.begin()));
    }
    for (const std::string& name : p.fetches) {
      const std::string key = CanonicalTensorName(name);
      int target = -1;
      for (size_t f = 0; f < fetch_keys.size(); ++f) {
        if (fetch_keys[f] == key && !fetch_covered[f]) {
          target = static_cast<int>(f);
          break;
        }
      }
      if (target < 0) {
        // The same tensor fetched twice: later duplicates copy the first slot.
        for (size_t f = 0; f < fetch_keys.size(); ++f) {
          if (fetch_keys[f] == key) target = static_cast<int>(f);
        }
      }
      if (target < 0) return Internal("partition fetch '" + name + "' is not a fetch");
      fetch_covered[target] = true;
      part.fetch_targets.push_back(target);
    }
    part.partition_id = st.next_partition_id++;
    plan->parts.push_back(part);
  }
  // Register every partition with its device; steps wait until all answered.
  plan->registrations_pending = static_cast<int>(partitions.size());
  for (size_t i = 0; i < partitions.size(); ++i) {
    PartitionRegistration reg;
    reg.partition_id = plan->parts[i].partition_id;
    reg.partition = std::make_shared<DevicePartition>(std::move(partitions[i]));
    const caf::actor& dev = st.config.device_actors[plan->parts[i].device_index];
    std::weak_ptr<Plan> weak = plan;
    auto on_registered = [self, weak](Status s) {
      auto plan = weak.lock();
      if (!plan) return;
      if (!s.ok() && plan->registration_status.ok()) plan->registration_status = s;
      if (--plan->registrations_pending > 0) return;
      std::vector<std::shared_ptr<StepRequest>> waiting;
      waiting.swap(plan->waiting);
      for (auto& req : waiting) self->send(self, step_atom::value, req);
    };
    self->request(dev, caf::infinite, register_atom::value, std::move(reg))
        .then([on_registered](Status& s) { on_registered(s); },
              [on_registered](caf::error& e) {
                on_registered(Unavailable("device did not register a partition: " +
                                          caf::to_string(e)));
              });
  }
  return plan;
}

void Reply(const std::shared_ptr<StepRequest>& req, Status status, std::vector<Tensor> out = {},
           RunMetadata meta = RunMetadata()) {
  req->reply->Deliver(std::move(status), std::move(out), std::move(meta));
}

void FinishStep(MasterActor* self, const std::shared_ptr<StepInFlight>& step) {
  if (!step->status.ok()) return Reply(step->request, step->status);
  RunMetadata meta;
  std::sort(step->executed.begin(), step->executed.end());
  const Graph& graph = *self->state.config.graph;
  for (auto& [start, name] : step->executed) {
    if (graph.FindNode(name) != nullptr) meta.executed_nodes.push_back(name);
  }
  for (NodeExecStats& s : step->stats) {
    if (graph.FindNode(s.node_name) == nullptr) continue;  // inserted Send/Recv
    s.start_micros -= step->start_micros;
    s.end_micros -= step->start_micros;
    meta.step_stats.push_back(std::move(s));
  }
  for (const auto& [fetch, feed] : step->plan->fed_fetches) {
    step->outputs[fetch] = step->request->feeds[feed].second;
  }
  Reply(step->request, Status::OK(), std::move(step->outputs), std::move(meta));
}

void AbortStep(MasterActor* self, const StepInFlight& step, const Status& status) {
  for (const PlanPart& part : step.plan->parts) {
    self->send(self->state.config.device_actors[part.device_index], abort_atom::value,
               AbortRequest{step.step_id, status});
  }
}

void PartDone(MasterActor* self, const std::shared_ptr<StepInFlight>& step, size_t part_index,
              RunPartitionResult result) {
  const PlanPart& part = step->plan->parts[part_index];
  if (!result.status.ok()) {
    if (step->status.ok()) {
      const std::string& device = self->state.config.devices[part.device_index].name;
      step->status = result.status.WithContext("on device " + device);
      AbortStep(self, *step, step->status);
    }
  } else {
    for (size_t k = 0; k < part.fetch_targets.size() && k < result.fetches.size(); ++k) {
      step->outputs[part.fetch_targets[k]] = std::move(result.fetches[k]);
    }
    for (size_t k = 0; k < result.executed_nodes.size(); ++k) {
      step->executed.emplace_back(result.executed_start_micros[k],
                                  std::move(result.executed_nodes[k]));
    }
    for (NodeExecStats& s : result.step_stats) step->stats.push_back(std::move(s));
  }
  if (--step->remaining == 0) FinishStep(self, step);
}

void LaunchStep(MasterActor* self, const std::shared_ptr<Plan>& plan,
                const std::shared_ptr<StepRequest>& req) {
  if (!plan->registration_status.ok()) return Reply(req, plan->registration_status);
  Status valid = ValidateFeeds(*req, plan->signature);
  if (!valid.ok()) return Reply(req, valid);
  auto step = std::make_shared<StepInFlight>();
  step->step_id = self->state.next_step_id++;
  step->start_micros = SteadyMicros();
  step->request = req;
  step->plan = plan;
  step->remaining = static_cast<int>(plan->parts.size());
  step->outputs.resize(req->fetches.size());
  if (plan->parts.empty()) return FinishStep(self, step);

  const int64_t timeout_ms = req->options.timeout_in_ms;
  caf::duration timeout = timeout_ms > 0 ? caf::duration{std::chrono::milliseconds(timeout_ms)}
                                          : caf::duration{caf::infinite};
  const bool trace = req->options.trace_level == RunOptions::TraceLevel::kFullTrace;
  for (size_t i = 0; i < plan->parts.size(); ++i) {
    const PlanPart& part = plan->parts[i];
    RunPartitionRequest run;
    run.step_id = step->step_id;
    run.partition_id = part.partition_id;
    run.collect_stats = trace;
    for (int src : part.feed_sources) run.feed_values.push_back(req->feeds[src].second);
    const std::string device = self->state.config.devices[part.device_index].name;
    self->request(self->state.config.device_actors[part.device_index], timeout,
                  run_atom::value, std::move(run))
        .then([self, step, i](RunPartitionResult& r) { PartDone(self, step, i, std::move(r)); },
              [self, step, i, device, timeout_ms](caf::error& e) {
                RunPartitionResult r;
                if (e == caf::sec::request_timeout) {
                  r.status = DeadlineExceeded("step exceeded its deadline of " +
                                              std::to_string(timeout_ms) +
                                              " ms (RunOptions.timeout_in_ms) while device " +
                                              device + " was still running");
                } else {
                  r.status = Unavailable("device " + device +
                                         " did not answer: " + caf::to_string(e));
                }
                PartDone(self, step, i, std::move(r));
              });
  }
}

caf::behavior MasterBehavior(MasterActor* self, MasterConfig config) {
  self->state.config = std::move(config);
  return {
      [self](step_atom, std::shared_ptr<StepRequest>& req) {
        MasterState& st = self->state;
        const std::string key = SignatureKey(*req);
        auto it = st.plans.find(key);
        std::shared_ptr<Plan> plan;
        if (it != st.plans.end()) {
          plan = it->second;
        } else {
          auto built = BuildPlan(self, *req);
          if (!built.ok()) return Reply(req, built.status());
          plan = *built;
          st.plans.emplace(key, plan);
        }
        if (plan->registrations_pending > 0) {
          plan->waiting.push_back(req);
          return;
        }
        if (!plan->registration_status.ok()) {
          // Do not keep a plan whose registration failed: a later step retries.
          st.plans.erase(key);
        }
        LaunchStep(self, plan, req);
      },
  };
}

}  // namespace

caf::actor SpawnMasterActor(caf::actor_system& system, MasterConfig config) {
  return system.spawn(MasterBehavior, std::move(config));
}

}  // namespace actorflow
