// Saver, LatestCheckpoint and ReadCheckpoint in one process: what Save writes, what
// Restore gives back, pruning, the "latest" pointer, and every verification error.
// (checkpoint_process_test.cc kills and resumes real training processes.)

#include "training/checkpoint/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/status_testing.h"
#include "kernels/direct_session.h"
#include "training/checkpoint/checkpoint_format.h"
#include "training/checkpoint/checkpoint_test_util.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using checkpoint_test::Exists;
using checkpoint_test::ListDir;
using checkpoint_test::NewTempDir;
using checkpoint_test::ReadFile;
using checkpoint_test::WriteFile;
using Names = std::vector<std::string>;

// A graph of variables with constant initial values, a session and a saver.
struct Model {
  Scope root = Scope::NewRootScope();
  std::unique_ptr<Session> session;
  std::unique_ptr<Saver> saver;

  void Var(const std::string& name, const Tensor& initial) {
    auto v = CreateVariable(root, name, initial);
    ASSERT_TRUE(v.ok()) << v.status();
  }
  // Adds the initializer, the saver and a session; runs the initializer if `init`.
  void Finish(bool init = true, SaverOptions options = {}) {
    GlobalVariablesInitializer(root.WithOpName("init"));
    ASSERT_TRUE(root.ok()) << root.status();
    auto saver_or = Saver::Create(root.graph(), options);
    ASSERT_TRUE(saver_or.ok()) << saver_or.status();
    saver = std::move(saver_or).value();
    auto session_or = NewDirectSession(root.graph());
    ASSERT_TRUE(session_or.ok()) << session_or.status();
    session = std::move(session_or).value();
    if (init) {
      ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
    }
  }
  Tensor Fetch(const std::string& name) {
    std::vector<Tensor> out;
    Status s = session->Run({}, {name}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out[0] : Tensor();
  }
};

// "a" float32 [2,3] plus "w" of the given initial value.
void BuildAW(Model* m, const Tensor& w, bool init = true, SaverOptions options = {}) {
  m->Var("a", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  m->Var("w", w);
  m->Finish(init, std::move(options));
}

TEST(SaverTest, SaveWritesDataManifestAndLatestAndNoTemporaryFile) {
  Model m;
  BuildAW(&m, Tensor::FromVector<double>({0.25, -1}));
  std::string dir = NewTempDir() + "/run/ckpts";  // created with its parents
  auto prefix = m.saver->Save(m.session.get(), dir, 7);
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  EXPECT_EQ(*prefix, dir + "/ckpt-7");
  EXPECT_EQ(ListDir(dir), (Names{"ckpt-7.data", "ckpt-7.json", "latest"}));
  EXPECT_EQ(ReadFile(dir + "/latest"), "ckpt-7\n");
  EXPECT_EQ(ReadFile(dir + "/ckpt-7.data").size(), 24u + 16u);
  auto step = ReadCheckpointGlobalStep(*prefix);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(*step, 7);
}

TEST(SaverTest, RoundTripsEveryDtypeAndShapeIntoAFreshGraphAndSession) {
  auto build = [](Model* m, bool init) {
    m->Var("f32", Tensor::FromVector<float>({1.5f, -2, 3e-8f, 4, 5, 6}, {2, 3}));
    m->Var("f64", Tensor::FromVector<double>({0.1, -1e300, 2, 3}));
    m->Var("i32", Tensor::Scalar<int32_t>(-7));
    m->Var("i64", Tensor::FromVector<int64_t>({int64_t{1} << 40, -1, 0, 9}, {2, 2}));
    m->Var("flags", Tensor::FromVector<bool>({true, false, true}));
    m->Var("empty", Tensor(DType::kFloat32, Shape{0, 3}));
    m->Finish(init);
  };
  Model saved;
  build(&saved, /*init=*/true);
  std::string dir = NewTempDir();
  ASSERT_TRUE(saved.saver->Save(saved.session.get(), dir, 1).ok());

  auto read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->size(), 6u);
  Model fresh;
  build(&fresh, /*init=*/false);  // uninitialized: Restore alone must set everything
  Status s = fresh.saver->Restore(fresh.session.get(), dir);
  ASSERT_TRUE(s.ok()) << s;
  for (const char* name : {"f32", "f64", "i32", "i64", "flags", "empty"}) {
    Tensor expected = saved.Fetch(name);
    EXPECT_TRUE(TensorsEqual(read->at(name), expected)) << name;
    EXPECT_TRUE(TensorsEqual(fresh.Fetch(name), expected)) << name;
  }
}

TEST(SaverTest, RestoreOfATrainedModelGivesIdenticalVariablesAndTrainingContinues) {
  Model m;
  m.Var("w", Tensor::FromVector<float>({0.5f, -0.3f}, {2, 1}));
  auto step = CreateGlobalStep(m.root);
  ASSERT_TRUE(step.ok());
  auto x = Const(m.root, {1.f, 2.f, 3.f, -1.f}, {2, 2});
  auto loss = Sum(m.root, Square(m.root, Sub(m.root, MatMul(m.root, x, Output(m.root.graph()->FindNode("w"))), 1.0f)));
  AdamOptimizer adam(0.1);
  ASSERT_TRUE(adam.Minimize(m.root.WithOpName("train"), loss, *step).ok());
  m.Finish();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.session->Run({}, {}, {"train"}, nullptr).ok());
  std::string dir = NewTempDir();
  ASSERT_TRUE(m.saver->Save(m.session.get(), dir, 3).ok());
  // Every variable, Adam's slots and beta powers included, is in the checkpoint.
  EXPECT_EQ(m.saver->var_names().size(), m.root.graph()->GetCollection(kVariablesCollection).size());

