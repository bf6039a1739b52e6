// MonitoredTrainingSession on DirectSession: creation, the hooks' order and merged
// arguments, hooks that fail or throw, OutOfRange, the step deadline, Run by Outputs,
// Close (how the model is made ready: session_manager_test.cc).
#include "training/monitored/monitored_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>

#include "graph/op_registry.h"
#include "graph/status_testing.h"
#include "kernels/kernel.h"
#include "training/data/coordinator.h"
#include "training/monitored/monitored_test_util.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace monitored_testing;  // NOLINT

using Log = std::vector<std::string>;

// --- Test-only ops: a step that ends its input (OutOfRange), and one that never ends.

Status ScalarFloat(InferenceContext& ctx) {
  ctx.set_output(0, DType::kFloat32, Shape{});
  return Status::OK();
}
const OpRegistration kEndOp(OpDef{"MonitoredTestEndOfInput", 0, 0, {}, 1, {}, true, ScalarFloat});
const OpRegistration kHangOp(OpDef{"MonitoredTestHang", 0, 0, {}, 1, {}, true, ScalarFloat});

class EndOfInputKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override { ctx->SetStatus(OutOfRange("end of input")); }
};
const KernelRegistration kEndKernel("MonitoredTestEndOfInput", kDeviceCpu, DType::kFloat32,
                                    MakeKernelFactory<EndOfInputKernel>());

// Completes only when released (at the end of the test that parked it).
struct Parked {
  std::mutex mu;
  std::vector<std::function<void()>> dones;
  void ReleaseAll() {
    std::vector<std::function<void()>> pending;
    {
      std::lock_guard<std::mutex> lock(mu);
      pending.swap(dones);
    }
    for (auto& done : pending) done();
  }
};
Parked parked;

class HangKernel : public Kernel {
 public:
  using Kernel::Kernel;
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    ctx->set_output(0, Tensor::Scalar(0.0f));
    std::lock_guard<std::mutex> lock(parked.mu);
    parked.dones.push_back(std::move(done));
  }
};
const KernelRegistration kHangKernel("MonitoredTestHang", kDeviceCpu, DType::kFloat32,
                                     MakeKernelFactory<HangKernel>());

float ReadW(Session* session) {
  std::vector<Tensor> out;
  Status s = session->Run({}, {"w"}, {}, &out);
  EXPECT_OK(s);
  return s.ok() ? out[0].data<float>()[0] : -1.0f;
}

// --- Creation ---------------------------------------------------------------------

TEST(MonitoredSessionTest, TheChiefInitializesTheModelAndTrains) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  ASSERT_OK_AND_ASSIGN(auto mts, MonitoredTrainingSession::Create(
                                     root.graph(), OpenDirect(root.graph()), QuietOptions()));
  EXPECT_EQ(ReadW(mts->raw_session()), 0.0f);
  for (int i = 0; i < 3; ++i) ASSERT_OK(mts->Run(Y(), {}, {"train"}, nullptr));
  ASSERT_OK_AND_ASSIGN(int64_t step, mts->global_step());
  EXPECT_EQ(step, 3);
  EXPECT_GT(ReadW(mts->raw_session()), 2.0f);  // 0 -> 2 -> 3 -> 3.5
  EXPECT_FALSE(mts->ShouldStop());
  EXPECT_OK(mts->Close());
}

TEST(MonitoredSessionTest, DefaultsAreTensorFlowsAndAStepDeadlineOfOneMinute) {
  MonitoredTrainingSessionOptions options;
  EXPECT_TRUE(options.is_chief);
  EXPECT_EQ(options.step_timeout_ms, 60000);
  EXPECT_EQ(options.save_checkpoint_secs, 600);
  EXPECT_EQ(options.save_checkpoint_steps, 0);
  EXPECT_EQ(options.save_summaries_steps, 100);
  EXPECT_EQ(options.log_step_count_steps, 100);
  EXPECT_EQ(options.wait_for_model_ms, 5 * 60 * 1000);
}

// --- Hooks ------------------------------------------------------------------------

