// Writes the wire fuzzer's seed corpus: one file per message kind of
// tools/fuzz/wire_kinds.h holding a typical value of that kind, serialized as a
// sending node does (the kind byte first), plus whole caf::messages as the
// runtime's protocols send them (atom + payload).
//
//   wire_seed_gen OUT_DIR
#include <cstdio>
#include <string>
#include <vector>

#include "graph/graph_json.h"
#include "tools/fuzz/wire_kinds.h"

namespace {

using namespace actorflow;  // NOLINT: a short generator

int written = 0;

bool WriteSeed(const std::string& dir, const std::string& name, int kind,
               const std::vector<char>& bytes) {
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    return false;
  }
  const char k = static_cast<char>(kind);
  std::fwrite(&k, 1, 1, f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  ++written;
  return true;
}

template <class T>
int KindOf(fuzz::KindList<>) {
  return -1;
}
template <class T, class Head, class... Rest>
int KindOf(fuzz::KindList<Head, Rest...>) {
  if (std::is_same<T, Head>::value) return 1;
  int rest = KindOf<T>(fuzz::KindList<Rest...>{});
  return rest < 0 ? -1 : rest + 1;
}

template <class T>
bool Seed(const std::string& dir, const std::string& name, T value) {
  std::vector<char> bytes;
  caf::binary_serializer sink{fuzz::FuzzActorSystem(), bytes};
  if (auto err = sink(value)) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), caf::to_string(err).c_str());
    return false;
  }
  return WriteSeed(dir, name, KindOf<T>(fuzz::WireKinds{}), bytes);
}

bool SeedMessage(const std::string& dir, const std::string& name, caf::message msg) {
  std::vector<char> bytes;
  caf::binary_serializer sink{fuzz::FuzzActorSystem(), bytes};
  if (auto err = sink(msg)) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), caf::to_string(err).c_str());
    return false;
  }
  return WriteSeed(dir, name, 0, bytes);
}

