// `actorflow predict` on a model directory that training left damaged: a bit-flipped
// newest checkpoint is passed over (with a warning) for the previous one, and
// non-finite weights make predict fail with a message and a non-zero exit instead of
// printing rows of "<discarded>".
#include "tools/train/predict_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "graph/test_files.h"
#include "tools/train/train_command.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_format.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PredictCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = NewTestTempDir("predict");
    TrainCommandOptions train;
    train.steps = 20;
    train.checkpoint_dir = dir_;
    std::ostringstream out, err;
    ASSERT_EQ(TrainCommand(train, out, err, /*interactive=*/false), kExitOk) << err.str();
    auto latest = LatestCheckpoint(dir_);
    ASSERT_TRUE(latest.ok()) << latest.status();
    latest_ = *latest;
    auto step = ReadCheckpointGlobalStep(latest_);
    ASSERT_TRUE(step.ok()) << step.status();
    step_ = *step;
    auto tensors = ReadCheckpoint(latest_);
    ASSERT_TRUE(tensors.ok()) << tensors.status();
    tensors_ = *tensors;
  }

  int Predict(std::string* out, std::string* err) {
    PredictCommandOptions options;
    options.checkpoint_dir = dir_;
    options.input_path = TestDataFile("iris_test.csv");
    options.json = true;
    std::ostringstream o, e;
    ::testing::internal::CaptureStderr();  // the library's warning lines
    const int code = PredictCommand(options, o, e);
    *err = e.str() + ::testing::internal::GetCapturedStderr();
    *out = o.str();
    return code;
  }

  // Replaces the latest checkpoint's files with `tensors`, bypassing Save's checks.
  void OverwriteLatest(const std::map<std::string, Tensor>& tensors) {
    std::vector<std::pair<std::string, Tensor>> list(tensors.begin(), tensors.end());
    const CheckpointManifest manifest = BuildManifest(step_, list);
    std::string data;
    for (const auto& [name, t] : list) {
      data.append(static_cast<const char*>(t.raw_data()), t.TotalBytes());
    }
    ASSERT_TRUE(WriteTestFile(latest_ + kCheckpointDataSuffix, data));
    ASSERT_TRUE(WriteTestFile(latest_ + kCheckpointManifestSuffix, ManifestToJsonText(manifest)));
  }

  std::string dir_;
  std::string latest_;
  int64_t step_ = 0;
  std::map<std::string, Tensor> tensors_;
};

TEST_F(PredictCommandTest, NaNWeightsFailWithAMessageAndANonZeroExit) {
  std::map<std::string, Tensor> poisoned;
  std::string victim;
  for (const auto& [name, t] : tensors_) {
    Tensor copy = t.DeepCopy();
    if (victim.empty() && copy.dtype() == DType::kFloat32 && copy.NumElements() > 1) {
      copy.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
      victim = name;
    }
    poisoned.emplace(name, copy);
  }
  ASSERT_FALSE(victim.empty());
  OverwriteLatest(poisoned);
  std::string out, err;
  EXPECT_NE(Predict(&out, &err), kExitOk) << out;
  EXPECT_THAT(out, Not(HasSubstr("discarded"))) << out;
  EXPECT_THAT(err, HasSubstr("actorflow: ")) << err;
  EXPECT_THAT(err, HasSubstr("variable '" + victim + "'")) << err;
  EXPECT_THAT(err, HasSubstr("non-finite")) << err;
}

TEST_F(PredictCommandTest, ABitFlippedLatestCheckpointIsSkippedForThePreviousOne) {
  std::string baseline, baseline_err;
  ASSERT_EQ(Predict(&baseline, &baseline_err), kExitOk) << baseline_err;
  // A newer checkpoint of other weights, then damaged on disk.
  std::vector<std::pair<std::string, Tensor>> newer;
  for (const auto& [name, t] : tensors_) {
    Tensor copy = t.DeepCopy();
    if (copy.dtype() == DType::kFloat32) {
      for (int64_t i = 0; i < copy.NumElements(); ++i) copy.data<float>()[i] += 1.0f;
    }
    newer.emplace_back(name, copy);
  }
  auto written = WriteCheckpointTensors(dir_, step_ + 1, newer);
  ASSERT_TRUE(written.ok()) << written.status();
  std::string data = ReadTestFile(*written + kCheckpointDataSuffix);
  data[data.size() / 2] ^= 0x04;
  ASSERT_TRUE(WriteTestFile(*written + kCheckpointDataSuffix, data));

  std::string out, err;
  ASSERT_EQ(Predict(&out, &err), kExitOk) << err;
  EXPECT_EQ(out, baseline);
  EXPECT_THAT(err, HasSubstr("warning: skipping checkpoint '" + *written + "'")) << err;
  EXPECT_THAT(err, HasSubstr("checksum mismatch")) << err;
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