TEST(MonitoredSessionTest, HooksAreCalledInOrderAroundTheSessionAndEveryRun) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  auto log = std::make_shared<Log>();
  auto chief_only = std::make_shared<RecordingHook>("chief_only", log);
  auto a = std::make_shared<RecordingHook>("a", log);
  auto b = std::make_shared<RecordingHook>("b", log);
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {a, b};
  options.chief_only_hooks = {chief_only};
  ASSERT_OK_AND_ASSIGN(
      auto mts, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options));
  // The model was ready when the hooks heard of the session.
  EXPECT_EQ(ReadW(a->session_at_creation), 0.0f);
  ASSERT_OK(mts->Run(Y(), {}, {"train"}, nullptr));
  ASSERT_OK(mts->Close());
  EXPECT_THAT(*log,
              ElementsAre("chief_only.Begin", "a.Begin", "b.Begin", "chief_only.AfterCreateSession",
                          "a.AfterCreateSession", "b.AfterCreateSession", "chief_only.BeforeRun",
                          "a.BeforeRun", "b.BeforeRun", "chief_only.AfterRun", "a.AfterRun",
                          "b.AfterRun", "chief_only.End", "a.End", "b.End"));

  // Not on a non-chief (whose chief is this DirectSession's "already live" model).
  log->clear();
  options.is_chief = false;
  auto live = [](Session* s) { return s->Run({}, {}, {"scaffold/init"}, nullptr); };
  ASSERT_OK_AND_ASSIGN(auto worker, MonitoredTrainingSession::Create(
                                        root.graph(), OpenDirect(root.graph(), live), options));
  EXPECT_THAT(*log,
              ElementsAre("a.Begin", "b.Begin", "a.AfterCreateSession", "b.AfterCreateSession"));
}

TEST(MonitoredSessionTest, HookArgsAreMergedAndEachHookGetsItsOwnValues) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  auto log = std::make_shared<Log>();
  // a feeds y and runs the train op; b fetches what the caller and a fetch too.
  auto a = std::make_shared<RecordingHook>(
      "a", log, SessionRunArgs{{"w", "loss"}, {"train"}, {{"y", Tensor::Scalar(2.0f)}}});
  auto b = std::make_shared<RecordingHook>("b", log,
                                           SessionRunArgs{{"loss", "global_step", "w"}, {}, {}});
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {a, b};
  ASSERT_OK_AND_ASSIGN(
      auto mts, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options));
  std::vector<Tensor> out;
  ASSERT_OK(mts->Run({}, {"loss"}, {}, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data<float>()[0], 4.0f);  // (0 - 2)^2, before the update
  ASSERT_EQ(a->results.size(), 1u);
  ASSERT_EQ(a->results[0].size(), 2u);
  EXPECT_EQ(a->results[0][1].data<float>()[0], 4.0f);
  ASSERT_EQ(b->results[0].size(), 3u);
  EXPECT_EQ(b->results[0][0].data<float>()[0], 4.0f);
  EXPECT_EQ(b->results[0][1].dtype(), DType::kInt64);
  EXPECT_EQ(b->results[0][2].dtype(), DType::kFloat32);
  ASSERT_OK_AND_ASSIGN(int64_t step, mts->global_step());
  EXPECT_EQ(step, 1) << "the hook's target did not run";

  // The caller feeding what a hook feeds too is an error naming the hook.
  Status twice = mts->Run(Y(), {}, {}, nullptr);
  EXPECT_EQ(twice.code(), Code::kInvalidArgument);
  EXPECT_THAT(twice.message(), HasSubstr("hook 'a' feeds 'y'"));
}

// Fails or throws in the callback it is told to.
class FaultyHook : public SessionRunHook {
 public:
  enum class Fault { kError, kStdException, kOtherException };
  FaultyHook(std::string callback, Fault fault) : callback_(std::move(callback)), fault_(fault) {}
  std::string name() const override { return "Faulty"; }
  Status Begin(Graph*) override { return Maybe("Begin"); }
  Status AfterCreateSession(Session*, Coordinator*) override { return Maybe("AfterCreateSession"); }
  Status BeforeRun(SessionRunContext*, SessionRunArgs*) override { return Maybe("BeforeRun"); }
  Status AfterRun(SessionRunContext*, const SessionRunValues&) override {
    return Maybe("AfterRun");
  }
  Status End(Session*) override { return Maybe("End"); }