  auto fresh = NewDirectSession(m.root.graph()).value();
  ASSERT_TRUE(m.saver->Restore(fresh.get(), dir + "/ckpt-3").ok());
  for (const std::string& name : m.saver->var_names()) {
    std::vector<Tensor> restored;
    ASSERT_TRUE(fresh->Run({}, {name}, {}, &restored).ok()) << name;
    EXPECT_TRUE(TensorsEqual(restored[0], m.Fetch(name))) << name;
  }
  // Both sessions take the same next step from the same state.
  ASSERT_TRUE(m.session->Run({}, {}, {"train"}, nullptr).ok());
  ASSERT_TRUE(fresh->Run({}, {}, {"train"}, nullptr).ok());
  std::vector<Tensor> w, s;
  ASSERT_TRUE(fresh->Run({}, {"w", step->name()}, {}, &w).ok());
  EXPECT_TRUE(TensorsEqual(w[0], m.Fetch("w")));
  EXPECT_EQ(*w[1].data<int64_t>(), 4);
}

TEST(SaverTest, KeepsOnlyTheNewestMaxToKeepCheckpoints) {
  Model m;
  SaverOptions options;
  options.max_to_keep = 2;
  BuildAW(&m, Tensor::Scalar(1.0f), true, options);
  std::string dir = NewTempDir();
  for (int step : {10, 20, 30, 40}) ASSERT_TRUE(m.saver->Save(m.session.get(), dir, step).ok());
  EXPECT_EQ(ListDir(dir), (Names{"ckpt-30.data", "ckpt-30.json", "ckpt-40.data", "ckpt-40.json", "latest"}));
}

TEST(SaverTest, NeverPrunesTheCheckpointJustWrittenEvenWithTheLowestStep) {
  Model m;
  SaverOptions options;
  options.max_to_keep = 1;
  BuildAW(&m, Tensor::Scalar(1.0f), true, options);
  std::string dir = NewTempDir();
  ASSERT_TRUE(m.saver->Save(m.session.get(), dir, 50).ok());
  ASSERT_TRUE(m.saver->Save(m.session.get(), dir, 5).ok());
  EXPECT_EQ(ListDir(dir), (Names{"ckpt-5.data", "ckpt-5.json", "latest"}));
}

TEST(SaverTest, MaxToKeepZeroKeepsEveryCheckpoint) {
  Model m;
  SaverOptions options;
  options.max_to_keep = 0;
  BuildAW(&m, Tensor::Scalar(1.0f), true, options);
  std::string dir = NewTempDir();
  for (int step = 1; step <= 7; ++step) ASSERT_TRUE(m.saver->Save(m.session.get(), dir, step).ok());
  EXPECT_EQ(ListDir(dir).size(), 15u);
}

