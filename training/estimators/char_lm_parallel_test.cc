// Character language models placed over several CPU devices of one session: the
// LSTM's layers split over three, the Transformer's blocks split over two and
// pipelined in micro-batches, and both replicated into two towers beside variables on
// a "ps" device. Each trains step for step to the losses of its run on one device
// (float summation order is all that differs), and the placement errors name what
// is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "actors/cluster/session_factory.h"
#include "training/estimators/char_lm.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr double kTolerance = 2e-5;

std::string Cpu(int i) {
  return "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i);
}

WorkerSessionFactory ThreeCpus() {
  return [](const Graph* graph, int) {
    SessionOptions options;
    options.device_count["CPU"] = 3;
    return NewSession(graph, options);
  };
}

// Letters following each other in a fixed cycle with a random word length: enough
// structure that a few steps move the loss.
CharCorpus Corpus() {
  std::string text;
  uint64_t state = 11;
  for (int record = 0; record < 120; ++record) {
    for (int w = 0; w < 6; ++w) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const int start = static_cast<int>((state >> 33) % 6);
      const int length = 2 + static_cast<int>((state >> 40) % 4);
      for (int k = 0; k < length; ++k) text += static_cast<char>('a' + (start + k) % 6);
      text += w < 5 ? " " : "\n";
    }
    text += "%\n";
  }
  auto corpus = CharCorpusFromText(text, "cycle");
  EXPECT_TRUE(corpus.ok()) << corpus.status();
  return *corpus;
}

CharLmOptions Small(const std::string& model) {
  CharLmOptions o;
  o.spec.model = model;
  o.spec.seq_len = 8;
  o.spec.embedding_dim = 8;
  o.spec.lstm_units = {16, 16, 16};
  o.spec.width = 16;
  o.spec.heads = 2;
  o.spec.blocks = 2;
  o.batch = 8;
  o.steps = 4;
  o.learning_rate = 0.01;
  // 33 validation windows: the last batch holds 1 window, fewer than the parts
  // (micro-batches, towers) it is cut into, which evaluation pads and then ignores.
  o.eval_chars = 33 * 8;
  return o;
}

void ExpectSameTraining(const CharLmResult& placed, const CharLmResult& whole) {
  ASSERT_EQ(placed.losses.size(), whole.losses.size());
  for (size_t i = 0; i < whole.losses.size(); ++i) {
    EXPECT_NEAR(placed.losses[i], whole.losses[i], kTolerance * std::fabs(whole.losses[i]))
        << "step " << i;
  }
  EXPECT_NEAR(placed.bits_per_char, whole.bits_per_char, kTolerance * whole.bits_per_char);
  // The steps changed the model: the comparison is not of two untrained models.
  EXPECT_LT(whole.losses.back(), whole.losses.front());
}

std::set<std::string> TracedDevices(const CharLmResult& r) {
  std::set<std::string> devices;
  for (const NodeExecStats& s : r.traced_step.step_stats) devices.insert(s.device);
  return devices;
}

TEST(CharLmParallelTest, TheLstmSplitByLayersOverThreeDevicesTrainsAsOnOne) {
  const CharCorpus corpus = Corpus();
  auto whole = TrainCharLm(Small("char-lstm"), corpus, ThreeCpus());
  ASSERT_TRUE(whole.ok()) << whole.status();
  CharLmOptions o = Small("char-lstm");
  o.placement.stage_devices = {Cpu(0), Cpu(1), Cpu(2)};
  o.trace_step = true;
  auto placed = TrainCharLm(o, corpus, ThreeCpus());
  ASSERT_TRUE(placed.ok()) << placed.status();
  ExpectSameTraining(*placed, *whole);
  EXPECT_EQ(TracedDevices(*placed), (std::set<std::string>{Cpu(0), Cpu(1), Cpu(2)}));
  // Layer outputs [8, 16] float32 cross at every one of the 8 steps, both ways.
  EXPECT_GE(placed->cross_device_bytes_per_step, 2 * 2 * 8 * 8 * 16 * 4);
  EXPECT_EQ(whole->cross_device_bytes_per_step, 0);
}

