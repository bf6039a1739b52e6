// The hooks, each in a MonitoredTrainingSession on DirectSession: stopping at a step,
// checkpoints (and a second monitored session restoring them), summaries, step
// counting, tensor logging and NaN losses.
#include "training/monitored/hooks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/checkpoint/checkpoint.h"
#include "training/monitored/monitored_test_util.h"
#include "training/summary/event_file_reader.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace monitored_testing;  // NOLINT

std::unique_ptr<MonitoredTrainingSession> CreateOrDie(Graph* graph,
                                                      MonitoredTrainingSessionOptions options) {
  auto mts = MonitoredTrainingSession::Create(graph, OpenDirect(graph), std::move(options));
  EXPECT_OK(mts.status());
  return mts.ok() ? std::move(mts).value() : nullptr;
}

// Runs "train" until the monitored session should stop (at most `limit` steps).
int TrainUntilStop(MonitoredTrainingSession* mts, int limit = 100) {
  int steps = 0;
  while (!mts->ShouldStop() && steps < limit) {
    Status s = mts->Run(Y(), {}, {"train"}, nullptr);
    EXPECT_OK(s);
    if (!s.ok()) break;
    ++steps;
  }
  return steps;
}

TEST(StopAtStepHookTest, StopsAfterNumStepsFromWhereTheSessionStarts) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  MonitoredTrainingSessionOptions options = QuietOptions();
  auto hook = StopAtStepHook::ForNumSteps(5);
  options.hooks = {hook};
  auto mts = CreateOrDie(root.graph(), options);
  ASSERT_NE(mts, nullptr);
  EXPECT_EQ(hook->last_step(), 5);
  EXPECT_EQ(TrainUntilStop(mts.get()), 5);
  ASSERT_OK_AND_ASSIGN(int64_t step, mts->global_step());
  EXPECT_EQ(step, 5);
}

TEST(StopAtStepHookTest, StopsAtTheLastStepAndNeedsAGlobalStep) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {StopAtStepHook::AtLastStep(3)};
  auto mts = CreateOrDie(root.graph(), options);
  ASSERT_NE(mts, nullptr);
  EXPECT_EQ(TrainUntilStop(mts.get()), 3);

  Scope no_step = Scope::NewRootScope();
  ASSERT_OK(BuildModel(no_step, /*with_global_step=*/false));
  auto bad =
      MonitoredTrainingSession::Create(no_step.graph(), OpenDirect(no_step.graph()), options);
  EXPECT_EQ(bad.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(bad.status().message(), HasSubstr("hook 'StopAtStepHook' failed in Begin"));
  EXPECT_THAT(bad.status().message(), HasSubstr("CreateGlobalStep"));
}

TEST(CheckpointSaverHookTest, SavesEveryNStepsAndAtTheEndAndANewSessionRestores) {
  ScopedTempDir dir("ckpt");
  float trained_w = 0;
  {
    Scope root = Scope::NewRootScope();
    ASSERT_OK(BuildModel(root));
    MonitoredTrainingSessionOptions options = QuietOptions();
    options.checkpoint_dir = dir.path();
    options.save_checkpoint_steps = 2;
    options.hooks = {StopAtStepHook::AtLastStep(5)};
    auto mts = CreateOrDie(root.graph(), options);
    ASSERT_NE(mts, nullptr);
    EXPECT_EQ(TrainUntilStop(mts.get()), 5);
    std::vector<Tensor> w;
    ASSERT_OK(mts->raw_session()->Run({}, {"w"}, {}, &w));
    trained_w = w[0].data<float>()[0];
    ASSERT_OK(mts->Close());
  }
  for (int64_t step : {0, 2, 4, 5}) {
    EXPECT_OK(CheckpointAtStep(dir.path(), step).status()) << "step " << step;
  }
  ASSERT_OK_AND_ASSIGN(std::string latest, LatestCheckpoint(dir.path()));
  EXPECT_THAT(latest, HasSubstr("ckpt-5"));

  // A fresh graph and session (a restarted job): restored, the step continues.
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.checkpoint_dir = dir.path();
  options.save_checkpoint_steps = 2;
  auto mts = CreateOrDie(root.graph(), options);  // saves step 5 again: not an error
  ASSERT_NE(mts, nullptr);
  ASSERT_OK_AND_ASSIGN(int64_t step, mts->global_step());
  EXPECT_EQ(step, 5);
  std::vector<Tensor> w;
  ASSERT_OK(mts->raw_session()->Run({}, {"w"}, {}, &w));
  EXPECT_EQ(w[0].data<float>()[0], trained_w);
  ASSERT_OK(mts->Run(Y(), {}, {"train"}, nullptr));
  ASSERT_OK_AND_ASSIGN(step, mts->global_step());
  EXPECT_EQ(step, 6);
  ASSERT_OK(mts->Close());
  EXPECT_OK(CheckpointAtStep(dir.path(), 6).status());
}