 private:
  Status Maybe(const std::string& callback) {
    if (callback != callback_) return Status::OK();
    if (fault_ == Fault::kStdException) throw std::runtime_error("boom");
    if (fault_ == Fault::kOtherException) throw 42;
    return Unavailable("the hook's service is down");
  }
  std::string callback_;
  Fault fault_;
};

TEST(MonitoredSessionTest, AHookThatFailsOrThrowsIsNamedWithItsCallback) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  using Fault = FaultyHook::Fault;
  for (const char* callback : {"Begin", "AfterCreateSession"}) {
    MonitoredTrainingSessionOptions options = QuietOptions();
    options.hooks = {std::make_shared<FaultyHook>(callback, Fault::kStdException)};
    auto mts = MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options);
    EXPECT_EQ(mts.status().code(), Code::kInternal);
    EXPECT_THAT(mts.status().message(),
                HasSubstr(std::string("hook 'Faulty' threw in ") + callback + ": boom"));
  }
  struct Case {
    const char* callback;
    Fault fault;
    Code code;
    const char* says;
  };
  for (const Case& c :
       {Case{"BeforeRun", Fault::kOtherException, Code::kInternal,
             "hook 'Faulty' threw in BeforeRun: an exception that is not"},
        Case{"AfterRun", Fault::kStdException, Code::kInternal,
             "hook 'Faulty' threw in AfterRun: boom"},
        Case{"AfterRun", Fault::kError, Code::kUnavailable,
             "hook 'Faulty' failed in AfterRun: the hook's service is down"},
        Case{"End", Fault::kStdException, Code::kInternal, "hook 'Faulty' threw in End: boom"}}) {
    MonitoredTrainingSessionOptions options = QuietOptions();
    options.hooks = {std::make_shared<FaultyHook>(c.callback, c.fault)};
    ASSERT_OK_AND_ASSIGN(auto mts, MonitoredTrainingSession::Create(
                                       root.graph(), OpenDirect(root.graph()), options));
    Status run = mts->Run(Y(), {}, {"train"}, nullptr);
    Status close = mts->Close();
    const Status& failed = std::string(c.callback) == "End" ? close : run;
    EXPECT_EQ(failed.code(), c.code) << failed;
    EXPECT_THAT(failed.message(), HasSubstr(c.says));
  }
}

TEST(MonitoredSessionTest, AfterAFailedRunCloseSkipsTheHooksEnd) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  auto log = std::make_shared<Log>();
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {std::make_shared<RecordingHook>("a", log)};
  ASSERT_OK_AND_ASSIGN(
      auto mts, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options));
  EXPECT_FALSE(mts->Run({}, {}, {"train"}, nullptr).ok());  // y not fed
  ASSERT_OK(mts->Close());
  EXPECT_THAT(*log, ElementsAre("a.Begin", "a.AfterCreateSession", "a.BeforeRun"));
  Status after = mts->Run(Y(), {}, {"train"}, nullptr);
  EXPECT_EQ(after.code(), Code::kFailedPrecondition);
  EXPECT_OK(mts->Close());
}

// --- Stopping, deadlines, Outputs --------------------------------------------------

TEST(MonitoredSessionTest, OutOfRangeFromTheStepStopsTrainingAndClosesNormally) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  root.AddNode("MonitoredTestEndOfInput", {});
  ASSERT_OK(root.status());
  const std::string end = root.graph()->node(root.graph()->num_nodes() - 1)->name();
  auto log = std::make_shared<Log>();
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {std::make_shared<RecordingHook>("a", log)};
  ASSERT_OK_AND_ASSIGN(
      auto mts, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options));
  EXPECT_FALSE(mts->ShouldStop());
  Status s = mts->Run(Y(), {end}, {"train"}, nullptr);
  EXPECT_EQ(s.code(), Code::kOutOfRange);
  EXPECT_TRUE(mts->ShouldStop());
  EXPECT_OK(mts->Close());
  EXPECT_EQ(log->back(), "a.End");
}

