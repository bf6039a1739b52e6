#include "training/data/char_text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace actorflow {
namespace {

constexpr int kValidationEvery = 10;  // record k is validation when k % 10 == 9

// The records of `text` (see the header): fortune entries when some line is "%",
// else lines; each with its newline.
std::vector<std::u32string> Records(const std::u32string& text) {
  std::vector<std::u32string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(U'\n', begin);
    end = end == std::u32string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  const auto is_separator = [](const std::u32string& line) {
    return line == U"%\n" || line == U"%";
  };
  if (std::none_of(lines.begin(), lines.end(), is_separator)) return lines;
  std::vector<std::u32string> records(1);
  for (const std::u32string& line : lines) {
    if (is_separator(line)) {
      if (!records.back().empty()) records.emplace_back();
    } else {
      records.back() += line;
    }
  }
  if (records.back().empty()) records.pop_back();
  return records;
}

}  // namespace

int32_t CharCorpus::IdOf(char32_t code_point) const {
  const auto it = std::lower_bound(vocabulary.begin(), vocabulary.end(), code_point);
  if (it == vocabulary.end() || *it != code_point) return -1;
  return static_cast<int32_t>(it - vocabulary.begin());
}

StatusOr<std::string> CharCorpus::Decode(const std::vector<int32_t>& ids) const {
  std::u32string code_points;
  code_points.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= static_cast<int32_t>(vocabulary.size())) {
      return InvalidArgument("character id " + std::to_string(ids[i]) + " at position " +
                             std::to_string(i) + " is not in the vocabulary of " +
                             std::to_string(vocabulary.size()));
    }
    code_points.push_back(vocabulary[ids[i]]);
  }
  return EncodeUtf8(code_points);
}

StatusOr<std::u32string> DecodeUtf8(const std::string& text, const std::string& what) {
  std::u32string out;
  out.reserve(text.size());
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  for (size_t i = 0; i < text.size();) {
    const unsigned char lead = byte(i);
    int extra = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if (lead < 0x80) {
      cp = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      extra = 1, cp = lead & 0x1F, min = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2, cp = lead & 0x0F, min = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      extra = 3, cp = lead & 0x07, min = 0x10000;
    } else {
      extra = -1;
    }
    bool valid = extra >= 0 && i + extra < text.size();
    for (int k = 1; valid && k <= extra; ++k) {
      valid = (byte(i + k) & 0xC0) == 0x80;
      cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    valid = valid && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!valid) {
      std::ostringstream hex;
      hex << std::hex << static_cast<int>(lead);
      return InvalidArgument(what + ": byte " + std::to_string(i) + " (0x" + hex.str() +
                             ") does not start a valid UTF-8 character");
    }
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

std::string EncodeUtf8(const std::u32string& code_points) {
  std::string out;
  for (char32_t cp : code_points) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return out;
}

StatusOr<CharCorpus> CharCorpusFromText(const std::string& text, const std::string& what) {
  AF_ASSIGN_OR_RETURN(std::u32string code_points, DecodeUtf8(text, what));
  const std::set<char32_t> distinct(code_points.begin(), code_points.end());
  CharCorpus corpus;
  corpus.vocabulary.assign(distinct.begin(), distinct.end());
  const std::vector<std::u32string> records = Records(code_points);
  for (size_t k = 0; k < records.size(); ++k) {
    std::vector<int32_t>& part =
        k % kValidationEvery == kValidationEvery - 1 ? corpus.validation : corpus.train;
    for (char32_t cp : records[k]) part.push_back(corpus.IdOf(cp));
  }
  if (corpus.train.empty() || corpus.validation.empty()) {
    return InvalidArgument(what + ": " + std::to_string(records.size()) +
                           " records; at least 10 are needed for a validation split");
  }
  return corpus;
}

StatusOr<std::vector<std::string>> ListTextFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<std::string> files;
  if (fs::is_directory(path, error)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
      const std::string name = entry.path().filename().string();
      const bool index_file = (name.size() > 4 && name.substr(name.size() - 4) == ".dat") ||
                              (name.size() > 3 && name.substr(name.size() - 3) == ".u8");
      if (entry.is_regular_file() && !index_file) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
  } else if (fs::is_regular_file(path, error)) {
    files.push_back(path);
  }
  if (files.empty()) {
    return NotFound("--text '" + path + "' is neither a readable file nor a directory of "
                    "text files");
  }
  return files;
}

StatusOr<CharCorpus> ReadCharCorpus(const std::string& path) {
  AF_ASSIGN_OR_RETURN(const std::vector<std::string> files, ListTextFiles(path));
  std::string text;
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return NotFound("cannot read '" + file + "'");
    std::ostringstream content;
    content << in.rdbuf();
    const std::string part = content.str();
    // Each file is checked alone, so an error names the file and its own offset.
    AF_RETURN_IF_ERROR(DecodeUtf8(part, "'" + file + "'").status());
    text += part;
    if (!part.empty() && part.back() != '\n') text += '\n';
  }
  return CharCorpusFromText(text, "'" + path + "'");
}

CharWindows::CharWindows(const std::vector<int32_t>& ids, int64_t seq_len, uint64_t seed)
    : ids_(ids), seq_len_(seq_len), rng_(seed) {}

CharBatch CharWindows::Next(int64_t batch) {
  CharBatch out;
  const int64_t n = static_cast<int64_t>(ids_.size());
  if (seq_len_ < 1 || batch < 1 || n <= seq_len_) return out;
  out.batch = batch;
  out.seq_len = seq_len_;
  std::uniform_int_distribution<int64_t> start(0, n - seq_len_ - 1);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t s = start(rng_);
    out.inputs.insert(out.inputs.end(), ids_.begin() + s, ids_.begin() + s + seq_len_);
    out.targets.insert(out.targets.end(), ids_.begin() + s + 1, ids_.begin() + s + seq_len_ + 1);
  }
  return out;
}

std::vector<CharBatch> SequentialCharBatches(const std::vector<int32_t>& ids, int64_t seq_len,
                                             int64_t batch) {
  std::vector<CharBatch> batches;
  if (seq_len < 1 || batch < 1) return batches;
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t windows = n > 0 ? (n - 1) / seq_len : 0;
  for (int64_t w = 0; w < windows; w += batch) {
    CharBatch b;
    b.seq_len = seq_len;
    b.batch = std::min(batch, windows - w);
    for (int64_t k = w; k < w + b.batch; ++k) {
      const int64_t s = k * seq_len;
      b.inputs.insert(b.inputs.end(), ids.begin() + s, ids.begin() + s + seq_len);
      b.targets.insert(b.targets.end(), ids.begin() + s + 1, ids.begin() + s + seq_len + 1);
    }
    batches.push_back(std::move(b));
  }
  return batches;
}

}  // namespace actorflow