TEST(CharLmParallelTest, ThePipelinedTransformerTrainsAsOnOneDevice) {
  const CharCorpus corpus = Corpus();
  auto whole = TrainCharLm(Small("char-transformer"), corpus, ThreeCpus());
  ASSERT_TRUE(whole.ok()) << whole.status();
  CharLmOptions o = Small("char-transformer");
  o.placement.stage_devices = {Cpu(0), Cpu(1)};
  o.placement.micro_batches = 4;
  o.trace_step = true;
  auto placed = TrainCharLm(o, corpus, ThreeCpus());
  ASSERT_TRUE(placed.ok()) << placed.status();
  ExpectSameTraining(*placed, *whole);
  EXPECT_EQ(TracedDevices(*placed), (std::set<std::string>{Cpu(0), Cpu(1)}));
}

class CharLmTowersTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CharLmTowersTest, TwoTowersTrainAsOneDeviceOnTheirJoinedBatch) {
  const CharCorpus corpus = Corpus();
  CharLmOptions joined = Small(GetParam());
  joined.batch = 16;
  auto whole = TrainCharLm(joined, corpus, ThreeCpus());
  ASSERT_TRUE(whole.ok()) << whole.status();
  CharLmOptions o = Small(GetParam());  // 8 windows per tower
  o.placement.tower_devices = {Cpu(1), Cpu(2)};
  o.placement.ps_devices = {Cpu(0)};
  o.trace_step = true;
  auto placed = TrainCharLm(o, corpus, ThreeCpus());
  ASSERT_TRUE(placed.ok()) << placed.status();
  ExpectSameTraining(*placed, *whole);
  EXPECT_EQ(TracedDevices(*placed), (std::set<std::string>{Cpu(0), Cpu(1), Cpu(2)}));
  EXPECT_GT(placed->cross_device_bytes_per_step, 0);
  // Each tower's backward runs on its own device: between the towers pass only the
  // batch's ids (inputs and targets, int32 [16, 8], cut on the first tower's side).
  int64_t between_towers = 0;
  for (const CrossDeviceTransfer& t : placed->traced_step.transfers) {
    if (t.src_device != Cpu(0) && t.dst_device != Cpu(0)) between_towers += t.bytes;
  }
  EXPECT_LE(between_towers, 2 * 16 * 8 * 4);
  // Each tower sends the ps one gradient per variable, however often a variable is
  // used (the LSTM's kernel at every step): what it pushes is about what it pulls.
  int64_t pulled = 0, pushed = 0;
  for (const CrossDeviceTransfer& t : placed->traced_step.transfers) {
    if (t.src_device == Cpu(0)) pulled += t.bytes;
    if (t.dst_device == Cpu(0)) pushed += t.bytes;
  }
  EXPECT_LE(pushed, 1.3 * pulled) << "pulled " << pulled << " bytes, pushed " << pushed;
}

INSTANTIATE_TEST_SUITE_P(Models, CharLmTowersTest,
                         ::testing::Values("char-lstm", "char-transformer"));

TEST(CharLmParallelTest, PlacementsThatCannotWorkAreNamed) {
  CharLmSpec spec = Small("char-lstm").spec;
  CharLmPlacement p;
  p.micro_batches = 2;
  EXPECT_THAT(CheckCharLmPlacement(spec, p).message(),
              HasSubstr("needs the model split over at least 2 devices"));
  p.micro_batches = 0;
  EXPECT_THAT(CheckCharLmPlacement(spec, p).message(), HasSubstr("at least 1"));
  p = CharLmPlacement();
  p.stage_devices = {Cpu(0), Cpu(1), Cpu(2), Cpu(3)};
  EXPECT_THAT(CheckCharLmPlacement(spec, p).message(),
              HasSubstr("char-lstm has 3 layers to split over 4 devices"));
  p.tower_devices = {Cpu(0)};
  EXPECT_THAT(CheckCharLmPlacement(spec, p).message(), HasSubstr("do not combine"));
  // A batch too small for its micro-batches.
  CharLmOptions o = Small("char-transformer");
  o.placement.stage_devices = {Cpu(0), Cpu(1)};
  o.placement.micro_batches = 4;
  o.batch = 2;
  EXPECT_THAT(TrainCharLm(o, Corpus(), ThreeCpus()).status().message(),
              HasSubstr("--batch 2 cannot be cut into 4 micro-batches"));
}

}  // namespace
}  // namespace actorflow
