// `actorflow train --model word2vec` through its C++ entry point on a generated text:
// the JSON line and its fields, between-graph training on a local cluster (rows, not
// tables, cross to the ps task), and the flags it refuses, each named.
#include "tools/train/word2vec_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/test_files.h"
#include "tools/train/train_command.h"
#include "tools/train/train_flags.h"

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
      {[](TrainCommandOptions* o) { o->cluster = "cluster.json"; }, "only a local cluster"},
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
