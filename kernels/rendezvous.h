// The services a step's kernels use to talk to the world outside their executor,
// implemented by the runtime that hosts the executor (the device actor of a CPU or
// GPU device) and absent (nullptr) in DirectSession.
//
// Rendezvous: how _Send and _Recv kernels exchange tensors between partitions. A
// tensor is keyed by (step id, tensor name, sending device, receiving device); a
// send may come before or after the matching receive.
// AsyncScheduler: how an asynchronous kernel gets called back later on the thread
// that runs its executor (never block that thread instead).
//
// Thread safety: both are called only from the thread running the step's executor;
// their callbacks run on that thread too.
#ifndef ACTORFLOW_KERNELS_RENDEZVOUS_H_
#define ACTORFLOW_KERNELS_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

struct RendezvousKey {
  int64_t step_id = 0;
  std::string tensor_name;  // "src_node:k" (or a control edge's key)
  std::string send_device;
  std::string recv_device;
  // The local step whose Recv waits, when step_id is not it: members of a collective
  // (graph/collective_ops.h) run steps of their own ids and key their chunks by an
  // execution they agree on instead. An abort of this step fails the waiting Recv.
  // 0: step_id. Not part of the key.
  int64_t waiting_step = 0;

  int64_t WaitingStep() const { return waiting_step != 0 ? waiting_step : step_id; }

  // "step;send_device;recv_device;tensor_name": unique per step and edge.
  std::string ToString() const;
  bool operator<(const RendezvousKey& o) const { return ToString() < o.ToString(); }
};

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  // Hands `value` to the receiving device (by reference in-process). Fails when the
  // receiver is unknown or gone (Unavailable naming it), never blocks.
  virtual Status Send(const RendezvousKey& key, const Tensor& value) = 0;
  using RecvCallback = std::function<void(const Status& status, const Tensor& value)>;
  // Calls `done` once: with the tensor when it arrives (or already has), or with
  // the step's abort status (Aborted/Cancelled/DeadlineExceeded).
  virtual void RecvAsync(const RendezvousKey& key, RecvCallback done) = 0;
};

class AsyncScheduler {
 public:
  virtual ~AsyncScheduler() = default;
  // Calls `fn` on the executor's thread after `delay_micros` (>= 0).
  virtual void RunAfter(int64_t delay_micros, std::function<void()> fn) = 0;
  // Calls `fn` on the executor's thread soon. Unlike everything else here, Post is
  // thread-safe: a completion that fires on a foreign thread (a GPU stream's
  // callback, a helper thread) hands its continuation back through it.
  virtual void Post(std::function<void()> fn) = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_RENDEZVOUS_H_
