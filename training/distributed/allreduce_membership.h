// The membership of an elastic all-reduce group (torchft's and Horovod elastic's
// semantics): the workers train in membership epochs, each a fixed group whose
// members meet in every step's all-reduce. An epoch ends when a member is lost (its
// step fails: every other member's step fails too, waiting for its chunks) or when
// a lost worker asks to join again (the chief ends the epoch between two steps).
// The next epoch's members are the survivors and the joiners; they take the chief's
// variables by a broadcast and go on from its global step.
//
// Every worker thread of a run calls, in a loop: WaitForEpoch, then MayStart before
// each step, then ReportEnd when it leaves the epoch (its step failed, it was told to
// stop, or it finished); a worker that found its own task lost calls RequestJoin once
// the task is reachable again.
//
// Thread safety: every method may be called from any thread.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_MEMBERSHIP_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_MEMBERSHIP_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "graph/status.h"

namespace actorflow {

class AllReduceMembership {
 public:
  struct Epoch {
    int64_t number = 0;        // 0 for the first
    std::vector<int> members;  // worker indices, ascending: rank i is members[i]
    // The rank whose variables every member takes (the broadcast's root) and whose
    // thread ends the epoch for joiners: the first member that was in the previous
    // epoch too, so that a joiner's fresh variables never win.
    int root = 0;
    int Rank(int worker) const;
  };
  // How a worker left an epoch.
  enum class End { kFinished, kStopped, kFailed, kSelfLost };

  // `workers` slots, all members of epoch 0. An epoch needs at least `min_members`.
  AllReduceMembership(int workers, int min_members);

  // The first epoch newer than `after` (-1: any) that has `worker` as a member; waits
  // for it at most `timeout_ms`. OutOfRange when the run has ended without one;
  // DeadlineExceeded past the timeout; FailedPrecondition when fewer than
  // min_members are left.
  StatusOr<Epoch> WaitForEpoch(int worker, int64_t after, int64_t timeout_ms);
  // Whether `worker` may start the step that takes the global step to `step` in
  // `epoch` (false: the epoch ends before it; the worker then reports kStopped).
  bool MayStart(int worker, int64_t epoch, int64_t step);
  // `worker` left `epoch` (at most once per epoch). The epoch changes when every
  // member has left it: the run ends when one finished, else the next epoch starts
  // with those that did not lose themselves plus the joiners.
  void ReportEnd(int worker, int64_t epoch, End how);
  // The chief, between steps: when workers asked to join, the epoch ends after the
  // latest step any member started, and every member stops there. True when it did.
  bool EndForJoiners(int64_t epoch);
  // A worker that lost itself is reachable again: it joins at the next change.
  void RequestJoin(int worker);

  // Counts for the report.
  int64_t epochs() const;
  int64_t losses() const;
  int64_t joins() const;
  std::vector<int> last_members() const;

 private:
  void StartNextEpoch();  // mu_ held

  mutable std::mutex mu_;
  std::condition_variable changed_;
  const int min_members_;
  Epoch current_;
  std::set<int> left_;           // members of current_ that reported
  std::set<int> lost_;           // members of current_ that lost themselves
  std::set<int> joiners_;        // waiting for the next epoch
  int64_t stop_at_ = -1;         // the current epoch ends before this step (-1: no end)
  int64_t max_started_ = -1;     // the latest step a member of the epoch started
  bool finished_ = false;
  std::string failure_;          // why the run cannot go on
  int64_t losses_ = 0, joins_ = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_MEMBERSHIP_H_
