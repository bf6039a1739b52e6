// The message kinds the wire fuzzer (wire_fuzzer.cc) decodes and the seed generator
// (wire_seed_gen.cc) writes: every payload type actors/protocol/wire.cc registers, in a fixed
// order. A fuzz input's first byte picks a kind (modulo the count); the rest is that
// kind's serialized form (caf::binary_serializer). Kind 0 is a whole caf::message,
// decoded as a remote node's middleman decodes one: type names looked up in the
// registry that RegisterMessageTypes filled, then each element.
// Append new kinds at the end, so that the checked-in seeds keep their meaning.
#ifndef ACTORFLOW_TOOLS_FUZZ_WIRE_KINDS_H_
#define ACTORFLOW_TOOLS_FUZZ_WIRE_KINDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/protocol/messages.h"

namespace actorflow {
namespace fuzz {

template <class... Ts>
struct KindList {};

// Kinds 1..N; kind 0 is caf::message.
using WireKinds =
    KindList<Status, Tensor, std::vector<Tensor>, NodeExecStats, CrossDeviceTransfer,
             DeviceClockOffset, DevicePeer, std::vector<DevicePeer>, PartitionRegistration,
             RunPartitionRequest, RunPartitionResult, AbortRequest, TensorDelivery, DeviceStats,
             RemoteStep, RemoteStepResult, OpenSessionRequest, OpenSessionResult, FrontStats,
             MasterStats, ShardConfig, ShardPushArgs, ShardPullReply, ShardPushReply, ShardStats,
             DeviceActor, ShardActor, std::vector<uint64_t>>;

template <class... Ts>
constexpr int CountKinds(KindList<Ts...>) {
  return sizeof...(Ts) + 1;
}
inline constexpr int kNumWireKinds = CountKinds(WireKinds{});

// The actor system whose type registry decodes kind 0 (created on first use, shared
// by every call; nothing is ever sent through it).
inline caf::actor_system& FuzzActorSystem() {
  static caf::actor_system_config* cfg = [] {
    auto* c = new caf::actor_system_config;
    c->set("scheduler.max-threads", 1);
    RegisterMessageTypes(*c);
    return c;
  }();
  static caf::actor_system* system = new caf::actor_system(*cfg);
  return *system;
}

}  // namespace fuzz
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_FUZZ_WIRE_KINDS_H_
