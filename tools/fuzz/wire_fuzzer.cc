// Fuzz target: the wire decoder (actors/protocol/wire.h, actors/protocol/wire_core.h) for every message
// kind a remote node may send (tools/fuzz/wire_kinds.h): what a server decodes from
// the bytes of a peer or client before any of its code looks at the message.
//
// Input layout: byte 0 picks the kind (modulo kNumWireKinds), the rest is the
// serialized value.
//
// Never crashes and never allocates more than the input justifies. Invariants of a
// value that decodes: its values are usable (statuses print, tensors' elements read),
// it serializes again, and that serialization decodes and serializes to the same
// bytes (the encoding is canonical after one round).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/fuzz/fuzz_check.h"
#include "tools/fuzz/wire_kinds.h"

namespace {

using actorflow::Status;
using actorflow::Tensor;

// Reads what a receiver would read of the decoded values.
void Touch(const Status& s) { (void)s.ToString(); }
void Touch(const Tensor& t) {
  if (t.IsInitialized()) (void)t.DebugStringWithValues(1 << 13);  // more than an input holds
}
void Touch(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) Touch(t);
}
void Touch(const actorflow::RunPartitionRequest& x) { Touch(x.feed_values); }
void Touch(const actorflow::RunPartitionResult& x) {
  Touch(x.status);
  Touch(x.fetches);
}
void Touch(const actorflow::AbortRequest& x) { Touch(x.status); }
void Touch(const actorflow::TensorDelivery& x) { Touch(x.value); }
void Touch(const actorflow::RemoteStep& x) { Touch(x.feed_values); }
void Touch(const actorflow::RemoteStepResult& x) {
  Touch(x.status);
  Touch(x.outputs);
}
void Touch(const actorflow::OpenSessionResult& x) { Touch(x.status); }
void Touch(const actorflow::ShardPushArgs& x) { Touch(x.gradients); }
void Touch(const actorflow::ShardPullReply& x) {
  Touch(x.status);
  Touch(x.values);
  Touch(x.slot_values);
}
void Touch(const actorflow::ShardPushReply& x) {
  Touch(x.status);
  Touch(x.values);
}
void Touch(const actorflow::PartitionRegistration& x) {
  if (x.partition) (void)actorflow::GraphToJson(*x.partition->graph);
}
template <class T>
void Touch(const T&) {}

template <class T>
void DecodeAs(const char* data, size_t size) {
  caf::actor_system& system = actorflow::fuzz::FuzzActorSystem();
  T value;
  caf::binary_deserializer source{system, data, size};
  if (source(value)) return;  // refused: fine, as long as nothing crashed
  Touch(value);

  std::vector<char> first;
  caf::binary_serializer sink{system, first};
  FUZZ_CHECK(!sink(value), "a decoded value does not serialize");
  T again;
  caf::binary_deserializer source2{system, first};
  auto err = source2(again);
  FUZZ_CHECK(!err, "a serialized value does not decode: " + caf::to_string(err));
  std::vector<char> second;
  caf::binary_serializer sink2{system, second};
  FUZZ_CHECK(!sink2(again), "a decoded value does not serialize");
  FUZZ_CHECK(first == second, "the encoding is not stable");
}

void DecodeMessage(const char* data, size_t size) {
  caf::actor_system& system = actorflow::fuzz::FuzzActorSystem();
  caf::message msg;
  caf::binary_deserializer source{system, data, size};
  if (source(msg)) return;
  (void)caf::to_string(msg);
  std::vector<char> first;
  caf::binary_serializer sink{system, first};
  FUZZ_CHECK(!sink(msg), "a decoded message does not serialize");
  caf::message again;
  caf::binary_deserializer source2{system, first};
  auto err = source2(again);
  FUZZ_CHECK(!err, "a serialized message does not decode: " + caf::to_string(err));
  std::vector<char> second;
  caf::binary_serializer sink2{system, second};
  FUZZ_CHECK(!sink2(again), "a decoded message does not serialize");
  FUZZ_CHECK(first == second, "the encoding is not stable");
}

template <class... Ts>
void Dispatch(int kind, const char* data, size_t size, actorflow::fuzz::KindList<Ts...>) {
  int i = 1;
  ((kind == i++ ? DecodeAs<Ts>(data, size) : void()), ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int kind = data[0] % actorflow::fuzz::kNumWireKinds;
  const char* payload = reinterpret_cast<const char*>(data) + 1;
  if (kind == 0) {
    DecodeMessage(payload, size - 1);
  } else {
    Dispatch(kind, payload, size - 1, actorflow::fuzz::WireKinds{});
  }
  return 0;
}
