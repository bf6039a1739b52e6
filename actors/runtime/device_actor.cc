#include "actors/runtime/device_actor.h"

#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "actors/runtime/device_queue_client.h"
#include "actors/runtime/queue_actor.h"
#include "actors/protocol/messages.h"
#include "graph/prune.h"
#include "graph/steady_clock.h"
#include "kernels/executor.h"
#include "kernels/kernel.h"
#include "kernels/rendezvous.h"

namespace actorflow {
namespace {

// A registered partition: its graph, kernels and executor.
struct PartitionExec {
  std::shared_ptr<const DevicePartition> partition;
  uint64_t session_scope = 0;  // of the master that registered it
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::unique_ptr<Executor> executor;
};

struct DeviceState;
using DeviceSelf = DeviceActor::stateful_pointer<DeviceState>;

// The Rendezvous and AsyncScheduler of one device, backed by its actor. Called only
// on the actor's thread (from kernels run by its executor).
class DeviceRuntime : public Rendezvous, public AsyncScheduler {
 public:
  explicit DeviceRuntime(DeviceSelf self);
  Status Send(const RendezvousKey& key, const Tensor& value) override;
  // Hands a large tensor for a device of another process to the bulk channel; false
  // when the Send should go over CAF (actors/transport/bulk_channel.h).
  bool SendInBulk(const RendezvousKey& key, const Tensor& value, const DevicePeer& peer);
  void RecvAsync(const RendezvousKey& key, RecvCallback done) override;
  void RunAfter(int64_t delay_micros, std::function<void()> fn) override;
  void Post(std::function<void()> fn) override;

 private:
  DeviceSelf self_;
  // A weak handle: Post may run on any thread, after the actor is gone.
  caf::actor_addr self_address_;
};

struct DeviceState {
  DeviceConfig config;
  std::unique_ptr<DeviceRuntime> runtime;
  // The QueueService of this device's kernels: requests to the task's queue actors.
  std::unique_ptr<DeviceQueueClient> queues;
  std::unordered_map<std::string, DevicePeer> peers;  // by device name
  std::unordered_map<uint64_t, std::shared_ptr<PartitionExec>> partitions;
  // Registered partitions by session scope: a session's private resources go with
  // its last one (a closed session deregisters them all).
  std::unordered_map<uint64_t, int> partitions_per_session;

  // Rendezvous: tensors that arrived before their Recv, and Recvs waiting for one.
  std::map<std::string, Tensor> inbox;
  std::map<std::string, Rendezvous::RecvCallback> pending;
  std::map<std::string, int64_t> pending_step;  // key -> step id

  // A step running here: its executor handle and where its answer goes (the
  // promise of a run_atom request, or the reply of a DirectRun). An abort answers
  // at once; the executor's own answer, if it comes later, is dropped.
  struct ActiveStep {
    StepHandle handle{nullptr};
    caf::response_promise promise;
    std::shared_ptr<DirectRun> direct;

    void Answer(RunPartitionResult&& r) {
      if (direct != nullptr) {
        direct->reply->Deliver(std::move(r));
      } else {
        promise.deliver(std::move(r));
      }
    }
  };
  std::unordered_map<int64_t, ActiveStep> active_steps;
  // The node of the last finished step, emptied, for the next step's slot: a device
  // running one step after another then allocates no slot per step.
  std::unordered_map<int64_t, ActiveStep>::node_type spare_step_slot;
  // Steps whose client wants run metadata: what their Sends moved off this device,
  // by destination device. Empty in a training loop that asks for none, so a Send
  // pays one failed lookup.
  std::unordered_map<int64_t, std::map<std::string, CrossDeviceTransfer>> transfers;
  // Recently aborted steps (bounded): their late tensors are dropped and their late
  // Recvs fail at once.
  std::unordered_map<int64_t, Status> aborted;
  std::deque<int64_t> aborted_order;

  const char* name = "actorflow_device";

