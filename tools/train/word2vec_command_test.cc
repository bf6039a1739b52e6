// `actorflow train --model word2vec` through its C++ entry point on a generated text:
// the JSON line and its fields, between-graph training on a local cluster (rows, not
// tables, cross to the ps task), and the flags it refuses, each named.
#include "tools/train/word2vec_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/test_files.h"
#include "kernels/direct_session.h"
#include "tools/train/train_command.h"
#include "tools/train/train_flags.h"
#include "training/checkpoint/checkpoint.h"
#include "training/serving/servable.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

// 400 sentences over about 400 words ("wo" and two letters of 20), "the end" each.
std::string WriteText(const ScopedTempDir& dir) {
  std::mt19937 rng(9);
  std::string text;
  for (int s = 0; s < 400; ++s) {
    for (int w = 0; w < 12; ++w) {
      text += "wo" + std::string(1, 'a' + rng() % 20) + std::string(1, 'a' + rng() % 20) + " ";
    }
    text += "the end.\n";
  }
  const std::string path = dir.path() + "/text.txt";
  EXPECT_TRUE(WriteTestFile(path, text));
  return path;
}

TrainCommandOptions Word2Vec(const std::string& text) {
  TrainCommandOptions options;
  options.model = "word2vec";
  ApplyModelDefaults([](const std::string&) { return false; }, &options);
  options.text_path = text;
  options.steps = 300;
  options.batch = 32;
  options.embedding_dim = 8;
  options.num_sampled = 4;
  options.json = true;
  return options;
}

nlohmann::json RunJson(const TrainCommandOptions& options) {
  std::ostringstream out, err;
  EXPECT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  return nlohmann::json::parse(out.str(), nullptr, /*allow_exceptions=*/false);
}

TEST(Word2VecCommandTest, OneProcessPrintsTheJsonFields) {
  ScopedTempDir dir("w2v");
  const nlohmann::json j = RunJson(Word2Vec(WriteText(dir)));
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["model"], "word2vec");
  EXPECT_EQ(j["steps"], 300);
  const double vocab = j["vocab_size"];  // the words seen, "the", "end", UNK
  EXPECT_GT(vocab, 300);
  EXPECT_LE(vocab, 403);
  EXPECT_LT(j["loss"].get<double>(), j["first_loss"].get<double>());
  EXPECT_EQ(j["bytes_pushed_per_step"], 0.0);
  // Two tables of vocab x 8 and one of vocab, pulled and pushed whole.
  EXPECT_EQ(j["dense_bytes_per_step"], 2.0 * vocab * 17 * 4);
  EXPECT_GT(j["rows_touched_per_step"].get<double>(), 0);
  ASSERT_EQ(j["nearest"].size(), 8u);
  for (const auto& [word, neighbours] : j["nearest"].items()) {
    EXPECT_GT(word.size(), 3u);
    EXPECT_EQ(neighbours.size(), 5u) << word;
  }
}

TEST(Word2VecCommandTest, BetweenGraphOnALocalClusterMovesRowsOnly) {
  ScopedTempDir dir("w2v");
  TrainCommandOptions options = Word2Vec(WriteText(dir));
  options.cluster = "local:ps=1,worker=2";
  const nlohmann::json j = RunJson(options);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["steps"], 300);
  const double pulled = j["bytes_pulled_per_step"], pushed = j["bytes_pushed_per_step"];
  EXPECT_GT(pulled, 0);
  EXPECT_GT(pushed, 0);
  // A batch of 32 touches at most 32 + 32 + 4 of the ~400 rows of each table: its
  // traffic stays well under the whole tables'.
  EXPECT_LT(4 * (pulled + pushed), j["dense_bytes_per_step"].get<double>());
}

// --cluster sim: the same between-graph training on a simulated cluster, its two
// workers taking turns: the same flags give the same run (the loss and the event log),
// rows cross the links, and the drivers' invariants hold.
TEST(Word2VecCommandTest, BetweenGraphOnASimulatedClusterReplays) {
  ScopedTempDir dir("w2v");
  TrainCommandOptions options = Word2Vec(WriteText(dir));
  options.cluster = "sim:ps=1,worker=2";
  options.steps = 100;
  const nlohmann::json first = RunJson(options);
  const nlohmann::json again = RunJson(options);
  ASSERT_TRUE(first.is_object()) << first;
  ASSERT_TRUE(again.is_object()) << again;
  EXPECT_EQ(first["steps"], 100);
  EXPECT_LT(first["loss"].get<double>(), first["first_loss"].get<double>() + 1.0);
  // Rows, not tables, cross the simulated links too.
  const double pulled = first["bytes_pulled_per_step"], pushed = first["bytes_pushed_per_step"];
  EXPECT_GT(pulled, 0);
  EXPECT_GT(pushed, 0);
  EXPECT_LT(4 * (pulled + pushed), first["dense_bytes_per_step"].get<double>());
  EXPECT_EQ(first["invariant_violations"], 0);
  EXPECT_GT(first["virtual_seconds"].get<double>(), 0);
  EXPECT_EQ(first["event_log_hash"], again["event_log_hash"]);
  EXPECT_EQ(first["loss"], again["loss"]);
}