std::shared_ptr<const DevicePartition> SamplePartition() {
  auto graph = GraphFromJson(R"({"format": "actorflow.graph/1", "nodes": [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 2]}},
    {"name": "c", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [2], "data": [1, 2]}}},
    {"name": "y", "op": "Add", "inputs": ["x", "c"]}]})");
  if (!graph.ok()) {
    std::fprintf(stderr, "sample graph: %s\n", graph.status().ToString().c_str());
    return nullptr;
  }
  auto p = std::make_shared<DevicePartition>();
  p->device = "/job:worker/replica:0/task:0/device:CPU:0";
  p->graph = std::move(graph).value();
  p->feeds = {"x"};
  p->feed_inputs = {"x"};
  p->fetches = {"y"};
  p->targets = {};
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const Tensor f32 = Tensor::FromVector<float>({1.5f, -2, 0, 4}, Shape{2, 2});
  const Tensor i64 = Tensor::FromVector<int64_t>({7, -9});
  const Tensor flags = Tensor::FromVector<bool>({true, false, true});
  const Tensor f64 = Tensor::Scalar<double>(0.25);
  NodeExecStats stats{"y", "Add", "/job:worker/replica:0/task:0/device:CPU:0", 10, 25, 3};
  CrossDeviceTransfer transfer{"/job:worker/replica:0/task:0/device:CPU:0",
                               "/job:ps/replica:0/task:0/device:CPU:0", 2, 64};
  DeviceClockOffset offset{"/job:ps/replica:0/task:0/device:CPU:0", -40, 5};

  bool ok = true;
  ok &= Seed(dir, "status_ok", Status::OK());
  ok &= Seed(dir, "status_error", InvalidArgument("node 'y': bad input"));
  ok &= Seed(dir, "tensor_float32", f32);
  ok &= Seed(dir, "tensor_int64", i64);
  ok &= Seed(dir, "tensor_bool", flags);
  ok &= Seed(dir, "tensor_scalar_float64", f64);
  ok &= Seed(dir, "tensor_uninitialized", Tensor());
  ok &= Seed(dir, "tensors", std::vector<Tensor>{f32, i64, flags});
  ok &= Seed(dir, "node_exec_stats", stats);
  ok &= Seed(dir, "cross_device_transfer", transfer);
  ok &= Seed(dir, "device_clock_offset", offset);
  ok &= Seed(dir, "device_peer", DevicePeer{"/job:ps/replica:0/task:0/device:CPU:0", "CPU", {}});
  ok &= Seed(dir, "device_peers",
             std::vector<DevicePeer>{{"/job:ps/replica:0/task:0/device:CPU:0", "CPU", {}}});
  PartitionRegistration registration;
  registration.partition_id = 12;
  registration.partition = SamplePartition();
  ok &= registration.partition != nullptr;
  if (registration.partition) ok &= Seed(dir, "partition_registration", registration);
  ok &= Seed(dir, "run_partition_request", RunPartitionRequest{5, 12, {f32}, true, true});
  RunPartitionResult result;
  result.fetches = {f32};
  result.executed_nodes = {"x", "c", "y"};
  result.executed_start_micros = {1, 2, 3};
  result.step_stats = {stats};
  result.device_clock_micros = 99;
  result.transfers = {transfer};
  ok &= Seed(dir, "run_partition_result", result);
  ok &= Seed(dir, "abort_request", AbortRequest{5, Cancelled("step 5 aborted")});
  ok &= Seed(dir, "tensor_delivery", TensorDelivery{5, "edge;0;y", f32});
  ok &= Seed(dir, "device_stats", DeviceStats{"/job:worker/replica:0/task:0/device:CPU:0", 1, 2, 3, 4});
  RemoteStep step;
  step.session_id = 3;
  step.feed_names = {"x"};
  step.feed_values = {f32};
  step.fetches = {"y"};
  step.timeout_in_ms = 1000;
  ok &= Seed(dir, "remote_step", step);
  RemoteStepResult step_result;
  step_result.outputs = {f32};
  step_result.executed_nodes = {"y"};
  step_result.step_stats = {stats};
  step_result.transfers = {transfer};
  step_result.transfer_stats = {stats};
  step_result.clock_offsets = {offset};
  ok &= Seed(dir, "remote_step_result", step_result);
  ok &= Seed(dir, "open_session_request", OpenSessionRequest{GraphToJson(*SamplePartition()->graph), 0, true, false});
  ok &= Seed(dir, "open_session_result", OpenSessionResult{Status::OK(), 3});
  ok &= Seed(dir, "front_stats", FrontStats{"/job:worker/task:0", 1, 2});
  ok &= Seed(dir, "master_stats", MasterStats{1, 2, 0, false});
  ShardConfig config;
  config.mode = UpdateMode::kStaleSynchronous;
  config.total_replicas = 3;
  config.staleness_bound = 2;
  config.optimizer = "adam";
  config.learning_rate = 0.01;
  ok &= Seed(dir, "shard_config", config);
  // Worker 1's push of "w" (sequence 7, on version 3), asking for the values back or not.
  auto push_args = [&f32](bool return_values) {
    ShardPushArgs args;
    args.worker = 1;
    args.sequence = 7;
    args.base_version = 3;
    args.names = {"w"};
    args.gradients = {f32};
    args.return_values = return_values;
    return args;
  };
  ok &= Seed(dir, "shard_push_args", push_args(true));
  ShardPullReply pull;
  pull.id = 4;
  pull.version = 9;
  pull.names = {"w"};
  pull.values = {f32};
  pull.slot_names = {"w/m"};
  pull.slot_values = {f32};
  ok &= Seed(dir, "shard_pull_reply", pull);
  ShardPushReply push;
  push.id = 4;
  push.applied = true;
  push.staleness = 1;
  push.version = 10;
  push.names = {"w"};
  push.values = {f32};
  push.values_version = 10;
  ok &= Seed(dir, "shard_push_reply", push);
  ShardStats shard_stats;
  shard_stats.initialized = true;
  shard_stats.variables = 2;
  shard_stats.workers_lost = {1};
  shard_stats.clocks = {4, 5};
  ok &= Seed(dir, "shard_stats", shard_stats);
  ok &= Seed(dir, "device_actor_null", DeviceActor{});
  ok &= Seed(dir, "shard_actor_null", ShardActor{});
  ok &= Seed(dir, "u64s", std::vector<uint64_t>{1, 2, 3});

  // Whole messages as the protocols send them.
  ok &= SeedMessage(dir, "msg_remote_step", caf::make_message(remote_step_atom::value, step));
  ok &= SeedMessage(dir, "msg_open", caf::make_message(open_atom::value,
                                                      OpenSessionRequest{GraphToJson(*SamplePartition()->graph), 0, false, false}));
  ok &= SeedMessage(dir, "msg_run", caf::make_message(run_atom::value, RunPartitionRequest{5, 12, {f32, i64}, false, true}));
  ok &= SeedMessage(dir, "msg_tensor", caf::make_message(tensor_atom::value, TensorDelivery{5, "edge;0;y", flags}));
  ok &= SeedMessage(dir, "msg_abort", caf::make_message(abort_atom::value, AbortRequest{5, Cancelled("x")}));
  ok &= SeedMessage(dir, "msg_push", caf::make_message(shard_push_atom::value, push_args(false), int64_t{100}));
  ok &= SeedMessage(dir, "msg_pull", caf::make_message(shard_pull_atom::value, int64_t{3}, int64_t{100}));
  ok &= SeedMessage(dir, "msg_result", caf::make_message(step_result));
  std::printf("wrote %d seeds to %s\n", written, dir.c_str());
  // The actor system is left alive on purpose (FuzzActorSystem never shuts down).
  std::fflush(stdout);
  std::_Exit(ok ? 0 : 1);
}
