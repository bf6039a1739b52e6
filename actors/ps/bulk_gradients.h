// The gradients of a push that travel apart from the push message itself: a worker
// writes each gradient as a frame on the ps task's bulk channel
// (actors/transport/bulk_channel.h), which reads it straight into a tensor, off CAF's broker,
// and sends the push message without them (ShardPushArgs::bulk_key). The two reach
// the shard actor in either order; a BulkGradientStash pairs them.
//
// Keys: push key "<client id>/<worker>/<sequence>", unique per client and push;
// gradient i of it is BulkGradientKey(push key, i) = "<push key>#<i>".
//
// Bounds: a push waits until its wait_until (its deadline, or 60 s after it arrived
// when it has none); a gradient whose push never comes (its worker died between the
// frame and the message) is dropped kOrphanMs after it arrived.
//
// CAF-free. Thread safety: none (one shard actor owns one).
#ifndef ACTORFLOW_ACTORS_PS_BULK_GRADIENTS_H_
#define ACTORFLOW_ACTORS_PS_BULK_GRADIENTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace actorflow {

std::string BulkGradientKey(const std::string& push_key, size_t index);

// What a bulk frame for shard `name` (its key in the task's TaskServices) names as its
// device, and the shard name of such a frame's device ("" for a device's frame).
std::string BulkShardAddress(const std::string& shard_name);
std::string ShardOfBulkAddress(const std::string& device);

class BulkGradientStash {
 public:
  using RequestId = uint64_t;
  static constexpr int64_t kOrphanMs = 60000;
  static constexpr int64_t kWaitWithoutDeadlineMs = 60000;
  static constexpr int64_t kNever = INT64_MAX;

  // A push of `count` gradients keyed `push_key` arrived as request `id`. True: every
  // gradient was here; they are moved into *gradients (in order) and forgotten.
  // False: the push waits for the rest until `wait_until` (ms).
  bool TakeOrWait(RequestId id, const std::string& push_key, size_t count, int64_t wait_until,
                  std::vector<Tensor>* gradients);

  // A gradient arrived at `now_ms`. When it completes a waiting push: true, with that
  // push's id and gradients (forgotten here). A key that is not "<push key>#<i>" is
  // ignored; a second tensor for one key replaces the first.
  bool Arrived(const std::string& key, Tensor gradient, int64_t now_ms, RequestId* completed,
               std::vector<Tensor>* gradients);

  // Forgets the waiting pushes whose wait_until is at or before `now_ms` (returned:
  // the caller answers them) and the gradients that arrived kOrphanMs or more before
  // `now_ms` for no waiting push.
  std::vector<RequestId> Expire(int64_t now_ms);

  // Forgets a waiting push (its requester died) and what arrived for it.
  void Cancel(RequestId id);

  // When Expire next has something to do (kNever: nothing waits).
  int64_t NextDeadline() const;

  size_t waiting() const { return waiting_.size(); }
  size_t stashed() const;  // gradients held

 private:
  struct Waiting {
    std::string push_key;
    size_t count = 0;
    int64_t wait_until = 0;
  };
  struct Arrival {
    Tensor tensor;
    int64_t at_ms = 0;
  };
  // Moves the `count` gradients of `push_key` into *gradients when all are here.
  bool TakeIfComplete(const std::string& push_key, size_t count, std::vector<Tensor>* gradients);

  std::map<RequestId, Waiting> waiting_;
  std::map<std::string, RequestId> waiting_by_key_;
  // push key -> gradient index -> tensor.
  std::map<std::string, std::map<size_t, Arrival>> arrived_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PS_BULK_GRADIENTS_H_
