#include "training/distributed/ensemble.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

namespace actorflow {
namespace {

constexpr char kMember[] = "member";
constexpr char kRound[] = "round";
constexpr char kProbabilities[] = "probabilities";
constexpr char kPush[] = "push";

int64_t ArgMaxRow(const float* row, int64_t n) {
  return std::max_element(row, row + n) - row;
}

}  // namespace

Queue EnsembleQueue(const Scope& scope, const EnsembleQueueOptions& options) {
  Scope on = options.device.empty() ? scope : scope.WithDevice(options.device);
  return FIFOQueue(on.WithOpName("ensemble_queue"),
                   {DType::kInt32, DType::kInt64, DType::kFloat32},
                   {Shape{}, Shape{}, Shape{-1, options.num_classes}}, options.capacity,
                   options.shared_name);
}

StatusOr<EnsembleResult> CombinePredictions(const std::vector<Tensor>& predictions,
                                            const std::vector<int>& members,
                                            EnsembleCombine combine) {
  if (predictions.empty() || predictions.size() != members.size()) {
    return InvalidArgument("CombinePredictions: no predictions to combine");
  }
  const Shape shape = predictions[0].shape();
  for (size_t i = 0; i < predictions.size(); ++i) {
    const Tensor& p = predictions[i];
    if (p.dtype() != DType::kFloat32 || p.rank() != 2 || p.shape() != shape) {
      return InvalidArgument("the prediction of member " + std::to_string(members[i]) + " is " +
                             p.DebugString() + ", expected float32 " + shape.ToString() +
                             " like member " + std::to_string(members[0]) + "'s");
    }
  }
  const int64_t batch = shape.dim(0);
  const int64_t classes = shape.dim(1);
  EnsembleResult result;
  result.probabilities = Tensor(DType::kFloat32, shape);
  float* out = result.probabilities.data<float>();
  const float share = 1.0f / static_cast<float>(predictions.size());
  for (const Tensor& p : predictions) {
    const float* in = p.data<float>();
    for (int64_t r = 0; r < batch; ++r) {
      if (combine == EnsembleCombine::kMeanProbabilities) {
        for (int64_t c = 0; c < classes; ++c) out[r * classes + c] += share * in[r * classes + c];
      } else {
        out[r * classes + ArgMaxRow(in + r * classes, classes)] += share;
      }
    }
  }
  for (int64_t r = 0; r < batch; ++r) result.classes.push_back(ArgMaxRow(out + r * classes, classes));
  result.answered = members;
  std::sort(result.answered.begin(), result.answered.end());
  return result;
}

StatusOr<std::unique_ptr<EnsembleMember>> EnsembleMember::Create(
    int member, const EnsembleQueueOptions& queue, const EnsembleSessionFactory& factory) {
  std::unique_ptr<EnsembleMember> m(new EnsembleMember());
  m->member_ = member;
  Scope root = Scope::NewRootScope();
  m->graph_ = root.graph_ptr();
  Queue q = EnsembleQueue(root, queue);
  auto id = Placeholder(root.WithOpName(kMember), DType::kInt32, Shape{});
  auto round = Placeholder(root.WithOpName(kRound), DType::kInt64, Shape{});
  auto probabilities =
      Placeholder(root.WithOpName(kProbabilities), DType::kFloat32, Shape{-1, queue.num_classes});
  QueueEnqueue(root.WithOpName(kPush), q, {id, round, probabilities});
  AF_RETURN_IF_ERROR(root.status());
  AF_ASSIGN_OR_RETURN(m->session_, factory(m->graph_.get()));
  return m;
}

Status EnsembleMember::Push(int64_t round, const Tensor& probabilities, int64_t timeout_ms) {
  RunOptions options;
  options.timeout_in_ms = timeout_ms;
  const FeedList feeds = {{kMember, Tensor::Scalar(static_cast<int32_t>(member_))},
                          {kRound, Tensor::Scalar(round)},
                          {kProbabilities, probabilities}};
  return session_->Run(options, feeds, {}, {kPush}, nullptr, nullptr)
      .WithContext("ensemble member " + std::to_string(member_) + " pushing round " +
                   std::to_string(round));
}

StatusOr<std::unique_ptr<EnsembleAggregator>> EnsembleAggregator::Create(
    int num_members, const EnsembleQueueOptions& queue, const EnsembleSessionFactory& factory) {
  if (num_members < 1) return InvalidArgument("an ensemble needs at least one member");
  std::unique_ptr<EnsembleAggregator> a(new EnsembleAggregator());
  a->num_members_ = num_members;
  Scope root = Scope::NewRootScope();
  a->graph_ = root.graph_ptr();
  Queue q = EnsembleQueue(root, queue);
  // No timeout of its own: each dequeue runs with the rest of the round's deadline.
  std::vector<Output> element = QueueDequeue(root.WithOpName("collect"), q);
  AF_RETURN_IF_ERROR(root.status());
  for (const Output& o : element) a->fetches_.push_back(o.name());
  AF_ASSIGN_OR_RETURN(a->session_, factory(a->graph_.get()));
  return a;
}

StatusOr<EnsembleResult> EnsembleAggregator::Aggregate(int64_t round, int64_t timeout_ms,
                                                       EnsembleCombine combine) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<Tensor> predictions;
  std::vector<int> members;
  std::set<int> seen;
  while (static_cast<int>(seen.size()) < num_members_) {
    const int64_t left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    RunOptions options;
    options.timeout_in_ms = left;
    std::vector<Tensor> out;
    Status s = session_->Run(options, {}, fetches_, {}, &out, nullptr);
    if (s.code() == Code::kDeadlineExceeded) break;  // the queue stays usable
    AF_RETURN_IF_ERROR(s);
    const int member = out[0].data<int32_t>()[0];
    const int64_t element_round = out[1].data<int64_t>()[0];
    if (element_round != round || member < 0 || member >= num_members_ || seen.count(member)) {
      continue;  // a late answer to an earlier round, or a repeat
    }
    seen.insert(member);
    members.push_back(member);
    predictions.push_back(std::move(out[2]));
  }
  if (predictions.empty()) {
    return DeadlineExceeded("no ensemble member answered round " + std::to_string(round) +
                            " within " + std::to_string(timeout_ms) + " ms");
  }
  AF_ASSIGN_OR_RETURN(EnsembleResult result, CombinePredictions(predictions, members, combine));
  for (int m = 0; m < num_members_; ++m) {
    if (!seen.count(m)) result.missing.push_back(m);
  }
  return result;
}

InGraphCombination CombineInGraph(const Scope& scope,
                                  const std::vector<Output>& member_probabilities) {
  if (member_probabilities.empty()) {
    scope.UpdateStatus(InvalidArgument("CombineInGraph: no member outputs"));
    return {};
  }
  const float share = 1.0f / static_cast<float>(member_probabilities.size());
  Output sum, votes;
  for (const Output& p : member_probabilities) {
    // A member's vote: 1 where its probability is the row's maximum.
    Output vote = Cast(scope, Equal(scope, p, Max(scope, p, {1}, /*keep_dims=*/true)),
                       DType::kFloat32);
    sum = sum.valid() ? Add(scope, sum, p) : p;
    votes = votes.valid() ? Add(scope, votes, vote) : vote;
  }
  InGraphCombination out;
  out.mean = Mul(scope.WithOpName("ensemble_mean"), sum, share);
  out.vote = ArgMax(scope.WithOpName("ensemble_vote"), votes, 1);
  return out;
}

}  // namespace actorflow
