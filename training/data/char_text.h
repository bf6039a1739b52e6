// Character-level text for language models: UTF-8 text decoded into code points, a
// vocabulary of the distinct characters, a fixed train/validation split, and random
// windows of it as training batches.
//
//   AF_ASSIGN_OR_RETURN(CharCorpus corpus, ReadCharCorpus("/usr/share/games/fortunes"));
//   CharWindows windows(corpus.train, /*seq_len=*/64, /*seed=*/1);
//   CharBatch batch = windows.Next(32);     // inputs [32, 64], targets shifted by one
//   std::string text = corpus.Decode(ids);  // ids back to UTF-8
//
// The split: the text is cut into records (the fortunes format's entries, separated
// by lines holding only "%"; a text without such lines is cut into lines), in file
// name order; record k goes to validation when k % 10 == 9, every other record to
// training. Each record keeps its trailing newline, so the split parts read as text.
//
// Thread safety: the functions are pure; a CharWindows is for one thread.
#ifndef ACTORFLOW_TRAINING_DATA_CHAR_TEXT_H_
#define ACTORFLOW_TRAINING_DATA_CHAR_TEXT_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "graph/status.h"

namespace actorflow {

struct CharCorpus {
  std::vector<char32_t> vocabulary;  // id -> code point, ascending
  std::vector<int32_t> train;        // the training records' characters as ids
  std::vector<int32_t> validation;

  // The id of a code point; -1 when it is not in the vocabulary.
  int32_t IdOf(char32_t code_point) const;
  // `ids` as UTF-8; InvalidArgument naming the first id outside the vocabulary.
  StatusOr<std::string> Decode(const std::vector<int32_t>& ids) const;
};

// Decodes UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
// U+10FFFF). InvalidArgument naming `what` and the byte offset of the first byte that
// does not decode.
StatusOr<std::u32string> DecodeUtf8(const std::string& text, const std::string& what);
std::string EncodeUtf8(const std::u32string& code_points);

// The text files `path` names: itself when it is a regular file, else the regular
// files of the directory whose names do not end in ".dat" or ".u8" (the layout of
// Debian's fortunes package), in name order. NotFound naming the path when there is
// none.
StatusOr<std::vector<std::string>> ListTextFiles(const std::string& path);

// The corpus of `text` (named `what` in errors): InvalidArgument for text that is
// not UTF-8 or whose training or validation part is empty (fewer than 10 records).
StatusOr<CharCorpus> CharCorpusFromText(const std::string& text, const std::string& what);

// Reads the files of ListTextFiles(path); its errors, and the errors above naming
// the file.
StatusOr<CharCorpus> ReadCharCorpus(const std::string& path);

// A batch of windows: inputs[b, t] = text[start_b + t], targets[b, t] =
// text[start_b + t + 1], row-major [batch, seq_len].
struct CharBatch {
  int64_t batch = 0;
  int64_t seq_len = 0;
  std::vector<int32_t> inputs;
  std::vector<int32_t> targets;
};

// Windows of seq_len + 1 characters at uniformly drawn starts of `ids` (which must
// outlive this and hold more than seq_len characters; otherwise every batch is empty).
class CharWindows {
 public:
  CharWindows(const std::vector<int32_t>& ids, int64_t seq_len, uint64_t seed);
  CharBatch Next(int64_t batch);

 private:
  const std::vector<int32_t>& ids_;
  int64_t seq_len_;
  std::mt19937_64 rng_;
};

// The consecutive, non-overlapping windows of `ids` (the last partial one dropped),
// batch at a time: an evaluation pass over a split.
std::vector<CharBatch> SequentialCharBatches(const std::vector<int32_t>& ids, int64_t seq_len,
                                             int64_t batch);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_CHAR_TEXT_H_
