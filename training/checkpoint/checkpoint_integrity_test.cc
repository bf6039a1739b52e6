// What a reader of "the latest checkpoint" does when the directory is damaged: a
// corrupted newest checkpoint is skipped (and said so) for the newest intact one, a
// directory whose manifests were lost is an error rather than a fresh start,
// non-finite weights are refused on save and on load, and the leftovers of an
// interrupted save go at the next save.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"
#include "graph/status_testing.h"
#include "kernels/direct_session.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_format.h"
#include "training/checkpoint/checkpoint_test_util.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using checkpoint_test::Exists;
using checkpoint_test::ListDir;
using checkpoint_test::NewTempDir;
using checkpoint_test::ReadFile;
using checkpoint_test::WriteFile;
using Tensors = std::vector<std::pair<std::string, Tensor>>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Checkpoints 1 and 2 of w = [1,2,3] and [4,5,6]; "latest" names ckpt-2.
std::string TwoCheckpoints() {
  const std::string dir = NewTempDir();
  EXPECT_OK(WriteCheckpointTensors(dir, 1, {{"w", Tensor::FromVector<float>({1, 2, 3})}}).status());
  EXPECT_OK(WriteCheckpointTensors(dir, 2, {{"w", Tensor::FromVector<float>({4, 5, 6})}}).status());
  return dir;
}

void FlipABit(const std::string& path) {
  std::string data = ReadFile(path);
  ASSERT_FALSE(data.empty()) << path;
  data[data.size() / 2] ^= 0x10;
  WriteFile(path, data);
}

