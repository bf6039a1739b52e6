#include "actors/sim/sim_link.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "actors/protocol/device_protocol.h"
#include "actors/protocol/front_protocol.h"
#include "actors/protocol/messages.h"
#include "actors/protocol/queue_protocol.h"
#include "actors/protocol/shard_messages.h"

namespace actorflow {
namespace {

// One direction of the link between two tasks, for one target actor.
class SimLinkProxy : public caf::monitorable_actor {
 public:
  SimLinkProxy(caf::actor_config& cfg, std::weak_ptr<SimNetwork> network, TaskId from, TaskId to,
               caf::strong_actor_ptr target)
      : caf::monitorable_actor(cfg),
        network_(std::move(network)),
        from_(std::move(from)),
        to_(std::move(to)),
        from_name_(from_.ToString()),
        to_name_(to_.ToString()),
        target_(std::move(target)) {
    if (auto net = network_.lock()) {
      arrival_ = net->ArrivalSlot(from_name_, to_name_);
      reverse_arrival_ = net->ArrivalSlot(to_name_, from_name_);
    }
  }

  const char* name() const override { return "actorflow_sim_link"; }

  // Ends this proxy with its target's exit reason once the news crosses the link:
  // one latency after the target ended, and after every message from the target's
  // task to this proxy's task still in flight.
  void FollowTarget() {
    caf::weak_actor_ptr weak_self = caf::actor_cast<caf::weak_actor_ptr>(ctrl());
    target_->get()->attach_functor([weak_self](const caf::error& reason) {
      if (auto self = caf::actor_cast<caf::strong_actor_ptr>(weak_self)) {
        static_cast<SimLinkProxy*>(self->get())->TargetEnded(reason, self);
      }
    });
  }

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    caf::type_erased_tuple& content = what->content();
    if (content.size() == 1 && content.match_element<link_down_atom>(0)) {
      cleanup(std::move(exit_reason_), host);
      return;
    }
    std::shared_ptr<SimNetwork> network = network_.lock();
    if (!network) return;
    const char* kind = MessageKindOf(content);
    const int64_t bytes = BytesOf(content);
    DeliveryDecision decision;
    {
      std::lock_guard<std::mutex> lock(network->mu());
      const double now_s = network->NowSeconds();
      decision = network->injector().Decide(SimMessage{from_, to_, kind, bytes}, now_s);
      SimEvent event;
      event.virtual_us = static_cast<int64_t>(now_s * 1e6);
      event.kind = decision.dropped          ? SimEvent::Kind::kDropped
                   : decision.copies > 1     ? SimEvent::Kind::kDuplicated
                   : decision.reordered      ? SimEvent::Kind::kReordered
                   : decision.reason.empty() ? SimEvent::Kind::kDelivered
                                             : SimEvent::Kind::kDelayed;
      event.from = from_name_;
      event.to = to_name_;
      event.message_kind = kind;
      event.bytes = bytes;
      event.reason = std::move(decision.reason);
      network->log().Record(std::move(event));
    }
    // A dropped request is answered by its sender's own timeout, as on a network.
    if (decision.dropped) return;
    if (what->sender) what->sender = network->Link(to_, from_, std::move(what->sender));
    RewriteHandles(*network, content);
    if (decision.copies > 1) {
      Deliver(*network,
              caf::make_mailbox_element(what->sender, what->mid, what->stages,
                                        what->copy_content_to_message()),
              decision.delay_us, host);
    }
    Deliver(*network, std::move(what), decision.delay_us, host);
  }

 private:
  using link_down_atom = caf::atom_constant<caf::atom("simldown")>;

  void TargetEnded(const caf::error& reason, const caf::strong_actor_ptr& self) {
    std::shared_ptr<SimNetwork> network = network_.lock();
    if (!network) {
      cleanup(caf::error(reason), nullptr);
      return;
    }
    auto& clock = home_system().clock();
    caf::actor_clock::time_point at;
    {
      std::lock_guard<std::mutex> lock(network->mu());
      at = std::max(clock.now() + std::chrono::microseconds(static_cast<int64_t>(
                                      network->injector().link().latency_us)),
                    *reverse_arrival_ + caf::timespan(1));
    }
    exit_reason_ = reason;
    clock.schedule_message(at, self,
                           caf::make_mailbox_element(nullptr, caf::make_message_id(), {},
                                                     link_down_atom::value));
  }

  void Deliver(SimNetwork& network, caf::mailbox_element_ptr what, double delay_us,
               caf::execution_unit* host) {
    if (delay_us <= 0) {
      target_->enqueue(std::move(what), host);
      return;
    }
    auto& clock = home_system().clock();
    const auto at = clock.now() + std::chrono::microseconds(static_cast<int64_t>(delay_us));
    {
      std::lock_guard<std::mutex> lock(network.mu());
      *arrival_ = std::max(*arrival_, at);
    }
    clock.schedule_message(at, target_, std::move(what));
  }