TEST(MonitoredSessionTest, EveryStepHasTheStepDeadline) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  root.AddNode("MonitoredTestHang", {});
  ASSERT_OK(root.status());
  const std::string hang = root.graph()->node(root.graph()->num_nodes() - 1)->name();
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.step_timeout_ms = 100;
  ASSERT_OK_AND_ASSIGN(
      auto mts, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options));
  const auto start = std::chrono::steady_clock::now();
  Status s = mts->Run({}, {hang}, {}, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr("step deadline of 100 ms"));
  // The session is still usable.
  EXPECT_OK(mts->Run(Y(), {}, {"train"}, nullptr));
  parked.ReleaseAll();
}

TEST(MonitoredSessionTest, RunByOutputsRunsAnOpWithoutOutputsAsATarget) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  const Graph& g = *root.graph();
  ASSERT_OK_AND_ASSIGN(auto mts, MonitoredTrainingSession::Create(
                                     root.graph(), OpenDirect(root.graph()), QuietOptions()));
  std::vector<Tensor> out;
  ASSERT_OK(mts->Run({{Output(g.FindNode("y")), Tensor::Scalar(4.0f)}},
                     {Output(g.FindNode("loss")), Output(g.FindNode("train"))}, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<float>()[0], 16.0f);
  EXPECT_FALSE(out[1].IsInitialized());
  ASSERT_OK_AND_ASSIGN(int64_t step, mts->global_step());
  EXPECT_EQ(step, 1);
  EXPECT_EQ(mts->Run({}, {Output()}, &out).code(), Code::kInvalidArgument);
}

// The graph is final once the monitored session exists (TF1's finalize): a node added
// afterwards fails the next Run, naming the sizes, and leaves training as it was.
TEST(MonitoredSessionTest, ANodeAddedAfterCreationFailsTheNextRun) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  ASSERT_OK_AND_ASSIGN(auto mts, MonitoredTrainingSession::Create(
                                     root.graph(), OpenDirect(root.graph()), QuietOptions()));
  ASSERT_OK(mts->Run(Y(), {}, {"train"}, nullptr));
  const int before = root.graph()->num_nodes();
  Const(root.WithOpName("late"), 1.0f);
  Status s = mts->Run(Y(), {}, {"train"}, nullptr);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("the graph grew from " + std::to_string(before) + " to " +
                                     std::to_string(before + 1) + " nodes"));
  ASSERT_OK_AND_ASSIGN(int64_t step, mts->global_step());
  EXPECT_EQ(step, 1);
}

// A hook's thread on the coordinator is stopped and joined by Close.
class ThreadHook : public SessionRunHook {
 public:
  std::string name() const override { return "ThreadHook"; }
  Status AfterCreateSession(Session*, Coordinator* coord) override {
    coord->StartThread("waiter", [this, coord] {
      coord->WaitForStop();
      ended = true;
    });
    return Status::OK();
  }
  std::atomic<bool> ended{false};
};

TEST(MonitoredSessionTest, CloseStopsAndJoinsTheHooksThreads) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  auto hook = std::make_shared<ThreadHook>();
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {hook};
  ASSERT_OK_AND_ASSIGN(
      auto mts, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options));
  EXPECT_EQ(mts->coordinator()->running_threads(), 1);
  EXPECT_FALSE(mts->ShouldStop());
  EXPECT_OK(mts->Close());
  EXPECT_TRUE(hook->ended);
  EXPECT_EQ(mts->coordinator()->running_threads(), 0);
  EXPECT_TRUE(mts->ShouldStop());
}

TEST(MonitoredSessionTest, BadOptionsAreNamed) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.step_timeout_ms = -1;
  auto bad = MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("step_timeout_ms"));
  options = QuietOptions();
  options.hooks = {nullptr};
  bad = MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options);
  EXPECT_THAT(bad.status().message(), HasSubstr("hooks[0] is null"));
  bad = MonitoredTrainingSession::Create(nullptr, OpenDirect(root.graph()), QuietOptions());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