// --checkpoint-dir on a cluster (the tables on the ps task) and --logdir: each worker
// logs, the checkpoint holds the tables, and the exported servable maps word ids to
// their unit-length trained embeddings.
TEST(Word2VecCommandTest, ACheckpointDirOnAClusterExportsUnitEmbeddings) {
  ScopedTempDir dir("w2v");
  TrainCommandOptions options = Word2Vec(WriteText(dir));
  options.cluster = "local:ps=1,worker=2";
  options.steps = 100;
  options.checkpoint_dir = dir.File("model");
  options.logdir = dir.File("logs");
  const nlohmann::json j = RunJson(options);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["global_step"], 100);
  for (const char* worker : {"worker_0", "worker_1"}) {
    EXPECT_FALSE(std::filesystem::is_empty(dir.File("logs") + "/" + worker)) << worker;
  }
  auto checkpoint = ReadCheckpoint(dir.File("model"));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const Tensor& table = checkpoint->at("embeddings");
  ASSERT_EQ(table.dim(1), 8);

  ExportRequest request;
  request.base_path = dir.File("servables");
  auto version_dir = ExportModelDir(dir.File("model"), request);
  ASSERT_TRUE(version_dir.ok()) << version_dir.status();
  auto servable = LoadServable(*version_dir, 1);
  ASSERT_TRUE(servable.ok()) << servable.status();
  auto signature = (*servable)->Signature("");
  ASSERT_TRUE(signature.ok()) << signature.status();
  ASSERT_EQ((*signature)->inputs.count("words"), 1u);
  ASSERT_EQ((*signature)->outputs.count("embedding"), 1u);
  auto session = NewDirectSession((*servable)->graph.get());
  ASSERT_TRUE(session.ok()) << session.status();
  const std::vector<int32_t> words = {1, 2, 7};
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)
                  ->Run({{(*signature)->inputs.at("words").endpoint, Tensor::FromVector(words)}},
                        {(*signature)->outputs.at("embedding").endpoint}, {}, &out)
                  .ok());
  ASSERT_EQ(out[0].dim(0), 3);
  ASSERT_EQ(out[0].dim(1), 8);
  for (int64_t i = 0; i < 3; ++i) {
    const float* row = table.data<float>() + words[i] * 8;
    double norm = 0;
    for (int c = 0; c < 8; ++c) norm += row[c] * row[c];
    for (int c = 0; c < 8; ++c) {
      EXPECT_NEAR(out[0].data<float>()[i * 8 + c], row[c] / std::sqrt(norm), 1e-5) << i;
    }
  }
}

TEST(Word2VecCommandTest, BadFlagsAreNamed) {
  ScopedTempDir dir("w2v");
  const std::string text = WriteText(dir);
  struct Case {
    std::function<void(TrainCommandOptions*)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](TrainCommandOptions* o) { o->text_path.clear(); }, "needs --text"},
      {[](TrainCommandOptions* o) { o->text_path = "/nonexistent/words"; }, "/nonexistent/words"},
      {[](TrainCommandOptions* o) { o->num_sampled = 0; }, "num_sampled"},
      {[](TrainCommandOptions* o) {
         o->cluster = "local:ps=1,worker=2";
         o->mode = "sync";
       },
       "--mode async"},
      {[](TrainCommandOptions* o) { o->cluster = "/nonexistent/cluster.json"; },
       "/nonexistent/cluster.json"},
      {[](TrainCommandOptions* o) { o->cluster = "local:worker=2"; }, "needs ps and worker"},
  };
  for (const Case& c : cases) {
    TrainCommandOptions options = Word2Vec(text);
    c.change(&options);
    std::ostringstream out, err;
    EXPECT_NE(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << c.message;
    EXPECT_THAT(err.str(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