TEST(SaverTest, LatestNamesTheNewestSaveAndRestoringADirectoryUsesIt) {
  Model m;
  m.Var("w", Tensor::FromVector<float>({1, 2}));
  AssignAdd(m.root.WithOpName("bump"), Output(m.root.graph()->FindNode("w")), {10.f, 10.f});
  m.Finish();
  std::string dir = NewTempDir();
  ASSERT_TRUE(m.saver->Save(m.session.get(), dir, 100).ok());
  ASSERT_TRUE(m.session->Run({}, {}, {"bump"}, nullptr).ok());
  ASSERT_TRUE(m.saver->Save(m.session.get(), dir, 200).ok());
  EXPECT_EQ(ReadFile(dir + "/latest"), "ckpt-200\n");
  auto latest = LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, dir + "/ckpt-200");

  ASSERT_TRUE(m.saver->Restore(m.session.get(), dir + "/ckpt-100").ok());
  EXPECT_TRUE(TensorsEqual(m.Fetch("w"), Tensor::FromVector<float>({1, 2})));
  ASSERT_TRUE(m.saver->Restore(m.session.get(), dir).ok());
  EXPECT_TRUE(TensorsEqual(m.Fetch("w"), Tensor::FromVector<float>({11, 12})));
}

TEST(LatestCheckpointTest, WithoutAUsableLatestFileTakesTheHighestCompleteCheckpointIgnoringOthers) {
  Model m;
  BuildAW(&m, Tensor::Scalar(1.0f));
  std::string dir = NewTempDir();
  ASSERT_TRUE(m.saver->Save(m.session.get(), dir, 5).ok());
  // A dead writer's temporary files, an orphan data file and look-alike names.
  WriteFile(dir + "/.ckpt-9.json.tmp.4242.0", "{}");
  WriteFile(dir + "/.ckpt-9.data.tmp.4242.1", "xx");
  WriteFile(dir + "/ckpt-9.data", "xx");
  WriteFile(dir + "/ckpt-09.json", "{}");
  WriteFile(dir + "/ckpt-9.json.bak", "{}");
  WriteFile(dir + "/latest", "ckpt-9\n");  // names no complete checkpoint
  auto latest = LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, dir + "/ckpt-5");
  std::remove((dir + "/latest").c_str());
  latest = LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, dir + "/ckpt-5");
}

TEST(LatestCheckpointTest, IsNotFoundForAnEmptyOrMissingDirectory) {
  std::string dir = NewTempDir();
  EXPECT_EQ(LatestCheckpoint(dir).status().code(), Code::kNotFound);
  EXPECT_EQ(LatestCheckpoint(dir + "/nope").status().code(), Code::kNotFound);
  EXPECT_EQ(ReadCheckpoint(dir).status().code(), Code::kNotFound);
  EXPECT_EQ(ReadCheckpoint(dir + "/ckpt-1").status().code(), Code::kNotFound);
}

// Saves "a" and "w" (float32 [2,3] of 1..6) into a new directory; returns it.
std::string SaveAW(const Tensor& w) {
  Model m;
  BuildAW(&m, w);
  std::string dir = NewTempDir();
  auto prefix = m.saver->Save(m.session.get(), dir, 1);
  EXPECT_TRUE(prefix.ok()) << prefix.status();
  return dir;
}

// Restores `dir` into an initialized model with w = `graph_w`; checks that the
// failure left "a" (which matches) unassigned, and returns the status.
Status RestoreAWExpectingNothingAssigned(const std::string& dir, const Tensor& graph_w) {
  Model m;
  m.Var("a", Tensor(DType::kFloat32, Shape{2, 3}));  // zeros
  m.Var("w", graph_w);
  m.Finish();
  Status s = m.saver->Restore(m.session.get(), dir);
  EXPECT_TRUE(TensorsEqual(m.Fetch("a"), Tensor(DType::kFloat32, Shape{2, 3}))) << "a was assigned";
  return s;
}

