// The steps an in-process session sends straight to a device, without its master.
//
// Why: a step of a one-partition plan needs the master only to find the partition
// and its device. Its answer then costs three messages (session -> master ->
// device -> master) where one will do (session -> device), and on a small step those
// hand-offs are the largest cost the actors add (tools/bench/training_bench).
//
// How: the master hands such a plan's DirectPlan back with a step's answer (the
// first step of every signature goes through it); later steps of that signature go
// to the device as a DirectRun, with the checks and errors the master would give:
// feeds checked against the signature, the step's deadline (then an abort), a
// device's error named "on device D" (then an abort), fetches placed as the master
// places them. A step that wants run metadata or a trace still goes through the
// master. A plan the master dropped is forgotten here at the next step; a step that
// reached its device after the drop (nothing ran) goes through the master again.
// Included only by actors/*.cc.
#ifndef ACTORFLOW_ACTORS_RUNTIME_DIRECT_STEPS_H_
#define ACTORFLOW_ACTORS_RUNTIME_DIRECT_STEPS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/protocol/master_protocol.h"
#include "kernels/session.h"

namespace actorflow {

class DirectSteps {
 public:
  // The device's answer, however it was sent: `send` enqueues the run (the session
  // runs the device's job on its own thread when it can) and waits for `reply`
  // until it is ready or `timeout_ms` (0: no limit) passes; false when it timed out.
  using SendAndWait = std::function<bool(const DeviceActor& device, std::shared_ptr<DirectRun> run,
                                         const std::shared_ptr<PartitionReply>& reply,
                                         int64_t timeout_ms)>;

  // The DirectPlan remembered for this signature, or null (an invalidated one is
  // forgotten). Thread-safe.
  std::shared_ptr<DirectPlan> Find(const FeedList& feeds, const std::vector<std::string>& fetches,
                                   const std::vector<std::string>& targets);
  // Remembers `plan` for the signature (at most kMaxPlans, the oldest forgotten).
  void Remember(const FeedList& feeds, const std::vector<std::string>& fetches,
                const std::vector<std::string>& targets, std::shared_ptr<DirectPlan> plan);

  // Runs one step of `plan`. Returns false, with nothing run, when the device no
  // longer has the partition (the plan is forgotten; the caller goes through the
  // master); else true with the step's status in *status.
  bool Run(const DirectPlan& plan, int64_t timeout_ms, const FeedList& feeds, size_t num_fetches,
           const SendAndWait& send, std::vector<Tensor>* outputs, Status* status);

  // Steps answered without the master, with any status (tests, diagnostics).
  int64_t steps() const;

 private:
  static constexpr size_t kMaxPlans = 16;
  struct Entry {
    std::vector<std::string> feeds;
    std::vector<std::string> fetches;
    std::vector<std::string> targets;
    std::shared_ptr<DirectPlan> plan;
  };
  bool RunOnDevice(const DirectPlan& plan, int64_t timeout_ms, const FeedList& feeds,
                   size_t num_fetches, const SendAndWait& send, std::vector<Tensor>* outputs,
                   Status* status);
  void Forget(const DirectPlan& plan);

  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // oldest first
  std::atomic<int64_t> steps_{0};
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_RUNTIME_DIRECT_STEPS_H_
