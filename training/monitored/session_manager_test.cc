// How a MonitoredTrainingSession makes the model ready, on DirectSession (a session
// opened with some variables already set plays the live variables of ps tasks): the
// chief initializes, keeps live variables, initializes only what is missing; a
// non-chief waits, bounded; a live variable of another shape is named; local
// variables and a caller's own init op.
#include "training/monitored/session_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "graph/status_testing.h"
#include "training/monitored/monitored_test_util.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace monitored_testing;  // NOLINT

float ReadW(Session* session) {
  std::vector<Tensor> out;
  Status s = session->Run({}, {"w"}, {}, &out);
  EXPECT_OK(s);
  return s.ok() ? out[0].data<float>()[0] : -1.0f;
}

TEST(SessionManagerTest, LocalVariablesAreInitializedAndLeftOutOfTheSaver) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  ASSERT_TRUE(CreateLocalVariable(root, "seen", Tensor::Scalar(5.0f)).ok());
  ASSERT_OK_AND_ASSIGN(auto mts, MonitoredTrainingSession::Create(
                                     root.graph(), OpenDirect(root.graph()), QuietOptions()));
  std::vector<Tensor> out;
  ASSERT_OK(mts->raw_session()->Run({}, {"seen"}, {}, &out));
  EXPECT_EQ(out[0].data<float>()[0], 5.0f);
  ASSERT_NE(mts->scaffold().saver(), nullptr);
  EXPECT_THAT(mts->scaffold().saver()->var_names(), ElementsAre("w", "global_step"));
  EXPECT_THAT(mts->scaffold().ready_variables(), ElementsAre("w", "global_step"));
}

// A chief whose variables are live (a restarted chief against running ps tasks)
// initializes nothing: the live values stay.
TEST(SessionManagerTest, AChiefNeverResetsLiveVariables) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  Assign(root.WithOpName("set_w"), root.graph()->FindNode("w"), Tensor::FromVector<float>({7}));
  Assign(root.WithOpName("set_step"), root.graph()->FindNode("global_step"),
         Tensor::Scalar<int64_t>(42));
  ASSERT_OK(root.status());
  auto all_live = [](Session* s) { return s->Run({}, {}, {"set_w", "set_step"}, nullptr); };
  ASSERT_OK_AND_ASSIGN(
      auto mts, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph(), all_live),
                                                 QuietOptions()));
  EXPECT_EQ(ReadW(mts->raw_session()), 7.0f);
  ASSERT_OK_AND_ASSIGN(int64_t step, mts->global_step());
  EXPECT_EQ(step, 42);

  // Only w live: only the global step is initialized.
  auto w_live = [](Session* s) { return s->Run({}, {}, {"set_w"}, nullptr); };
  ASSERT_OK_AND_ASSIGN(
      auto partly, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph(), w_live),
                                                    QuietOptions()));
  EXPECT_EQ(ReadW(partly->raw_session()), 7.0f);
  ASSERT_OK_AND_ASSIGN(step, partly->global_step());
  EXPECT_EQ(step, 0);
}

TEST(SessionManagerTest, ALiveVariableOfAnotherShapeIsAnErrorNamingIt) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  // Another graph's w, [2] where this one declares [1].
  Assign(root.WithOpName("other_w"), root.graph()->FindNode("w"), Tensor::FromVector<float>({1, 2}),
         /*validate_shape=*/false);
  Assign(root.WithOpName("set_step"), root.graph()->FindNode("global_step"),
         Tensor::Scalar<int64_t>(1));
  ASSERT_OK(root.status());
  auto live = [](Session* s) { return s->Run({}, {}, {"other_w", "set_step"}, nullptr); };
  for (bool chief : {true, false}) {
    MonitoredTrainingSessionOptions options = QuietOptions();
    options.is_chief = chief;
    auto mts =
        MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph(), live), options);
    ASSERT_FALSE(mts.ok());
    EXPECT_EQ(mts.status().code(), Code::kFailedPrecondition) << mts.status();
    EXPECT_THAT(mts.status().message(), HasSubstr("'w'"));
    EXPECT_THAT(mts.status().message(), HasSubstr("[2]"));
    EXPECT_THAT(mts.status().message(), HasSubstr("differs"));
  }
}

TEST(SessionManagerTest, ANonChiefWhoseChiefNeverComesFailsWithinItsWait) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.is_chief = false;
  options.wait_for_model_ms = 200;
  const auto start = std::chrono::steady_clock::now();
  auto mts = MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(mts.ok());
  EXPECT_EQ(mts.status().code(), Code::kDeadlineExceeded) << mts.status();
  EXPECT_THAT(mts.status().message(), HasSubstr("'w', 'global_step'"));
  EXPECT_THAT(mts.status().message(), HasSubstr("is the chief running?"));
  EXPECT_GE(waited, std::chrono::milliseconds(200));
  EXPECT_LT(waited, std::chrono::seconds(5));
}

TEST(SessionManagerTest, ACustomInitOpRunsAndAnUnknownOneIsNotFound) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK(BuildModel(root));
  GlobalVariablesInitializer(root.WithOpName("my_init"));
  ASSERT_OK(root.status());
  MonitoredTrainingSessionOptions options = QuietOptions();
  options.scaffold.set_init_op("my_init");
  ASSERT_OK_AND_ASSIGN(
      auto mts, MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options));
  EXPECT_EQ(mts->scaffold().init_op(), "my_init");
  options.scaffold.set_init_op("no_such_init");
  auto bad = MonitoredTrainingSession::Create(root.graph(), OpenDirect(root.graph()), options);
  EXPECT_EQ(bad.status().code(), Code::kNotFound);
  EXPECT_THAT(bad.status().message(), HasSubstr("no_such_init"));
}

}  // namespace
}  // namespace actorflow
