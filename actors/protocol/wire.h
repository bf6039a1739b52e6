// How the runtime's messages cross processes: CAF `inspect` overloads for every
// protocol payload that a remote node may receive (the basic values' are in
// actors/protocol/wire_core.h), and the registration of those types with an actor system.
// Included through actors/protocol/messages.h only (CAF).
//
// A partition travels as graph JSON plus its name lists; a typed actor handle as
// the actor's address (its interface is not sent: both ends compile the same one).
#ifndef ACTORFLOW_ACTORS_PROTOCOL_WIRE_H_
#define ACTORFLOW_ACTORS_PROTOCOL_WIRE_H_

#include <type_traits>

#include <caf/all.hpp>

#include "actors/protocol/device_protocol.h"
#include "actors/protocol/front_protocol.h"
#include "actors/protocol/master_protocol.h"
#include "actors/protocol/wire_core.h"
#include "graph/graph_json.h"

namespace actorflow {

// Registers every serializable message type; call on each actor system's config
// before the system starts (clients, servers, local clusters alike).
void RegisterMessageTypes(caf::actor_system_config& cfg);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DevicePeer& x) {
  return f(caf::meta::type_name("actorflow.DevicePeer"), x.name, x.type, x.actor,
           x.bulk_endpoint);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PartitionRegistration& x) {
  std::string device, graph_json;
  std::vector<std::string> feeds, feed_inputs, fetches, targets;
  if (x.partition) {
    device = x.partition->device;
    if constexpr (std::is_base_of<caf::serializer, Inspector>::value) {
      graph_json = GraphToJson(*x.partition->graph);
    }
    feeds = x.partition->feeds;
    feed_inputs = x.partition->feed_inputs;
    fetches = x.partition->fetches;
    targets = x.partition->targets;
  }
  auto load = caf::meta::load_callback([&]() -> caf::error {
    auto graph = GraphFromJson(graph_json);
    if (!graph.ok()) return caf::make_error(caf::sec::invalid_argument, graph.status().ToString());
    auto p = std::make_shared<DevicePartition>();
    p->device = device;
    p->graph = std::move(graph).value();
    p->feeds = feeds;
    p->feed_inputs = feed_inputs;
    p->fetches = fetches;
    p->targets = targets;
    x.partition = std::move(p);
    return caf::none;
  });
  return f(caf::meta::type_name("actorflow.PartitionRegistration"), x.partition_id,
           x.session_scope, device,
           graph_json, feeds, feed_inputs, fetches, targets, x.peers, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunPartitionRequest& x) {
  return f(caf::meta::type_name("actorflow.RunPartitionRequest"), x.step_id, x.partition_id,
           x.feed_values, x.collect_stats, x.record_executed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunPartitionResult& x) {
  return f(caf::meta::type_name("actorflow.RunPartitionResult"), x.status, x.fetches,
           x.executed_nodes, x.executed_start_micros, x.step_stats, x.transfers,
           x.device_clock_micros);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, AbortRequest& x) {
  return f(caf::meta::type_name("actorflow.AbortRequest"), x.step_id, x.status);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TensorDelivery& x) {
  return f(caf::meta::type_name("actorflow.TensorDelivery"), x.step_id, x.key, x.value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DeviceStats& x) {
  return f(caf::meta::type_name("actorflow.DeviceStats"), x.device, x.pending_recvs,
           x.inbox_tensors, x.active_steps, x.partitions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RemoteStep& x) {
  return f(caf::meta::type_name("actorflow.RemoteStep"), x.session_id, x.feed_names,
           x.feed_values, x.fetches, x.targets, x.timeout_in_ms, x.trace, x.want_metadata);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RemoteStepResult& x) {
  return f(caf::meta::type_name("actorflow.RemoteStepResult"), x.status, x.outputs,
           x.executed_nodes, x.step_stats, x.transfers, x.transfer_stats, x.clock_offsets);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, OpenSessionRequest& x) {
  return f(caf::meta::type_name("actorflow.OpenSessionRequest"), x.graph_json,
           x.graph_ticket, x.allow_soft_placement, x.log_device_placement);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, OpenSessionResult& x) {
  return f(caf::meta::type_name("actorflow.OpenSessionResult"), x.status, x.session_id,
           x.step_port);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MasterStats& x) {
  return f(caf::meta::type_name("actorflow.MasterStats"), x.plans, x.partitions, x.in_flight,
           x.closed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, FrontStats& x) {
  return f(caf::meta::type_name("actorflow.FrontStats"), x.task, x.sessions, x.devices);
}

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PROTOCOL_WIRE_H_