// Writes a checkpoint by hand, bypassing Save's checks (an older writer's, or one
// damaged on disk with a consistent checksum).
void WriteUncheckedCheckpoint(const std::string& dir, int64_t step, const Tensors& tensors) {
  const CheckpointManifest manifest = BuildManifest(step, tensors);
  std::string data;
  for (const auto& [name, t] : tensors) {
    data.append(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
  const std::string prefix = dir + "/" + CheckpointBasename(step);
  WriteFile(prefix + kCheckpointDataSuffix, data);
  WriteFile(prefix + kCheckpointManifestSuffix, ManifestToJsonText(manifest));
  WriteFile(dir + "/" + kLatestCheckpointFile, CheckpointBasename(step) + "\n");
}

// A graph with variable w (float32 [3], initially zeros), a saver and a session.
struct WModel {
  Scope root = Scope::NewRootScope();
  std::unique_ptr<Saver> saver;
  std::unique_ptr<Session> session;

  WModel() {
    EXPECT_OK(CreateVariable(root, "w", Tensor::FromVector<float>({0, 0, 0})).status());
    GlobalVariablesInitializer(root.WithOpName("init"));
    EXPECT_OK(root.status());
    saver = Saver::Create(root.graph(), {}).value();
    session = NewDirectSession(root.graph()).value();
    EXPECT_OK(session->Run({}, {}, {"init"}, nullptr));
  }
  Tensor W() {
    std::vector<Tensor> out;
    EXPECT_OK(session->Run({}, {"w"}, {}, &out));
    return out.empty() ? Tensor() : out[0];
  }
};

TEST(LatestIntactCheckpointTest, ABitFlippedLatestIsSkippedForThePreviousOne) {
  const std::string dir = TwoCheckpoints();
  FlipABit(dir + "/ckpt-2.data");
  ASSERT_OK_AND_ASSIGN(IntactCheckpoint found, FindLatestIntactCheckpoint(dir));
  EXPECT_EQ(found.prefix, dir + "/ckpt-1");
  ASSERT_EQ(found.skipped.size(), 1u);
  EXPECT_THAT(found.skipped[0], HasSubstr("ckpt-2"));
  EXPECT_THAT(found.skipped[0], HasSubstr("checksum mismatch"));
}

TEST(LatestIntactCheckpointTest, RestoreOfTheDirectoryUsesThePreviousOneAndWarns) {
  const std::string dir = TwoCheckpoints();
  FlipABit(dir + "/ckpt-2.data");
  WModel m;
  ::testing::internal::CaptureStderr();
  Status restored = m.saver->Restore(m.session.get(), dir);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_OK(restored);
  EXPECT_TRUE(TensorsEqual(m.W(), Tensor::FromVector<float>({1, 2, 3}))) << m.W();
  EXPECT_THAT(warnings, HasSubstr("warning: skipping checkpoint '" + dir + "/ckpt-2'"));
  EXPECT_THAT(warnings, HasSubstr("checksum mismatch"));
  EXPECT_THAT(warnings, HasSubstr("using '" + dir + "/ckpt-1'"));
  // ReadCheckpoint of the directory reads the same intact one.
  ::testing::internal::CaptureStderr();
  auto read = ReadCheckpoint(dir);
  ::testing::internal::GetCapturedStderr();
  ASSERT_OK(read.status());
  EXPECT_TRUE(TensorsEqual(read->at("w"), Tensor::FromVector<float>({1, 2, 3})));
}

TEST(LatestIntactCheckpointTest, AnIntactLatestIsUsedWithoutVerifyingOlderOnes) {
  const std::string dir = TwoCheckpoints();
  FlipABit(dir + "/ckpt-1.data");  // older damage does not matter
  ASSERT_OK_AND_ASSIGN(IntactCheckpoint found, FindLatestIntactCheckpoint(dir));
  EXPECT_EQ(found.prefix, dir + "/ckpt-2");
  EXPECT_TRUE(found.skipped.empty());
}

TEST(LatestIntactCheckpointTest, LatestWhoseManifestIsMissingIsSkippedForThePreviousOne) {
  const std::string dir = TwoCheckpoints();
  ASSERT_EQ(std::remove((dir + "/ckpt-2.json").c_str()), 0);
  ASSERT_OK_AND_ASSIGN(IntactCheckpoint found, FindLatestIntactCheckpoint(dir));
  EXPECT_EQ(found.prefix, dir + "/ckpt-1");
  ASSERT_EQ(found.skipped.size(), 1u);
  EXPECT_THAT(found.skipped[0], HasSubstr("manifest"));
}

TEST(LatestIntactCheckpointTest, LostManifestsWithDataFilesLeftAreAnErrorNotAFreshStart) {
  const std::string dir = TwoCheckpoints();
  for (const char* name : {"/ckpt-1.json", "/ckpt-2.json", "/latest"}) {
    ASSERT_EQ(std::remove((dir + name).c_str()), 0) << name;
  }
  Status s = LatestCheckpoint(dir).status();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("'" + dir + "'")) << s;
  EXPECT_THAT(s.message(), HasSubstr("ckpt-1.data, ckpt-2.data")) << s;
  WModel m;
  EXPECT_EQ(m.saver->Restore(m.session.get(), dir).code(), Code::kFailedPrecondition);
}

TEST(LatestIntactCheckpointTest, AnEmptyDirectoryIsStillNotFound) {
  EXPECT_EQ(LatestCheckpoint(NewTempDir()).status().code(), Code::kNotFound);
}

TEST(LatestIntactCheckpointTest, WhenNoCheckpointIsIntactTheNewestErrorNamesBoth) {
  const std::string dir = TwoCheckpoints();
  FlipABit(dir + "/ckpt-1.data");
  FlipABit(dir + "/ckpt-2.data");
  Status s = LatestCheckpoint(dir).status();
  EXPECT_EQ(s.code(), Code::kInternal) << s;
  EXPECT_THAT(s.message(), HasSubstr("ckpt-2.data")) << s;
  EXPECT_THAT(s.message(), HasSubstr("ckpt-1")) << s;
}

TEST(NonFiniteWeightsTest, SaveRefusesNaNNamingTheVariableAndWritesNothing) {
  const std::string dir = NewTempDir();
  Status s = WriteCheckpointTensors(dir, 3, {{"bias", Tensor::FromVector<float>({1, 2})},
                                             {"w", Tensor::FromVector<float>({1, kNaN})}})
                 .status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("variable 'w'")) << s;
  EXPECT_THAT(s.message(), HasSubstr("nan at element 1")) << s;
  EXPECT_FALSE(Exists(dir + "/ckpt-3.json"));
  EXPECT_FALSE(Exists(dir + "/ckpt-3.data"));
}

TEST(NonFiniteWeightsTest, SaverSaveRefusesAnInfiniteVariable) {
  WModel m;
  Scope& root = m.root;
  // Assigns [1, inf, 3] to w through the graph, as a diverging optimizer would.
  auto assign = Assign(root.WithOpName("diverge"), Output(root.graph()->FindNode("w")),
                       Const(root, Tensor::FromVector<float>(
                                       {1, std::numeric_limits<float>::infinity(), 3})));
  ASSERT_OK(root.status());
  // A session over the grown graph.
  m.session = NewDirectSession(root.graph()).value();
  ASSERT_OK(m.session->Run({}, {}, {"init", "diverge"}, nullptr));
  (void)assign;
  const std::string dir = NewTempDir();
  Status s = m.saver->Save(m.session.get(), dir, 1).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("variable 'w'")) << s;
  EXPECT_THAT(s.message(), HasSubstr("inf at element 1")) << s;
  EXPECT_EQ(LatestCheckpoint(dir).status().code(), Code::kNotFound);
}

