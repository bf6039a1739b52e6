// Character language models: char_lm.json and its errors, both models learning a
// text whose next character is mostly predictable (bits per character fall far below
// the uniform guess), a model directory that resumes, refuses another vocabulary and
// samples deterministically, and the prime's errors.
#include "training/estimators/char_lm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "graph/test_files.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

WorkerSessionFactory Local() {
  return [](const Graph* graph, int) { return NewDirectSession(graph); };
}

// Fortunes of the words "the cat sat on a mat" in random order: after a few letters
// of a word the rest is known.
CharCorpus Corpus(const std::string& extra_word = "") {
  std::vector<std::string> words = {"the", "cat", "sat", "on", "a", "mat"};
  if (!extra_word.empty()) words.push_back(extra_word);
  std::string text;
  uint64_t state = 7;
  for (int record = 0; record < 200; ++record) {
    for (int w = 0; w < 8; ++w) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      text += words[(state >> 33) % words.size()] + (w < 7 ? " " : "\n");
    }
    text += "%\n";
  }
  auto corpus = CharCorpusFromText(text, "cats");
  EXPECT_TRUE(corpus.ok()) << corpus.status();
  return *corpus;
}

CharLmOptions Small(const std::string& model) {
  CharLmOptions o;
  o.spec.model = model;
  o.spec.seq_len = 16;
  o.spec.embedding_dim = 8;
  o.spec.lstm_units = {32};
  o.spec.width = 16;
  o.spec.heads = 2;
  o.spec.blocks = 1;
  o.batch = 16;
  o.steps = 150;
  o.learning_rate = 0.01;
  return o;
}

TEST(CharLmSpecTest, JsonRoundTripsAndBadSpecsAreNamed) {
  CharLmSpec spec;
  spec.vocabulary = {U'\n', U'a', U'\u00e9'};
  auto parsed = ParseCharLmSpec(CharLmSpecToJson(spec), "m.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, spec);
  CharLmSpec other = spec;
  other.model = "char-transformer";
  other.heads = 3;
  EXPECT_THAT(ValidateCharLmSpec(other).message(), HasSubstr("3 heads do not divide the width 128"));
  other.model = "char-gru";
  EXPECT_THAT(ValidateCharLmSpec(other).message(), HasSubstr("unknown model 'char-gru'"));
  other = spec;
  other.vocabulary.push_back(U'z');
  EXPECT_THAT(DescribeCharLmDifference(spec, other), HasSubstr("vocabulary: 3 characters vs 4"));
  EXPECT_THAT(ParseCharLmSpec("{\"model\": 1}", "m.json").status().message(), HasSubstr("m.json"));
}

class CharLmTrainingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CharLmTrainingTest, BitsPerCharacterFallFarBelowTheUniformGuess) {
  const CharCorpus corpus = Corpus();
  auto result = TrainCharLm(Small(GetParam()), corpus, Local());
  ASSERT_TRUE(result.ok()) << result.status();
  const double uniform = std::log2(static_cast<double>(corpus.vocabulary.size()));
  EXPECT_EQ(result->steps, 150);
  EXPECT_GT(result->samples_per_second, 0);
  EXPECT_LT(result->bits_per_char, result->first_bits_per_char - 0.5) << GetParam();
  EXPECT_LT(result->bits_per_char, 0.6 * uniform) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, CharLmTrainingTest,
                         ::testing::Values("char-lstm", "char-transformer"));

TEST(CharLmModelDirTest, ResumesRefusesAnotherVocabularyAndSamples) {
  ScopedTempDir dir("char_lm");
  const CharCorpus corpus = Corpus();
  CharLmOptions o = Small("char-lstm");
  o.steps = 60;
  o.checkpoint_dir = dir.path();
  auto first = TrainCharLm(o, corpus, Local());
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = TrainCharLm(o, corpus, Local());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->global_step, 120);
  EXPECT_LT(second->first_bits_per_char, first->first_bits_per_char);  // resumed, not fresh

  auto refused = TrainCharLm(o, Corpus("zoo"), Local());  // 'z' joins the vocabulary
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("vocabulary"));

  SampleOptions sample;
  sample.prime = "the c";
  sample.length = 40;
  auto text = SampleCharLm(dir.path(), sample, Local());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->substr(0, 5), "the c");
  EXPECT_EQ(text->size(), 45u);  // ASCII only
  auto again = SampleCharLm(dir.path(), sample, Local());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *text);  // same seed, same text
  sample.prime = "the dog";
  EXPECT_THAT(SampleCharLm(dir.path(), sample, Local()).status().message(),
              HasSubstr("character 4 ('d') is not in the model's vocabulary"));
  EXPECT_EQ(SampleCharLm(dir.File("none"), sample, Local()).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace actorflow