  // Handles in a message from `from_` to `to_` name actors of `from_`: the receiver
  // reaches them back through the link.
  template <class Handle>
  void Relink(SimNetwork& network, Handle& handle) {
    if (handle) handle = network.LinkHandle(to_, from_, handle);
  }

  void RewriteHandles(SimNetwork& network, caf::type_erased_tuple& content) {
    for (size_t i = 0; i < content.size(); ++i) {
      if (content.match_element<std::vector<DevicePeer>>(i)) {
        for (DevicePeer& peer : *static_cast<std::vector<DevicePeer>*>(content.get_mutable(i))) {
          Relink(network, peer.actor);
        }
      } else if (content.match_element<DevicePeer>(i)) {
        Relink(network, static_cast<DevicePeer*>(content.get_mutable(i))->actor);
      } else if (content.match_element<PartitionRegistration>(i)) {
        for (DevicePeer& peer : static_cast<PartitionRegistration*>(content.get_mutable(i))->peers) {
          Relink(network, peer.actor);
        }
      } else if (content.match_element<FrontActor>(i)) {
        Relink(network, *static_cast<FrontActor*>(content.get_mutable(i)));
      } else if (content.match_element<ShardActor>(i)) {
        Relink(network, *static_cast<ShardActor*>(content.get_mutable(i)));
      } else if (content.match_element<caf::actor>(i)) {
        Relink(network, *static_cast<caf::actor*>(content.get_mutable(i)));
      }
    }
  }

  static int64_t BytesOf(const caf::type_erased_tuple& content) {
    int64_t bytes = 64;  // a message's header and small fields, roughly
    for (size_t i = 0; i < content.size(); ++i) {
      if (content.match_element<TensorDelivery>(i)) {
        const Tensor& t = content.get_as<TensorDelivery>(i).value;
        if (t.IsInitialized()) bytes += static_cast<int64_t>(t.TotalBytes());
      } else if (content.match_element<std::vector<Tensor>>(i)) {
        for (const Tensor& t : content.get_as<std::vector<Tensor>>(i)) {
          if (t.IsInitialized()) bytes += static_cast<int64_t>(t.TotalBytes());
        }
      }
    }
    return bytes;
  }

  std::weak_ptr<SimNetwork> network_;
  TaskId from_;
  TaskId to_;
  // Their names, for the event log (one per message).
  std::string from_name_;
  std::string to_name_;
  caf::strong_actor_ptr target_;
  caf::error exit_reason_;  // the target's, until the news has crossed the link
  // The network's latest arrival times from_ -> to_ and to_ -> from_ (ArrivalSlot).
  caf::actor_clock::time_point* arrival_ = nullptr;
  caf::actor_clock::time_point* reverse_arrival_ = nullptr;
};

}  // namespace

const char* MessageKindOf(const caf::type_erased_tuple& content) {
  if (content.empty() || !content.match_element<caf::atom_value>(0)) return "step";
  const caf::atom_value atom = content.get_as<caf::atom_value>(0);
  if (atom == tensor_atom::value) return "tensor";
  if (atom == shard_push_atom::value) return "push";
  if (atom == shard_pull_atom::value) return "pull";
  if (atom == ping_atom::value || atom == heartbeat_atom::value) return "heartbeat";
  if (atom == shard_snap_atom::value || atom == shard_restore_atom::value) return "checkpoint";
  if (atom == qop_atom::value || atom == qcancel_atom::value) return "queue";
  return "step";
}

SimNetwork::SimNetwork(caf::actor_system& system, FaultInjector injector)
    : system_(system), injector_(std::move(injector)), start_(system.clock().now()) {}

SimNetwork::~SimNetwork() { Clear(); }

double SimNetwork::NowSeconds() const {
  return std::chrono::duration<double>(system_.clock().now() - start_).count();
}

caf::strong_actor_ptr SimNetwork::Link(const TaskId& from, const TaskId& to,
                                      caf::strong_actor_ptr target) {
  if (from == to || !target) return target;
  std::lock_guard<std::mutex> lock(proxies_mu_);
  auto key = std::make_tuple(from.job, from.index, to.job, to.index, target->address());
  auto it = proxies_.find(key);
  if (it != proxies_.end()) return it->second;
  caf::actor_config cfg;
  auto proxy = caf::make_actor<SimLinkProxy, caf::strong_actor_ptr>(
      system_.next_actor_id(), system_.node(), &system_, cfg, weak_from_this(), from, to, target);
  static_cast<SimLinkProxy*>(proxy->get())->FollowTarget();
  proxies_.emplace(std::move(key), proxy);
  return proxy;
}

caf::actor_clock::time_point* SimNetwork::ArrivalSlot(const std::string& from,
                                                      const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  return &last_arrival_[{from, to}];  // a map's elements never move
}

void SimNetwork::Clear() {
  std::map<std::tuple<std::string, int, std::string, int, caf::actor_addr>, caf::strong_actor_ptr>
      proxies;
  {
    std::lock_guard<std::mutex> lock(proxies_mu_);
    proxies.swap(proxies_);
  }
}

}  // namespace actorflow