  bool IsAborted(int64_t step, Status* why) const {
    auto it = aborted.find(step);
    if (it == aborted.end()) return false;
    if (why != nullptr) *why = it->second;
    return true;
  }

  void Deliver(int64_t step, const std::string& key, const Tensor& value) {
    if (IsAborted(step, nullptr)) return;
    auto it = pending.find(key);
    if (it == pending.end()) {
      inbox[key] = value;
      return;
    }
    Rendezvous::RecvCallback done = std::move(it->second);
    pending.erase(it);
    pending_step.erase(key);
    done(Status::OK(), value);
  }

  // Whether any Recv waits or any early tensor sits here (for any step).
  bool HoldsRendezvous() const { return !pending_step.empty() || !inbox.empty(); }

  // Fails every pending Recv of `step` and drops its early tensors.
  void ReleaseStep(int64_t step, const Status& status) {
    if (!HoldsRendezvous()) return;  // the common case: nothing left
    std::vector<Rendezvous::RecvCallback> to_fail;
    for (auto it = pending_step.begin(); it != pending_step.end();) {
      if (it->second == step) {
        to_fail.push_back(std::move(pending[it->first]));
        pending.erase(it->first);
        it = pending_step.erase(it);
      } else {
        ++it;
      }
    }
    const std::string prefix = std::to_string(step) + ";";
    for (auto it = inbox.lower_bound(prefix);
         it != inbox.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
      it = inbox.erase(it);
    }
    for (auto& done : to_fail) done(status, Tensor());
  }

  // Devices that Sends may address; a newer actor for a name (a restarted task)
  // replaces the old one.
  void AddPeers(DeviceSelf self, const std::vector<DevicePeer>& list) {
    for (const DevicePeer& p : list) {
      if (p.name == config.name || !p.actor) continue;
      auto it = peers.find(p.name);
      const bool monitored = it != peers.end() && it->second.actor == p.actor;
      peers[p.name] = p;  // its bulk endpoint too, which a restarted task changes
      if (!monitored) self->monitor(p.actor);
    }
  }

