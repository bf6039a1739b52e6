// What the monitored session's tests share: a small model trained by gradient
// descent, sessions opened on DirectSession, and a hook that records its calls.
#ifndef ACTORFLOW_TRAINING_MONITORED_MONITORED_TEST_UTIL_H_
#define ACTORFLOW_TRAINING_MONITORED_MONITORED_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "training/monitored/monitored_session.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace monitored_testing {

// w [1] starts at 0; loss = (w - y)^2 with y a float32 [] placeholder "y"; "train"
// steps w toward y by gradient descent (0.25) and increments the global step.
// Returns the scope's status.
inline Status BuildModel(const Scope& root, bool with_global_step = true) {
  auto w = CreateVariable(root, "w", Tensor::FromVector<float>({0}));
  if (!w.ok()) return w.status();
  Output step;
  if (with_global_step) {
    auto created = CreateGlobalStep(root);
    if (!created.ok()) return created.status();
    step = *created;
  }
  auto y = Placeholder(root.WithOpName("y"), DType::kFloat32, Shape{});
  auto loss = Sum(root.WithOpName("loss"), Square(root, Sub(root, *w, y)));
  GradientDescentOptimizer sgd(0.25);
  auto train = with_global_step ? sgd.Minimize(root.WithOpName("train"), loss, step)
                                : sgd.Minimize(root.WithOpName("train"), loss);
  if (!train.ok()) return train.status();
  return root.status();
}

// y = 4: the feed of one training step.
inline FeedList Y(float y = 4.0f) { return {{"y", Tensor::Scalar(y)}}; }

// Opens DirectSessions on `graph`; `prepare`, when set, runs on each new session
// first (to make some variables live, as another task would have).
inline MonitoredTrainingSession::OpenSession OpenDirect(
    const Graph* graph, std::function<Status(Session*)> prepare = nullptr) {
  return [graph, prepare]() -> StatusOr<std::unique_ptr<Session>> {
    auto session = NewDirectSession(graph);
    if (!session.ok() || !prepare) return session;
    Status s = prepare(session->get());
    if (!s.ok()) return s;
    return session;
  };
}

// Options without the chief's default hooks (tests add what they check).
inline MonitoredTrainingSessionOptions QuietOptions() {
  MonitoredTrainingSessionOptions options;
  options.log_step_count_steps = 0;
  options.save_summaries_steps = 0;
  options.save_checkpoint_secs = 0;
  return options;
}

// Appends "<name>.<callback>" to a shared log for every call; adds `args` to every
// run and keeps the values it got.
class RecordingHook : public SessionRunHook {
 public:
  RecordingHook(std::string name, std::shared_ptr<std::vector<std::string>> log,
                SessionRunArgs args = {})
      : name_(std::move(name)), log_(std::move(log)), args_(std::move(args)) {}
  std::string name() const override { return name_; }
  Status Begin(Graph*) override { return Record("Begin"); }
  Status AfterCreateSession(Session* session, Coordinator*) override {
    session_at_creation = session;
    return Record("AfterCreateSession");
  }
  Status BeforeRun(SessionRunContext*, SessionRunArgs* args) override {
    *args = args_;
    return Record("BeforeRun");
  }
  Status AfterRun(SessionRunContext*, const SessionRunValues& values) override {
    results.push_back(values.results);
    return Record("AfterRun");
  }
  Status End(Session*) override { return Record("End"); }

  Session* session_at_creation = nullptr;
  std::vector<std::vector<Tensor>> results;  // per run

 private:
  Status Record(const std::string& callback) {
    log_->push_back(name_ + "." + callback);
    return Status::OK();
  }
  std::string name_;
  std::shared_ptr<std::vector<std::string>> log_;
  SessionRunArgs args_;
};

}  // namespace monitored_testing
}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_MONITORED_MONITORED_TEST_UTIL_H_
