// char_lm.json (CharLmSpec): validation, JSON and differences.
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "training/estimators/char_lm.h"

namespace actorflow {

bool CharLmSpec::operator==(const CharLmSpec& o) const {
  return model == o.model && seq_len == o.seq_len && vocabulary == o.vocabulary &&
         embedding_dim == o.embedding_dim && lstm_units == o.lstm_units && width == o.width &&
         heads == o.heads && blocks == o.blocks && seed == o.seed;
}

Status ValidateCharLmSpec(const CharLmSpec& s) {
  const auto positive = [](const std::string& name, int64_t value) -> Status {
    if (value >= 1) return Status::OK();
    return InvalidArgument("char LM: " + name + " must be >= 1, got " + std::to_string(value));
  };
  if (s.model != "char-lstm" && s.model != "char-transformer") {
    return InvalidArgument("char LM: unknown model '" + s.model +
                           "' (char-lstm or char-transformer)");
  }
  AF_RETURN_IF_ERROR(positive("seq_len", s.seq_len));
  if (s.vocabulary.size() < 2) {
    return InvalidArgument("char LM: a vocabulary of " + std::to_string(s.vocabulary.size()) +
                           " characters; at least 2 are needed");
  }
  if (s.model == "char-lstm") {
    AF_RETURN_IF_ERROR(positive("embedding_dim", s.embedding_dim));
    if (s.lstm_units.empty()) return InvalidArgument("char LM: char-lstm needs LSTM layers");
    for (int64_t units : s.lstm_units) AF_RETURN_IF_ERROR(positive("LSTM units", units));
    return Status::OK();
  }
  AF_RETURN_IF_ERROR(positive("width", s.width));
  AF_RETURN_IF_ERROR(positive("heads", s.heads));
  AF_RETURN_IF_ERROR(positive("blocks", s.blocks));
  if (s.width % s.heads != 0) {
    return InvalidArgument("char LM: " + std::to_string(s.heads) +
                           " heads do not divide the width " + std::to_string(s.width));
  }
  return Status::OK();
}

std::string CharLmSpecToJson(const CharLmSpec& s) {
  nlohmann::ordered_json j;
  j["model"] = s.model;
  j["seq_len"] = s.seq_len;
  j["embedding_dim"] = s.embedding_dim;
  j["lstm_units"] = s.lstm_units;
  j["width"] = s.width;
  j["heads"] = s.heads;
  j["blocks"] = s.blocks;
  j["seed"] = s.seed;
  std::vector<uint32_t> code_points(s.vocabulary.begin(), s.vocabulary.end());
  j["vocabulary"] = code_points;  // code points, ascending
  return j.dump(1) + "\n";
}

StatusOr<CharLmSpec> ParseCharLmSpec(const std::string& text, const std::string& path) {
  CharLmSpec s;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    s.model = j.at("model").get<std::string>();
    s.seq_len = j.at("seq_len").get<int64_t>();
    s.embedding_dim = j.at("embedding_dim").get<int64_t>();
    s.lstm_units = j.at("lstm_units").get<std::vector<int64_t>>();
    s.width = j.at("width").get<int64_t>();
    s.heads = j.at("heads").get<int64_t>();
    s.blocks = j.at("blocks").get<int64_t>();
    s.seed = j.at("seed").get<uint64_t>();
    for (uint32_t cp : j.at("vocabulary").get<std::vector<uint32_t>>()) s.vocabulary.push_back(cp);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(path + ": not a char LM description: " + e.what());
  }
  const Status valid = ValidateCharLmSpec(s);
  if (!valid.ok()) return InvalidArgument(path + ": " + valid.message());
  return s;
}

std::string DescribeCharLmDifference(const CharLmSpec& a, const CharLmSpec& b) {
  std::ostringstream out;
  const auto field = [&](const std::string& name, const auto& x, const auto& y) {
    if (x == y) return;
    if (out.tellp() > 0) out << ", ";
    out << name << " " << x << " vs " << y;
  };
  field("model", a.model, b.model);
  field("seq_len", a.seq_len, b.seq_len);
  if (a.vocabulary != b.vocabulary) {
    if (out.tellp() > 0) out << ", ";
    out << "vocabulary: " << a.vocabulary.size() << " characters vs " << b.vocabulary.size();
    if (a.vocabulary.size() == b.vocabulary.size()) out << " (other characters)";
  }
  field("embedding_dim", a.embedding_dim, b.embedding_dim);
  if (a.lstm_units != b.lstm_units) {
    if (out.tellp() > 0) out << ", ";
    out << "LSTM layers: " << a.lstm_units.size() << " vs " << b.lstm_units.size()
        << (a.lstm_units.size() == b.lstm_units.size() ? " (other sizes)" : "");
  }
  field("width", a.width, b.width);
  field("heads", a.heads, b.heads);
  field("blocks", a.blocks, b.blocks);
  field("seed", a.seed, b.seed);
  return out.str();
}

StatusOr<CharLmSpec> ReadCharLmSpec(const std::string& dir) {
  const std::string path = dir + "/" + kCharLmSpecFile;
  std::ifstream in(path);
  if (!in.is_open()) {
    return NotFound(path + ": no char LM description (is '" + dir +
                    "' a directory written by train --model char-lstm|char-transformer "
                    "--checkpoint-dir?)");
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseCharLmSpec(text.str(), path);
}

}  // namespace actorflow