TEST(CheckpointSaverHookTest, AnEndSaveOfAStepAlreadySavedIsNotAnError) {
  ScopedTempDir dir("ckpt");
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  CheckpointSaverHookOptions saver;
  saver.checkpoint_dir = dir.path();
  saver.save_secs = 3600;
  auto first = std::make_shared<CheckpointSaverHook>(saver);
  auto second = std::make_shared<CheckpointSaverHook>(saver);
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {first, second};  // both save step 0 at creation and step 1 at End
  auto mts = CreateOrDie(root.graph(), options);
  ASSERT_NE(mts, nullptr);
  ASSERT_OK(mts->Run(Y(), {}, {"train"}, nullptr));
  EXPECT_OK(mts->Close());
  EXPECT_THAT(first->saved_steps(), ElementsAre(0, 1));
  EXPECT_THAT(second->saved_steps(), ElementsAre(0, 1));
  EXPECT_OK(CheckpointAtStep(dir.path(), 1).status());
}

TEST(SummarySaverHookTest, WritesRegisteredScalarsAndStepsPerSecond) {
  ScopedTempDir dir("summaries");
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.checkpoint_dir = dir.path();
  options.save_summaries_steps = 2;
  options.log_step_count_steps = 2;
  options.summary_scalars = {{"training/loss", "loss"}};
  options.hooks = {StopAtStepHook::AtLastStep(6)};
  auto mts = CreateOrDie(root.graph(), options);
  ASSERT_NE(mts, nullptr);
  EXPECT_EQ(TrainUntilStop(mts.get()), 6);
  ASSERT_OK(mts->Close());
  ASSERT_OK_AND_ASSIGN(LogdirScalars scalars, ReadLogdirScalars(dir.path()));
  const auto& run = scalars.runs["."];
  ASSERT_EQ(run.count("training/loss"), 1u);
  // Every 2 steps from the first, at the step after each written run's update.
  std::vector<int64_t> steps;
  for (const ScalarPoint& p : run.at("training/loss")) steps.push_back(p.step);
  EXPECT_THAT(steps, ElementsAre(1, 3, 5));
  EXPECT_EQ(run.at("training/loss").front().value, 16.0);  // (0 - 4)^2 in the first step
  EXPECT_LT(run.at("training/loss").back().value, 1.0);
  ASSERT_EQ(run.count("global_step/sec"), 1u);
  EXPECT_GE(run.at("global_step/sec").size(), 2u);
  EXPECT_GT(run.at("global_step/sec").front().value, 0.0);
}

TEST(StepCounterHookTest, PrintsStepsPerSecondEveryNSteps) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  std::ostringstream out;
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {std::make_shared<StepCounterHook>(StepCounterHookOptions{2, nullptr, &out}),
                   StopAtStepHook::AtLastStep(5)};
  auto mts = CreateOrDie(root.graph(), options);
  ASSERT_NE(mts, nullptr);
  TrainUntilStop(mts.get());
  // Steps read 0 (first: no rate), 2 and 4.
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_THAT(text, HasSubstr("global_step/sec: "));
}

TEST(LoggingTensorHookTest, PrintsNameEqualsValueOnTheFirstAndEveryNthRun) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  std::ostringstream out;
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {
      std::make_shared<LoggingTensorHook>(std::vector<std::string>{"loss", "y"}, 2, &out)};
  auto mts = CreateOrDie(root.graph(), options);
  ASSERT_NE(mts, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_OK(mts->Run(Y(), {}, {"train"}, nullptr));
  // Runs 0, 2 and 4; the loss is the one before each step's update.
  EXPECT_EQ(out.str(),
            "loss = 16, y = 4\n"
            "loss = 1, y = 4\n"
            "loss = 0.0625, y = 4\n");
}

TEST(NanTensorHookTest, ANanLossFailsTheRunNamingTheTensorOrStopsTraining) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.hooks = {std::make_shared<NanTensorHook>("loss")};
  auto failing = CreateOrDie(root.graph(), options);
  ASSERT_NE(failing, nullptr);
  ASSERT_OK(failing->Run(Y(), {}, {"train"}, nullptr));
  Status s = failing->Run(Y(nan), {}, {"train"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("hook 'NanTensorHook' failed in AfterRun: NaN loss during "
                                     "training: tensor 'loss'"));

  options.hooks = {std::make_shared<NanTensorHook>("loss", /*fail_on_nan_loss=*/false)};
  auto stopping = CreateOrDie(root.graph(), options);
  ASSERT_NE(stopping, nullptr);
  ASSERT_OK(stopping->Run(Y(), {}, {"train"}, nullptr));
  EXPECT_FALSE(stopping->ShouldStop());
  ASSERT_OK(stopping->Run(Y(nan), {}, {"train"}, nullptr));
  EXPECT_TRUE(stopping->ShouldStop());
}

TEST(DefaultHooksTest, CheckpointsWithoutAGlobalStepAreFailedPrecondition) {
  ScopedTempDir dir("ckpt");
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root, /*with_global_step=*/false));
  MonitoredTrainingSessionOptions options;  // every default hook
  options.checkpoint_dir = dir.path();
  auto mts = MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options);
  EXPECT_EQ(mts.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(mts.status().message(), HasSubstr("hook 'CheckpointSaverHook' failed in Begin"));
  // Without a checkpoint directory the defaults need no global step.
  options.checkpoint_dir.clear();
  EXPECT_OK(
      MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options).status());
}

}  // namespace
}  // namespace actorflow