TEST(RestoreTest, AShapeMismatchNamesTheVariableAndBothShapesAndAssignsNothing) {
  std::string dir = SaveAW(Tensor(DType::kFloat32, Shape{2, 3}));
  Status s = RestoreAWExpectingNothingAssigned(dir, Tensor(DType::kFloat32, Shape{3, 2}));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("variable 'w' has shape [3,2] in the graph but [2,3]")) << s;
}

TEST(RestoreTest, ADtypeMismatchNamesTheVariableAndBothDtypes) {
  std::string dir = SaveAW(Tensor::FromVector<double>({1, 2}));
  Status s = RestoreAWExpectingNothingAssigned(dir, Tensor::FromVector<float>({1, 2}));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("variable 'w' is float32 in the graph but float64")) << s;
}

TEST(RestoreTest, ACorruptedDataByteIsAChecksumMismatchNamingTheTensor) {
  std::string dir = SaveAW(Tensor::FromVector<float>({1, 2, 3}));
  std::string data = ReadFile(dir + "/ckpt-1.data");
  data[24 + 5] ^= 0x01;  // "a" is bytes [0,24), "w" [24,36)
  WriteFile(dir + "/ckpt-1.data", data);
  Status s = RestoreAWExpectingNothingAssigned(dir, Tensor::FromVector<float>({0, 0, 0}));
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("tensor 'w': checksum mismatch")) << s;
  EXPECT_THAT(ReadCheckpoint(dir).status().message(), HasSubstr("tensor 'w': checksum mismatch"));
}

TEST(RestoreTest, AVariableMissingFromTheCheckpointIsNotFoundNamingIt) {
  Model partial;
  SaverOptions only_a;
  only_a.var_names = {"a"};
  BuildAW(&partial, Tensor::Scalar(3.0f), true, only_a);
  std::string dir = NewTempDir();
  ASSERT_TRUE(partial.saver->Save(partial.session.get(), dir, 1).ok());
  EXPECT_EQ(ReadCheckpoint(dir)->size(), 1u);
  Status s = RestoreAWExpectingNothingAssigned(dir, Tensor::Scalar(0.0f));
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("no tensor for variable 'w'")) << s;
}

TEST(RestoreTest, AMalformedManifestIsInvalidArgumentNamingTheFileLineAndColumn) {
  std::string dir = SaveAW(Tensor::Scalar(1.0f));
  WriteFile(dir + "/ckpt-1.json", "{\"format\": \"actorflow.checkpoint/1\",\n \"tensors\": [}\n");
  Status s = RestoreAWExpectingNothingAssigned(dir, Tensor::Scalar(1.0f));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(dir + "/ckpt-1.json: malformed JSON at line 2, column")) << s;
}

TEST(SaverTest, AnUnwritableDirectoryIsAnErrorNamingItAndWritesNothing) {
  Model m;
  BuildAW(&m, Tensor::Scalar(1.0f));
  std::string file = NewTempDir() + "/not_a_dir";
  WriteFile(file, "x");
  auto saved = m.saver->Save(m.session.get(), file + "/ckpts", 1);
  ASSERT_FALSE(saved.ok());
  EXPECT_TRUE(saved.status().code() == Code::kUnavailable ||
              saved.status().code() == Code::kPermissionDenied) << saved.status();
  EXPECT_THAT(saved.status().message(), HasSubstr("'" + file + "/ckpts'")) << saved.status();
  EXPECT_EQ(ReadFile(file), "x");
}

TEST(SaverTest, SavingAStepTwiceIsAlreadyExistsAndKeepsTheFirstCheckpoint) {
  Model m;
  BuildAW(&m, Tensor::Scalar(1.0f));
  std::string dir = NewTempDir();
  ASSERT_TRUE(m.saver->Save(m.session.get(), dir, 3).ok());
  std::string manifest = ReadFile(dir + "/ckpt-3.json");
  auto again = m.saver->Save(m.session.get(), dir, 3);
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  EXPECT_EQ(ReadFile(dir + "/ckpt-3.json"), manifest);
  EXPECT_TRUE(ReadCheckpoint(dir).ok());
}