TEST(NonFiniteWeightsTest, LoadRefusesNaNNamingTheVariable) {
  const std::string dir = NewTempDir();
  WriteUncheckedCheckpoint(dir, 5, {{"w", Tensor::FromVector<float>({kNaN, 2, 3})}});
  Status s = ReadCheckpoint(dir + "/ckpt-5").status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("variable 'w'")) << s;
  EXPECT_THAT(s.message(), HasSubstr("ckpt-5.data")) << s;
  WModel m;
  Status restored = m.saver->Restore(m.session.get(), dir);
  EXPECT_EQ(restored.code(), Code::kInvalidArgument) << restored;
  EXPECT_TRUE(TensorsEqual(m.W(), Tensor::FromVector<float>({0, 0, 0})));  // nothing assigned
}

TEST(NonFiniteWeightsTest, ANaNLatestIsSkippedForAnIntactOlderOne) {
  const std::string dir = NewTempDir();
  ASSERT_OK(WriteCheckpointTensors(dir, 1, {{"w", Tensor::FromVector<float>({1, 2, 3})}}).status());
  WriteUncheckedCheckpoint(dir, 2, {{"w", Tensor::FromVector<float>({kNaN, 2, 3})}});
  ASSERT_OK_AND_ASSIGN(IntactCheckpoint found, FindLatestIntactCheckpoint(dir));
  EXPECT_EQ(found.prefix, dir + "/ckpt-1");
  ASSERT_EQ(found.skipped.size(), 1u);
  EXPECT_THAT(found.skipped[0], HasSubstr("non-finite"));
}

TEST(OrphanFilesTest, TheNextSaveRemovesADeadWritersTempFilesAndDataWithoutManifest) {
  const std::string dir = TwoCheckpoints();
  // A Save killed mid-write (pid 999999999 is above any pid_max: no such process),
  // and one killed between renaming its data file and its manifest.
  WriteFile(dir + "/.ckpt-3.data.tmp.999999999.0", "partial");
  WriteFile(dir + "/.ckpt-3.json.tmp.999999999.1", "{");
  WriteFile(dir + "/ckpt-3.data", "orphan");
  ASSERT_OK(WriteCheckpointTensors(dir, 4, {{"w", Tensor::FromVector<float>({7, 8, 9})}}).status());
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"ckpt-1.data", "ckpt-1.json", "ckpt-2.data",
                                                    "ckpt-2.json", "ckpt-4.data", "ckpt-4.json",
                                                    "latest"}));
}

TEST(HugeShapeManifestTest, AShapeWhoseElementsOrBytesOverflowIsRefusedNamingTheTensor) {
  const std::string head = R"({"format": "actorflow.checkpoint/1", "global_step": 1, "tensors": [)";
  // 2^62 * 4 wraps around to 0 elements, 0 bytes: what "size" says.
  Status elements = ParseManifest(
      head + R"({"name": "w", "dtype": "float32", "shape": [4611686018427387904, 4],
                 "offset": 0, "size": 0, "checksum": 0}]})", "d/ckpt-1.json").status();
  EXPECT_EQ(elements.code(), Code::kInvalidArgument) << elements;
  EXPECT_THAT(elements.message(), HasSubstr("d/ckpt-1.json: tensor 'w'")) << elements;
  EXPECT_THAT(elements.message(), HasSubstr("more elements than an int64 can count")) << elements;
  // 2^61 float64 elements: 2^64 bytes, which wrap around to 0.
  Status bytes = ParseManifest(
      head + R"({"name": "v", "dtype": "float64", "shape": [2305843009213693952],
                 "offset": 0, "size": 0, "checksum": 0}]})", "d/ckpt-1.json").status();
  EXPECT_EQ(bytes.code(), Code::kInvalidArgument) << bytes;
  EXPECT_THAT(bytes.message(), HasSubstr("tensor 'v'")) << bytes;
  EXPECT_THAT(bytes.message(), HasSubstr("bytes of float64")) << bytes;
}

TEST(CheckpointAtStepTest, FindsAnIntactCheckpointOfThatStepOnly) {
  const std::string dir = TwoCheckpoints();
  ASSERT_OK_AND_ASSIGN(std::string one, CheckpointAtStep(dir, 1));
  EXPECT_EQ(one, dir + "/ckpt-1");
  EXPECT_EQ(CheckpointAtStep(dir, 3).status().code(), Code::kNotFound);
  FlipABit(dir + "/ckpt-2.data");
  Status s = CheckpointAtStep(dir, 2).status();
  EXPECT_EQ(s.code(), Code::kInternal) << s;
  EXPECT_THAT(s.message(), Not(HasSubstr("ckpt-1")));
}

}  // namespace
}  // namespace actorflow
