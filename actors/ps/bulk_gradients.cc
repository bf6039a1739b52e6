#include "actors/ps/bulk_gradients.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace actorflow {

std::string BulkGradientKey(const std::string& push_key, size_t index) {
  return push_key + "#" + std::to_string(index);
}

namespace {
constexpr char kShardAddressPrefix[] = "shard:";
constexpr size_t kShardAddressPrefixSize = sizeof(kShardAddressPrefix) - 1;
}  // namespace

std::string BulkShardAddress(const std::string& shard_name) {
  return kShardAddressPrefix + shard_name;
}

std::string ShardOfBulkAddress(const std::string& device) {
  if (device.compare(0, kShardAddressPrefixSize, kShardAddressPrefix) != 0) return "";
  return device.substr(kShardAddressPrefixSize);
}

bool BulkGradientStash::TakeIfComplete(const std::string& push_key, size_t count,
                                       std::vector<Tensor>* gradients) {
  auto it = arrived_.find(push_key);
  if (it == arrived_.end()) {
    if (count > 0) return false;
    gradients->clear();  // a push of no gradients has them all
    return true;
  }
  if (it->second.size() < count) return false;
  gradients->clear();
  gradients->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!it->second.count(i)) return false;  // an index past count came instead
  }
  for (size_t i = 0; i < count; ++i) {
    auto g = it->second.find(i);
    gradients->push_back(std::move(g->second.tensor));
  }
  arrived_.erase(it);
  return true;
}

bool BulkGradientStash::TakeOrWait(RequestId id, const std::string& push_key, size_t count,
                                   int64_t wait_until, std::vector<Tensor>* gradients) {
  if (TakeIfComplete(push_key, count, gradients)) return true;
  waiting_[id] = Waiting{push_key, count, wait_until};
  waiting_by_key_[push_key] = id;
  return false;
}

bool BulkGradientStash::Arrived(const std::string& key, Tensor gradient, int64_t now_ms,
                                RequestId* completed, std::vector<Tensor>* gradients) {
  const size_t hash = key.rfind('#');
  if (hash == std::string::npos || hash == 0 || hash + 1 == key.size()) return false;
  // Decimal digits only (strtoull alone would take a sign or leading spaces).
  if (!std::all_of(key.begin() + hash + 1, key.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return false;
  }
  const unsigned long long index = std::strtoull(key.c_str() + hash + 1, nullptr, 10);
  const std::string push_key = key.substr(0, hash);
  arrived_[push_key][static_cast<size_t>(index)] = Arrival{std::move(gradient), now_ms};
  auto waiting = waiting_by_key_.find(push_key);
  if (waiting == waiting_by_key_.end()) return false;
  const RequestId id = waiting->second;
  if (!TakeIfComplete(push_key, waiting_.at(id).count, gradients)) return false;
  waiting_.erase(id);
  waiting_by_key_.erase(waiting);
  *completed = id;
  return true;
}

std::vector<BulkGradientStash::RequestId> BulkGradientStash::Expire(int64_t now_ms) {
  std::vector<RequestId> expired;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->second.wait_until > now_ms) {
      ++it;
      continue;
    }
    expired.push_back(it->first);
    arrived_.erase(it->second.push_key);
    waiting_by_key_.erase(it->second.push_key);
    it = waiting_.erase(it);
  }
  for (auto it = arrived_.begin(); it != arrived_.end();) {
    if (waiting_by_key_.count(it->first)) {
      ++it;
      continue;
    }
    auto& by_index = it->second;
    for (auto g = by_index.begin(); g != by_index.end();) {
      g = g->second.at_ms + kOrphanMs <= now_ms ? by_index.erase(g) : std::next(g);
    }
    it = by_index.empty() ? arrived_.erase(it) : std::next(it);
  }
  return expired;
}

void BulkGradientStash::Cancel(RequestId id) {
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return;
  arrived_.erase(it->second.push_key);
  waiting_by_key_.erase(it->second.push_key);
  waiting_.erase(it);
}

int64_t BulkGradientStash::NextDeadline() const {
  int64_t next = kNever;
  for (const auto& [id, w] : waiting_) next = std::min(next, w.wait_until);
  for (const auto& [push_key, by_index] : arrived_) {
    if (waiting_by_key_.count(push_key)) continue;
    for (const auto& [index, arrival] : by_index) next = std::min(next, arrival.at_ms + kOrphanMs);
  }
  return next;
}

size_t BulkGradientStash::stashed() const {
  size_t n = 0;
  for (const auto& [push_key, by_index] : arrived_) n += by_index.size();
  return n;
}

}  // namespace actorflow
