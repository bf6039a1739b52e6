#include "actors/protocol/messages.h"
#include "actors/protocol/shard_messages.h"

namespace actorflow {

void RegisterMessageTypes(caf::actor_system_config& cfg) {
  cfg.add_message_type<Status>("actorflow.Status");
  cfg.add_message_type<Tensor>("actorflow.Tensor");
  cfg.add_message_type<std::vector<Tensor>>("std::vector<actorflow.Tensor>");
  cfg.add_message_type<NodeExecStats>("actorflow.NodeExecStats");
  cfg.add_message_type<DevicePeer>("actorflow.DevicePeer");
  cfg.add_message_type<std::vector<DevicePeer>>("std::vector<actorflow.DevicePeer>");
  cfg.add_message_type<PartitionRegistration>("actorflow.PartitionRegistration");
  cfg.add_message_type<RunPartitionRequest>("actorflow.RunPartitionRequest");
  cfg.add_message_type<RunPartitionResult>("actorflow.RunPartitionResult");
  cfg.add_message_type<AbortRequest>("actorflow.AbortRequest");
  cfg.add_message_type<TensorDelivery>("actorflow.TensorDelivery");
  cfg.add_message_type<DeviceStats>("actorflow.DeviceStats");
  cfg.add_message_type<RemoteStep>("actorflow.RemoteStep");
  cfg.add_message_type<RemoteStepResult>("actorflow.RemoteStepResult");
  cfg.add_message_type<OpenSessionRequest>("actorflow.OpenSessionRequest");
  cfg.add_message_type<OpenSessionResult>("actorflow.OpenSessionResult");
  cfg.add_message_type<FrontStats>("actorflow.FrontStats");
  cfg.add_message_type<MasterStats>("actorflow.MasterStats");
  cfg.add_message_type<std::vector<uint64_t>>("std::vector<@u64>");
  // Typed handles inside messages (a caf::actor is built in; these are not).
  cfg.add_message_type<DeviceActor>("actorflow.DeviceActor");
  cfg.add_message_type<ShardActor>("actorflow.ShardActor");
  // Parameter shards (actors/protocol/shard_messages.h).
  cfg.add_message_type<ShardConfig>("actorflow.ShardConfig");
  cfg.add_message_type<ShardPushArgs>("actorflow.ShardPushArgs");
  cfg.add_message_type<ShardPullReply>("actorflow.ShardPullReply");
  cfg.add_message_type<ShardPushReply>("actorflow.ShardPushReply");
  cfg.add_message_type<ShardStats>("actorflow.ShardStats");
}

}  // namespace actorflow