  void MarkAborted(int64_t step, const Status& status) {
    if (aborted.emplace(step, status).second) {
      aborted_order.push_back(step);
      if (aborted_order.size() > 4096) {
        aborted.erase(aborted_order.front());
        aborted_order.pop_front();
      }
    }
  }
};

Status DeviceRuntime::Send(const RendezvousKey& key, const Tensor& value) {
  DeviceState& st = self_->state;
  if (key.recv_device == st.config.name) {
    st.Deliver(key.step_id, key.ToString(), value);
    return Status::OK();
  }
  if (!st.transfers.empty()) {
    auto counted = st.transfers.find(key.step_id);
    if (counted != st.transfers.end()) {
      CrossDeviceTransfer& t = counted->second[key.recv_device];
      t.tensors += 1;
      t.bytes += static_cast<int64_t>(value.TotalBytes());
    }
  }
  auto it = st.peers.find(key.recv_device);
  if (it == st.peers.end()) {
    return Unavailable("send of '" + key.tensor_name + "' to device " + key.recv_device +
                       ": the receiving device is gone or unknown");
  }
  if (SendInBulk(key, value, it->second)) return Status::OK();
  self_->send(it->second.actor, tensor_atom::value, TensorDelivery{key.step_id, key.ToString(), value});
  return Status::OK();
}

bool DeviceRuntime::SendInBulk(const RendezvousKey& key, const Tensor& value,
                               const DevicePeer& peer) {
  const DeviceConfig& c = self_->state.config;
  // The task's own devices advertise the endpoint too, but live in this process.
  if (!c.bulk_sender || c.bulk_min_bytes <= 0 || peer.bulk_endpoint.empty() ||
      value.TotalBytes() < static_cast<size_t>(c.bulk_min_bytes) ||
      peer.actor.node() == self_->node()) {
    return false;
  }
  BulkFrame frame;
  frame.device = key.recv_device;
  frame.step_id = key.step_id;
  frame.key = key.ToString();
  frame.tensor = value;  // by reference: the writer sends straight from this buffer
  c.bulk_sender->Send(peer.bulk_endpoint, std::move(frame), [actor = peer.actor](BulkFrame f) {
    caf::anon_send(actor, tensor_atom::value,
                   TensorDelivery{f.step_id, std::move(f.key), std::move(f.tensor)});
  });
  return true;
}

void DeviceRuntime::RecvAsync(const RendezvousKey& key, RecvCallback done) {
  DeviceState& st = self_->state;
  Status aborted;
  if (st.IsAborted(key.WaitingStep(), &aborted)) return done(aborted, Tensor());
  const std::string k = key.ToString();
  auto it = st.inbox.find(k);
  if (it != st.inbox.end()) {
    Tensor value = std::move(it->second);
    st.inbox.erase(it);
    return done(Status::OK(), value);
  }
  st.pending[k] = std::move(done);
  st.pending_step[k] = key.WaitingStep();
  if (st.config.operation_timeout_in_ms > 0) {
    self_->delayed_send(self_, std::chrono::milliseconds(st.config.operation_timeout_in_ms),
                        recv_timeout_atom::value, k);
  }
}

void DeviceRuntime::RunAfter(int64_t delay_micros, std::function<void()> fn) {
  self_->delayed_send(self_, std::chrono::microseconds(std::max<int64_t>(0, delay_micros)),
                      resume_atom::value, Closure{std::move(fn)});
}

DeviceRuntime::DeviceRuntime(DeviceSelf self)
    : self_(self), self_address_(self->address()) {}

void DeviceRuntime::Post(std::function<void()> fn) {
  if (auto self = caf::actor_cast<DeviceActor>(self_address_)) {
    caf::anon_send(self, resume_atom::value, Closure{std::move(fn)});
  }
}

StatusOr<std::shared_ptr<PartitionExec>> BuildPartition(const DeviceConfig& config,
                                                         std::shared_ptr<const DevicePartition> p) {
  auto exec = std::make_shared<PartitionExec>();
  exec->partition = p;
  const Graph& g = *p->graph;
  AF_ASSIGN_OR_RETURN(RunSignature sig, ResolveRunSignature(g, p->feed_inputs, p->fetches, p->targets));
  AF_ASSIGN_OR_RETURN(std::vector<const Node*> nodes, PruneForRun(g, sig));
  ExecutorSpec spec;
  spec.graph = &g;
  spec.nodes = std::move(nodes);
  spec.feeds = sig.feeds;
  spec.fetches = sig.fetches;
  spec.device_name = config.name;
  PartitionExec* raw = exec.get();
  KernelLookup lookup = [raw, &config](const Node& node) -> StatusOr<Kernel*> {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> k,
                        KernelRegistry::Global().CreateKernel(node, config.type));
    raw->kernels.push_back(std::move(k));
    return raw->kernels.back().get();
  };
  AF_ASSIGN_OR_RETURN(exec->executor, Executor::Create(std::move(spec), lookup));
  return exec;
}

// Starts one step of a registered partition; its answer goes to `answer` when the
// step ends (or at once for an unknown partition or an aborted step).
// req.record_executed: whether the step records its executed nodes (and, with
// req.collect_stats, their stats).
void RunPartition(DeviceSelf self, RunPartitionRequest& req, DeviceState::ActiveStep answer) {
  const bool record = req.record_executed;
  DeviceState& st = self->state;
  auto it = st.partitions.find(req.partition_id);
  if (it == st.partitions.end()) {
    RunPartitionResult r;
    r.status = Internal("device " + st.config.name + ": unknown partition " +
                        std::to_string(req.partition_id));
    if (answer.direct != nullptr) {
      answer.direct->reply->Deliver(std::move(r), /*unknown_partition=*/true);
    } else {
      answer.Answer(std::move(r));
    }
    return;
  }
  Status aborted;
  if (st.IsAborted(req.step_id, &aborted)) {
    RunPartitionResult r;
    r.status = aborted;
    return answer.Answer(std::move(r));
  }
  std::shared_ptr<PartitionExec> exec = it->second;
  StepArgs args;
  args.feed_values = std::move(req.feed_values);
  args.resources = st.config.resources.get();
  args.step_id = req.step_id;
  args.record_executed = record;
  args.collect_stats = record && req.collect_stats;
  args.rendezvous = st.runtime.get();
  args.scheduler = st.runtime.get();
  args.queues = st.queues.get();
  args.file_access = st.config.file_access.get();
  args.session_scope = exec->session_scope;
  const int64_t step = req.step_id;
  // The slot exists before the step starts: a step may end inside RunAsync.
  if (st.spare_step_slot.empty()) {
    st.active_steps[step] = std::move(answer);
  } else {
    st.spare_step_slot.key() = step;
    st.spare_step_slot.mapped() = std::move(answer);
    auto inserted = st.active_steps.insert(std::move(st.spare_step_slot));
    if (!inserted.inserted) inserted.position->second = std::move(inserted.node.mapped());
  }
  if (record) st.transfers[step];
  // `exec` keeps the executor alive until its step ends, also past an abort.
  const bool traced = args.collect_stats;
  StepHandle handle = exec->executor->RunAsync(
      std::move(args), [self, step, exec, traced](StepResult result) {
        auto active = self->state.active_steps.find(step);
        if (active == self->state.active_steps.end()) return;  // answered by abort
        auto slot = self->state.active_steps.extract(active);
        DeviceState::ActiveStep answer = std::move(slot.mapped());
        slot.mapped() = DeviceState::ActiveStep{};
        self->state.spare_step_slot = std::move(slot);
        // Leftover early tensors of a finished step are never received. (The status
        // is built only when there is something to release: this runs every step.)
        if (self->state.HoldsRendezvous()) {
          self->state.ReleaseStep(step, Cancelled("step finished"));
        }
        RunPartitionResult r;
        r.status = std::move(result.status);
        r.fetches = std::move(result.fetches);
        r.executed_nodes = std::move(result.executed_nodes);
        r.executed_start_micros = std::move(result.executed_start_micros);
        r.step_stats = std::move(result.step_stats);
        if (traced) {
          // The clock the stats were taken on, for the master's offset estimate.
          r.device_clock_micros = SteadyMicros();
        }
        auto counted = self->state.transfers.find(step);
        if (counted != self->state.transfers.end()) {
          for (auto& [dst, t] : counted->second) {
            t.src_device = self->state.config.name;
            t.dst_device = dst;
            r.transfers.push_back(std::move(t));
          }
          self->state.transfers.erase(counted);
        }
        answer.Answer(std::move(r));
      });
  // The slot may be gone: the step may have ended (or been aborted) inside RunAsync.
  auto active = st.active_steps.find(step);
  if (active != st.active_steps.end()) active->second.handle = std::move(handle);
}

DeviceActor::behavior_type DeviceBehavior(DeviceSelf self, DeviceConfig config) {
  self->state.config = std::move(config);
  self->state.runtime = std::make_unique<DeviceRuntime>(self);
  self->state.queues = std::make_unique<DeviceQueueClient>(
      self, self->state.config.services, self->state.config.name,
      self->state.config.operation_timeout_in_ms);
  self->set_down_handler([self](const caf::down_msg& down) {
    for (auto it = self->state.peers.begin(); it != self->state.peers.end(); ++it) {
      if (it->second.actor.address() == down.source) {
        self->state.peers.erase(it);
        break;
      }
    }
  });
  // CAF tries the handlers in this order and a miss costs a type check: the
  // messages of every step come first (a direct run, a run, a tensor, a kernel's
  // posted continuation), setup and diagnostics last.
  return {
      [self](direct_run_atom, std::shared_ptr<DirectRun>& run) {
        DeviceState::ActiveStep answer;
        answer.direct = run;
        RunPartition(self, run->request, std::move(answer));
      },
      [self](run_atom, RunPartitionRequest& req) -> caf::result<RunPartitionResult> {
        DeviceState::ActiveStep answer;
        answer.promise = self->make_response_promise();
        caf::response_promise rp = answer.promise;
        RunPartition(self, req, std::move(answer));
        return rp;
      },
      [self](tensor_atom, const TensorDelivery& d) {
        self->state.Deliver(d.step_id, d.key, d.value);
      },
      [self](resume_atom, Closure& c) { c.fn(); },
      [self](abort_atom, const AbortRequest& req) {
        DeviceState& st = self->state;
        st.MarkAborted(req.step_id, req.status);
        auto it = st.active_steps.find(req.step_id);
        if (it != st.active_steps.end()) {
          // Answer now: kernels still in flight (a timer, a GPU event) finish on
          // their own and their step's late answer is dropped.
          DeviceState::ActiveStep active = std::move(it->second);
          st.active_steps.erase(it);
          active.handle.Abort(req.status);
          RunPartitionResult r;
          r.status = req.status;
          active.Answer(std::move(r));
        }
        st.ReleaseStep(req.step_id, req.status);
        st.transfers.erase(req.step_id);
        // Waiting queue requests are withdrawn; their queues stay usable.
        st.queues->AbortStep(req.step_id, req.status);
      },
      [self](recv_timeout_atom, const std::string& key) {
        DeviceState& st = self->state;
        auto it = st.pending.find(key);
        if (it == st.pending.end()) return;
        Rendezvous::RecvCallback done = std::move(it->second);
        st.pending.erase(it);
        st.pending_step.erase(key);
        done(DeadlineExceeded("a blocking receive on device " + st.config.name +
                              " exceeded operation_timeout_in_ms (" +
                              std::to_string(st.config.operation_timeout_in_ms) +
                              " ms); key " + key),
             Tensor());
      },
      [self](peers_atom, const std::vector<DevicePeer>& peers) {
        self->state.AddPeers(self, peers);
      },
      [self](register_atom, const PartitionRegistration& reg) -> Status {
        self->state.AddPeers(self, reg.peers);
        auto built = BuildPartition(self->state.config, reg.partition);
        if (!built.ok()) return built.status();
        (*built)->session_scope = reg.session_scope;
        auto& slot = self->state.partitions[reg.partition_id];
        if (slot == nullptr) ++self->state.partitions_per_session[reg.session_scope];
        slot = *built;
        return Status::OK();
      },
      [self](deregister_atom, const std::vector<uint64_t>& ids) -> Status {
        // A step still running keeps its executor alive through its own reference.
        DeviceState& st = self->state;
        for (uint64_t id : ids) {
          auto it = st.partitions.find(id);
          if (it == st.partitions.end()) continue;
          const uint64_t scope = it->second->session_scope;
          st.partitions.erase(it);
          auto count = st.partitions_per_session.find(scope);
          if (count == st.partitions_per_session.end() || --count->second > 0) continue;
          st.partitions_per_session.erase(count);
          if (scope == 0) continue;
          // The session's own readers and queues go with its last partition here.
          if (st.config.resources != nullptr) st.config.resources->Clear({SessionContainer(scope)});
          if (st.config.services != nullptr) {
            ClearQueues(*st.config.services, {SessionContainer(scope)});
          }
        }
        return Status::OK();
      },
      [self](device_stats_atom) -> DeviceStats {
        const DeviceState& st = self->state;
        DeviceStats s;
        s.device = st.config.name;
        s.pending_recvs = static_cast<int64_t>(st.pending.size());
        s.inbox_tensors = static_cast<int64_t>(st.inbox.size());
        s.active_steps = static_cast<int64_t>(st.active_steps.size());
        s.partitions = static_cast<int64_t>(st.partitions.size());
        return s;
      },
  };
}

}  // namespace

DeviceActor SpawnDeviceActor(caf::actor_system& system, DeviceConfig config) {
  return system.spawn(DeviceBehavior, std::move(config));
}

}  // namespace actorflow
