// word2vec's corpus, options and training in one process: the vocabulary keeps the
// most frequent words in order with UNK for the rest, bad options name themselves, and
// on a text of two word families that never share a sentence the loss falls and each
// word's nearest words come from its own family.
#include "training/estimators/word2vec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "graph/test_files.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

TEST(Word2VecCorpusTest, TheVocabularyHoldsTheMostFrequentWordsAndUnk) {
  auto corpus = CorpusFromText("The cat, the DOG; the cat's bird. Rare!", 4);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_EQ(corpus->words, (std::vector<std::string>{"UNK", "the", "cat", "dog"}));
  // the cat the dog the cat s bird rare
  EXPECT_EQ(corpus->ids, (std::vector<int32_t>{1, 2, 1, 3, 1, 2, 0, 0, 0}));
  EXPECT_EQ(corpus->counts, (std::vector<int64_t>{3, 3, 2, 1}));
  EXPECT_EQ(CorpusFromText("one", 10).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ReadCorpus("/nonexistent/text", 10).status().code(), Code::kNotFound);
}

TEST(Word2VecOptionsTest, EachBadOptionIsNamed) {
  Word2VecOptions o;
  o.num_sampled = 0;
  EXPECT_THAT(ValidateWord2VecOptions(o).message(), HasSubstr("num_sampled"));
  o = Word2VecOptions();
  o.num_workers = 2;
  EXPECT_THAT(ValidateWord2VecOptions(o).message(), HasSubstr("ps tasks"));
  o = Word2VecOptions();
  o.optimizer = "rmsprop";
  EXPECT_THAT(ValidateWord2VecOptions(o).message(), HasSubstr("rmsprop"));
}

// Runs of 20 words, each from one family: "a*" words or "b*" words.
std::string TwoFamilies(int sentences) {
  const std::vector<std::string> a = {"apple", "apricot", "avocado", "almond", "anise", "acorn"};
  const std::vector<std::string> b = {"bolt", "brace", "bracket", "beam", "board", "brick"};
  std::mt19937 rng(3);
  std::string text;
  for (int s = 0; s < sentences; ++s) {
    const std::vector<std::string>& family = s % 2 == 0 ? a : b;
    for (int w = 0; w < 20; ++w) text += family[rng() % family.size()] + " ";
    text += ".\n";
  }
  return text;
}

TEST(Word2VecTrainingTest, TheLossFallsAndNeighboursShareAFamily) {
  auto corpus = CorpusFromText(TwoFamilies(200), 100);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  Word2VecOptions o;
  o.embedding_dim = 16;
  o.num_sampled = 4;
  o.batch = 32;
  o.steps = 3000;
  o.skip_window = 1;
  o.learning_rate = 0.2;
  auto result = TrainWord2Vec(o, *corpus, [](const Graph* graph, int) {
    return NewDirectSession(graph);
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 3000);
  // The family task's loss floor is reached within ~100 steps: compare with the start.
  double start = 0;
  for (int i = 0; i < 10; ++i) start += result->losses[i] / 10;
  EXPECT_LT(result->loss, 0.7 * start);
  EXPECT_LT(result->loss, result->first_loss * 1.2);
  EXPECT_EQ(result->bytes_pulled_per_step, 0);  // one process: nothing crosses
  EXPECT_GT(result->rows_touched_per_step, 0);
  EXPECT_LT(result->rows_touched_per_step, 2 * 13);  // 12 words + UNK, two tables
  ASSERT_EQ(result->nearest.size(), 8u);
  for (const auto& [word, neighbours] : result->nearest) {
    ASSERT_EQ(neighbours.size(), 5u) << word;
    // The 3 nearest come from the word's own family (of 5 other words).
    for (int k = 0; k < 3; ++k) EXPECT_EQ(neighbours[k][0], word[0]) << word << " ~ " << neighbours[k];
  }
}

// A model directory: the second run resumes from the first's checkpoint (its global
// step and its trained tables), every step is observed, the serving files and the
// vocabulary are written, and a graph of another embedding size is refused.
TEST(Word2VecTrainingTest, ACheckpointDirResumesAndRefusesAnotherEmbeddingSize) {
  auto corpus = CorpusFromText(TwoFamilies(200), 100);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  ScopedTempDir dir("w2v_model");
  Word2VecOptions o;
  o.embedding_dim = 16;
  o.num_sampled = 4;
  o.batch = 32;
  o.steps = 300;
  o.learning_rate = 0.2;
  o.checkpoint_dir = dir.path();
  int64_t observed = 0, last_step = 0, planned = 0;
  o.on_step = [&](int worker, int64_t step, int64_t planned_steps, double loss) {
    EXPECT_EQ(worker, 0);
    EXPECT_TRUE(std::isfinite(loss));
    ++observed;
    last_step = step;
    planned = planned_steps;
  };
  const auto local = [](const Graph* graph, int) { return NewDirectSession(graph); };
  auto first = TrainWord2Vec(o, *corpus, local);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(observed, 300);
  EXPECT_EQ(last_step, 300);
  EXPECT_EQ(planned, 300);
  EXPECT_EQ(first->global_step, 300);
  for (const char* file : {"serving.json", "serving_graph.json", "vocabulary.txt", "latest"}) {
    EXPECT_TRUE(std::filesystem::exists(dir.File(file))) << file;
  }
  std::ifstream vocabulary(dir.File("vocabulary.txt"));
  std::string line;
  ASSERT_TRUE(std::getline(vocabulary, line));
  EXPECT_EQ(line, "UNK\t" + std::to_string(corpus->counts[0]));
  ASSERT_TRUE(std::getline(vocabulary, line));
  EXPECT_EQ(line.substr(0, line.find('\t')), corpus->words[1]);

  auto second = TrainWord2Vec(o, *corpus, local);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->global_step, 600);
  // Resumed tables start where the first run ended, not from random ones.
  EXPECT_LT(second->first_loss, 0.8 * first->first_loss);
  EXPECT_LT(second->first_loss, first->loss * 1.2);

  o.embedding_dim = 8;
  auto other = TrainWord2Vec(o, *corpus, local);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Code::kInvalidArgument) << other.status();
  EXPECT_THAT(other.status().message(), HasSubstr("embeddings"));
}

}  // namespace
}  // namespace actorflow
