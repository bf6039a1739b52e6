#include "actors/transport/server_limits.h"

#include <atomic>

namespace actorflow {
namespace {

Status CheckPositive(const char* flag, int64_t value) {
  if (value > 0) return Status::OK();
  return InvalidArgument(std::string(flag) + " must be > 0, not " + std::to_string(value));
}

std::atomic<int64_t>& PeerTimeoutDefault() {
  static std::atomic<int64_t> timeout_ms{kDefaultPeerTimeoutMs};
  return timeout_ms;
}

}  // namespace

int64_t DefaultPeerTimeoutMs() { return PeerTimeoutDefault().load(std::memory_order_relaxed); }

void SetDefaultPeerTimeoutMs(int64_t timeout_ms) {
  PeerTimeoutDefault().store(timeout_ms, std::memory_order_relaxed);
}

Status ValidatePeerTimeoutMs(const std::string& flag, int64_t timeout_ms) {
  if (timeout_ms >= kMinPeerTimeoutMs) return Status::OK();
  return InvalidArgument(flag + " must be at least " + std::to_string(kMinPeerTimeoutMs) +
                         " ms (heartbeats go out every eighth of it, and never less than 10 ms "
                         "apart), not " + std::to_string(timeout_ms));
}

Status ValidateLimits(const TransportLimits& transport, const RequestLimits& requests) {
  AF_RETURN_IF_ERROR(CheckPositive("--max-message-bytes", transport.max_message_bytes));
  AF_RETURN_IF_ERROR(CheckPositive("--max-connections", transport.max_connections));
  AF_RETURN_IF_ERROR(CheckPositive("--handshake-timeout-ms", transport.handshake_timeout_ms));
  AF_RETURN_IF_ERROR(CheckPositive("--max-graph-nodes", requests.max_graph_nodes));
  return CheckPositive("--max-tensor-bytes", requests.max_tensor_bytes);
}

Status CheckGraphNodes(int64_t nodes, const RequestLimits& limits) {
  if (nodes <= limits.max_graph_nodes) return Status::OK();
  return ResourceExhausted("graph has " + std::to_string(nodes) +
                           " nodes, over --max-graph-nodes " +
                           std::to_string(limits.max_graph_nodes));
}

Status CheckFedTensorBytes(const std::string& feed, int64_t bytes, const RequestLimits& limits) {
  if (bytes <= limits.max_tensor_bytes) return Status::OK();
  return ResourceExhausted("feed '" + feed + "' has " + std::to_string(bytes) +
                           " bytes, over --max-tensor-bytes " +
                           std::to_string(limits.max_tensor_bytes));
}

}  // namespace actorflow
