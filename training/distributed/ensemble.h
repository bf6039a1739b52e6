// Ensembles of networks, after the distributed-TensorFlow guide's between-graph
// example: N members, each trained and run on its own device or task, whose
// predictions are combined (mean of the class probabilities, or a majority vote).
//
// Between graphs: every member pushes its prediction for a round (a query) into an
// aggregator queue on the aggregator's task; the aggregator dequeues with a deadline
// and combines whatever arrived, saying which members answered. A member that is
// killed or stalled costs one deadline, not the answer.
//
//   EnsembleQueueOptions q{"/job:ps/task:0", "ensemble", /*num_classes=*/3};
//   auto member = EnsembleMember::Create(i, q, worker_session_factory);   // per member
//   (*member)->Push(round, probabilities);                  // float32 [batch, 3]
//   auto aggregator = EnsembleAggregator::Create(3, q, ps_session_factory);
//   EnsembleResult r = *(*aggregator)->Aggregate(round, /*timeout_ms=*/500,
//                                                EnsembleCombine::kMeanProbabilities);
//   // r.answered {0, 1}, r.missing {2}, r.probabilities [batch, 3], r.classes [batch]
//
// A queue element is (member int32 [], round int64 [], probabilities float32
// [batch, num_classes]). Elements of other rounds (a member that answered too
// late) are dropped by the aggregator; a member's second answer for a round too.
//
// In one graph: CombineInGraph adds the aggregation of member outputs that the
// caller placed on their devices (scope.WithDevice per member).
//
// Thread safety: an EnsembleMember or EnsembleAggregator is for one thread at a
// time; different members may push concurrently.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_ENSEMBLE_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_ENSEMBLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

// Opens a session on the graph it is given (e.g. NewSession with a task's target).
using EnsembleSessionFactory =
    std::function<StatusOr<std::unique_ptr<Session>>(const Graph* graph)>;

struct EnsembleQueueOptions {
  std::string device;  // where the aggregator queue lives, e.g. "/job:ps/task:0"
  std::string shared_name = "ensemble_predictions";
  int64_t num_classes = 2;
  int64_t capacity = 256;
};

// The aggregator queue's node in `scope`'s graph (every graph that uses it builds
// one with the same options).
Queue EnsembleQueue(const Scope& scope, const EnsembleQueueOptions& options);

enum class EnsembleCombine { kMeanProbabilities, kMajorityVote };

struct EnsembleResult {
  // Mean probabilities, or for a vote the fraction of answering members that voted
  // for each class: float32 [batch, num_classes].
  Tensor probabilities;
  std::vector<int64_t> classes;  // [batch]: argmax of `probabilities` (first on ties)
  std::vector<int> answered;     // member ids, ascending
  std::vector<int> missing;      // member ids that did not answer in time
};

// Combines predictions on the host. `predictions[i]` is member `members[i]`'s
// float32 [batch, num_classes]. InvalidArgument when there are none or their shapes
// differ (naming the member).
StatusOr<EnsembleResult> CombinePredictions(const std::vector<Tensor>& predictions,
                                            const std::vector<int>& members,
                                            EnsembleCombine combine);

class EnsembleMember {
 public:
  // A session (from `factory`, e.g. on the member's own task) on a small graph that
  // pushes this member's predictions into the aggregator queue.
  static StatusOr<std::unique_ptr<EnsembleMember>> Create(int member,
                                                          const EnsembleQueueOptions& queue,
                                                          const EnsembleSessionFactory& factory);
  // Pushes float32 [batch, num_classes] for `round`; waits at most timeout_ms for
  // space in the queue (0 = no limit).
  Status Push(int64_t round, const Tensor& probabilities, int64_t timeout_ms = 0);
  int member() const { return member_; }

 private:
  EnsembleMember() = default;
  int member_ = 0;
  std::shared_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
};

class EnsembleAggregator {
 public:
  static StatusOr<std::unique_ptr<EnsembleAggregator>> Create(int num_members,
                                                              const EnsembleQueueOptions& queue,
                                                              const EnsembleSessionFactory& factory);
  // Collects round `round`'s predictions until every member answered or
  // timeout_ms passed, then combines those that arrived. DeadlineExceeded when no
  // member answered in time (naming the round); the session's other errors.
  StatusOr<EnsembleResult> Aggregate(int64_t round, int64_t timeout_ms, EnsembleCombine combine);

 private:
  EnsembleAggregator() = default;
  int num_members_ = 0;
  std::vector<std::string> fetches_;
  std::shared_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
};

// The in-graph variant: the combination of member outputs (each float32
// [batch, num_classes], placed by the caller on its own device), built on `scope`'s
// device. `mean` is float32 [batch, C]; `vote` is int64 [batch], the class most
// members predict (ties: the lowest class).
struct InGraphCombination {
  Output mean;
  Output vote;
};
InGraphCombination CombineInGraph(const Scope& scope, const std::vector<Output>& member_probabilities);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_ENSEMBLE_H_