TEST(SaverTest, AStepOutsideZeroToTwoToThe62IsRefusedAndWritesNothing) {
  Model m;
  BuildAW(&m, Tensor::Scalar(1.0f));
  std::string dir = NewTempDir();
  for (int64_t step : {int64_t{-5}, kMaxCheckpointStep + 1}) {
    auto saved = m.saver->Save(m.session.get(), dir, step);
    EXPECT_EQ(saved.status().code(), Code::kInvalidArgument) << saved.status();
    EXPECT_THAT(saved.status().message(), HasSubstr(std::to_string(step))) << saved.status();
  }
  EXPECT_EQ(ListDir(dir), Names{});
  EXPECT_TRUE(m.saver->Save(m.session.get(), dir, kMaxCheckpointStep).ok());
}

TEST(SaverTest, SavingUninitializedVariablesFailsAndAddsNoCheckpoint) {
  Model m;
  BuildAW(&m, Tensor::Scalar(1.0f), /*init=*/false);
  std::string dir = NewTempDir();
  auto saved = m.saver->Save(m.session.get(), dir, 1);
  EXPECT_EQ(saved.status().code(), Code::kFailedPrecondition) << saved.status();
  EXPECT_EQ(ListDir(dir), Names{});
}

TEST(SaverTest, CreateRejectsUnknownNodesNonVariablesAndAnEmptyList) {
  Model m;
  m.Var("w", Tensor::Scalar(1.0f));
  Const(m.root.WithOpName("c"), 2.0f);
  SaverOptions unknown;
  unknown.var_names = {"w", "nope"};
  EXPECT_EQ(Saver::Create(m.root.graph(), unknown).status().code(), Code::kNotFound);
  SaverOptions constant;
  constant.var_names = {"c"};
  auto s = Saver::Create(m.root.graph(), constant);
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("node 'c' (Const) is not a Variable")) << s.status();
  Scope empty = Scope::NewRootScope();
  EXPECT_EQ(Saver::Create(empty.graph(), {}).status().code(), Code::kInvalidArgument);
}

// The second saver's nodes live under "save_1/" beside the first one's "save/"; each
// restores through its own placeholders and Assigns, and either reads what the
// other wrote (one checkpoint format, whatever the scope).
TEST(SaverTest, TwoSaversInOneGraphGetTheirOwnNameScopes) {
  Model m;
  m.Var("w", Tensor::FromVector<float>({1, 2}));
  AssignAdd(m.root.WithOpName("bump"), Output(m.root.graph()->FindNode("w")), {10.f, 10.f});
  m.Finish();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Saver> second, Saver::Create(m.root.graph(), {}));

  const Graph* graph = m.root.graph();
  for (const std::string scope : {"save", "save_1"}) {
    const Node* assign = graph->FindNode(scope + "/w/Assign");
    ASSERT_NE(assign, nullptr) << scope;
    ASSERT_EQ(assign->num_inputs(), 2) << scope;
    EXPECT_EQ(assign->input(0).node->name(), "w") << scope;
    EXPECT_EQ(assign->input(1).node->name(), scope + "/w/value") << scope;
    const Node* restore_all = graph->FindNode(scope + "/restore_all");
    ASSERT_NE(restore_all, nullptr) << scope;
    ASSERT_EQ(restore_all->control_inputs().size(), 1u) << scope;
    EXPECT_EQ(restore_all->control_inputs()[0], assign) << scope;
  }
  EXPECT_EQ(graph->FindNode("save_2/restore_all"), nullptr) << "only two savers were made";

  const std::string first_dir = NewTempDir();
  ASSERT_OK(m.saver->Save(m.session.get(), first_dir, 1));  // w = [1, 2]
  ASSERT_OK(m.session->Run({}, {}, {"bump"}, nullptr));
  const std::string second_dir = NewTempDir();
  ASSERT_OK(second->Save(m.session.get(), second_dir, 2));  // w = [11, 12]

  ASSERT_OK(second->Restore(m.session.get(), first_dir));
  EXPECT_TRUE(TensorsEqual(m.Fetch("w"), Tensor::FromVector<float>({1, 2}))) << m.Fetch("w");
  ASSERT_OK(m.saver->Restore(m.session.get(), second_dir));
  EXPECT_TRUE(TensorsEqual(m.Fetch("w"), Tensor::FromVector<float>({11, 12}))) << m.Fetch("w");
}

}  // namespace
}  // namespace actorflow
