// How the runtime's messages cross processes: CAF `inspect` overloads for every
// payload that a remote node may receive, and the registration of those types with
// an actor system. Included through actors/messages.h only.
//
// A Tensor is written as dtype, shape, byte count and then its bytes in one raw
// block (never element by element); the human-readable inspector used for logging
// sees only dtype and shape. A partition travels as graph JSON plus its name lists.
#ifndef ACTORFLOW_ACTORS_WIRE_H_
#define ACTORFLOW_ACTORS_WIRE_H_

#include <type_traits>

#include <caf/all.hpp>

#include "graph/graph_json.h"

namespace actorflow {

// Registers every serializable message type; call on each actor system's config
// before the system starts (clients, servers, local clusters alike).
void RegisterMessageTypes(caf::actor_system_config& cfg);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Status& x) {
  int32_t code = static_cast<int32_t>(x.code());
  std::string message = x.message();
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x = Status(static_cast<Code>(code), message);
    return caf::none;
  });
  return f(caf::meta::type_name("actorflow.Status"), code, message, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Tensor& x) {
  int32_t dtype = x.IsInitialized() ? static_cast<int32_t>(x.dtype()) : -1;
  std::vector<int64_t> dims = x.IsInitialized() ? x.shape().dims() : std::vector<int64_t>{};
  if constexpr (std::is_base_of<caf::serializer, Inspector>::value) {
    auto save = caf::meta::save_callback([&]() -> caf::error {
      uint64_t bytes = x.IsInitialized() ? x.TotalBytes() : 0;
      if (auto err = f(bytes)) return err;
      return bytes > 0 ? f.apply_raw(bytes, x.raw_data()) : caf::error{};
    });
    return f(caf::meta::type_name("actorflow.Tensor"), dtype, dims, save);
  } else if constexpr (std::is_base_of<caf::deserializer, Inspector>::value) {
    auto load = caf::meta::load_callback([&]() -> caf::error {
      uint64_t bytes = 0;
      if (auto err = f(bytes)) return err;
      if (dtype < 0) {
        x = Tensor();
        return caf::none;
      }
      // Every byte is read below: skip the zero fill.
      x = Tensor::Uninitialized(static_cast<DType>(dtype), Shape(dims));
      if (bytes != x.TotalBytes()) return caf::make_error(caf::sec::invalid_argument);
      return bytes > 0 ? f.apply_raw(bytes, x.raw_data()) : caf::error{};
    });
    return f(caf::meta::type_name("actorflow.Tensor"), dtype, dims, load);
  } else {
    return f(caf::meta::type_name("actorflow.Tensor"), dtype, dims);
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeExecStats& x) {
  return f(caf::meta::type_name("actorflow.NodeExecStats"), x.node_name, x.op, x.device,
           x.start_micros, x.end_micros, x.thread_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DevicePeer& x) {
  return f(caf::meta::type_name("actorflow.DevicePeer"), x.name, x.type, x.actor);
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
  return f(caf::meta::type_name("actorflow.PartitionRegistration"), x.partition_id, device,
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
           x.executed_nodes, x.executed_start_micros, x.step_stats);
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
           x.executed_nodes, x.step_stats);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, OpenSessionRequest& x) {
  return f(caf::meta::type_name("actorflow.OpenSessionRequest"), x.graph_json,
           x.allow_soft_placement, x.log_device_placement);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, OpenSessionResult& x) {
  return f(caf::meta::type_name("actorflow.OpenSessionResult"), x.status, x.session_id);
}

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_WIRE_H_
