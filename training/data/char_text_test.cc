// Character text: UTF-8 decoding and its errors, the fixed train/validation split of
// fortune records and of lines, the vocabulary, and the windows of a batch.
#include "training/data/char_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <string>

#include "graph/test_files.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

TEST(CharTextTest, Utf8RoundTripsAndBadBytesAreNamedByOffset) {
  const std::string text = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80!";
  auto decoded = DecodeUtf8(text, "t");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, U"caf\u00E9 \u20AC \U0001F600!");
  EXPECT_EQ(EncodeUtf8(*decoded), text);
  EXPECT_THAT(DecodeUtf8("ab\xFFz", "file.txt").status().message(),
              HasSubstr("file.txt: byte 2 (0xff)"));
  EXPECT_THAT(DecodeUtf8("ab\xC3", "t").status().message(), HasSubstr("byte 2"));   // truncated
  EXPECT_THAT(DecodeUtf8("\xC0\xAF", "t").status().message(), HasSubstr("byte 0"));  // overlong
  EXPECT_THAT(DecodeUtf8("x\xED\xA0\x80", "t").status().message(), HasSubstr("byte 1"));  // surrogate
}

TEST(CharTextTest, EveryTenthFortuneIsValidation) {
  std::string text;
  for (int k = 0; k < 20; ++k) text += "fortune " + std::string(1, 'a' + k) + "\n%\n";
  auto corpus = CharCorpusFromText(text, "t");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  auto validation = corpus->Decode(corpus->validation);
  ASSERT_TRUE(validation.ok());
  EXPECT_EQ(*validation, "fortune j\nfortune t\n");
  auto train = corpus->Decode(corpus->train);
  ASSERT_TRUE(train.ok());
  EXPECT_EQ(train->size(), 18u * 10);
  EXPECT_EQ(train->find("fortune j"), std::string::npos);
  // The vocabulary: every distinct character of the text (separators too), ascending.
  const std::set<char32_t> expected(text.begin(), text.end());
  EXPECT_EQ(std::set<char32_t>(corpus->vocabulary.begin(), corpus->vocabulary.end()), expected);
  EXPECT_TRUE(std::is_sorted(corpus->vocabulary.begin(), corpus->vocabulary.end()));
  EXPECT_EQ(corpus->IdOf(U'a'), static_cast<int32_t>(std::distance(
                                    expected.begin(), expected.find(U'a'))));
  EXPECT_EQ(corpus->IdOf(U'#'), -1);
  EXPECT_THAT(corpus->Decode({0, 99}).status().message(), HasSubstr("id 99 at position 1"));
}

TEST(CharTextTest, PlainTextSplitsByLinesAndTooLittleIsRefused) {
  std::string text;
  for (int k = 0; k < 30; ++k) text += "line " + std::to_string(k) + "\n";
  auto corpus = CharCorpusFromText(text, "t");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_EQ(*corpus->Decode(corpus->validation), "line 9\nline 19\nline 29\n");
  EXPECT_THAT(CharCorpusFromText("one\ntwo\n", "short.txt").status().message(),
              HasSubstr("short.txt: 2 records"));
}

TEST(CharTextTest, FilesAreReadInNameOrderAndABadFileIsNamed) {
  ScopedTempDir dir("chars");
  std::string a, b;
  for (int k = 0; k < 10; ++k) a += "a" + std::to_string(k) + "\n%\n";
  for (int k = 0; k < 10; ++k) b += "b" + std::to_string(k) + "\n%\n";
  ASSERT_TRUE(WriteTestFile(dir.File("b"), b));
  ASSERT_TRUE(WriteTestFile(dir.File("a"), a));
  ASSERT_TRUE(WriteTestFile(dir.File("a.dat"), "\xFF\xFF"));  // an index file: skipped
  auto corpus = ReadCharCorpus(dir.path());
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_EQ(*corpus->Decode(corpus->validation), "a9\nb9\n");
  ASSERT_TRUE(WriteTestFile(dir.File("c"), "ok\n\x80"));
  EXPECT_THAT(ReadCharCorpus(dir.path()).status().message(), HasSubstr("/c': byte 3"));
  EXPECT_EQ(ReadCharCorpus(dir.File("none")).status().code(), Code::kNotFound);
}

TEST(CharTextTest, WindowsShiftTargetsByOne) {
  std::vector<int32_t> ids(100);
  for (int i = 0; i < 100; ++i) ids[i] = i;
  CharWindows windows(ids, 8, 3);
  const CharBatch batch = windows.Next(4);
  ASSERT_EQ(batch.inputs.size(), 32u);
  for (int b = 0; b < 4; ++b) {
    for (int t = 0; t < 8; ++t) {
      EXPECT_EQ(batch.targets[b * 8 + t], batch.inputs[b * 8 + t] + 1);
      if (t > 0) EXPECT_EQ(batch.inputs[b * 8 + t], batch.inputs[b * 8 + t - 1] + 1);
    }
  }
  const auto sequential = SequentialCharBatches(ids, 8, 5);  // 12 windows: 5, 5, 2
  ASSERT_EQ(sequential.size(), 3u);
  EXPECT_EQ(sequential[2].batch, 2);
  EXPECT_EQ(sequential[2].inputs.front(), 80);
  EXPECT_EQ(sequential[2].targets.back(), 96);
  std::vector<int32_t> tiny = {1, 2};
  EXPECT_EQ(CharWindows(tiny, 8, 1).Next(4).batch, 0);
}

}  // namespace
}  // namespace actorflow
