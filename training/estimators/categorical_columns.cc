#include "training/estimators/categorical_columns.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <system_error>
#include <vector>

namespace actorflow {
namespace {

// SplitMix64's finalizer: a fixed, well-mixed 64-bit hash of a 64-bit value.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Status AtLeastOne(const std::string& what, const std::string& name, int64_t value) {
  if (value >= 1) return Status::OK();
  return InvalidArgument("categorical column '" + name + "': " + what + " must be >= 1, got " +
                         std::to_string(value));
}

StatusOr<int64_t> IntegerValue(const CategoricalColumn& column, const std::string& feature,
                               const std::map<std::string, double>& values) {
  auto it = values.find(feature);
  if (it == values.end()) {
    return InvalidArgument("categorical column '" + column.name + "': the row has no feature '" +
                           feature + "'");
  }
  const double v = it->second;
  if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9.0e15) {
    return InvalidArgument("categorical column '" + column.name + "': feature '" + feature +
                           "' is " + std::to_string(v) + ", not an integer");
  }
  return static_cast<int64_t>(v);
}

}  // namespace

StatusOr<CategoricalColumn> CategoricalColumnWithIdentity(const std::string& name,
                                                          int64_t num_buckets) {
  AF_RETURN_IF_ERROR(AtLeastOne("num_buckets", name, num_buckets));
  CategoricalColumn c;
  c.kind = CategoricalColumn::Kind::kIdentity;
  c.name = name;
  c.buckets = num_buckets;
  return c;
}

StatusOr<CategoricalColumn> CategoricalColumnWithHashBucket(const std::string& name,
                                                            int64_t hash_bucket_size) {
  AF_RETURN_IF_ERROR(AtLeastOne("hash_bucket_size", name, hash_bucket_size));
  CategoricalColumn c;
  c.kind = CategoricalColumn::Kind::kHashBucket;
  c.name = name;
  c.buckets = hash_bucket_size;
  return c;
}

StatusOr<CategoricalColumn> CategoricalColumnWithVocabularyList(
    const std::string& name, const std::vector<int64_t>& vocabulary, int64_t num_oov_buckets) {
  if (vocabulary.empty()) {
    return InvalidArgument("categorical column '" + name + "': the vocabulary is empty");
  }
  if (num_oov_buckets < 0) {
    return InvalidArgument("categorical column '" + name + "': num_oov_buckets must be >= 0");
  }
  CategoricalColumn c;
  c.kind = CategoricalColumn::Kind::kVocabularyList;
  c.name = name;
  for (size_t i = 0; i < vocabulary.size(); ++i) {
    if (!c.vocabulary.emplace(vocabulary[i], static_cast<int64_t>(i)).second) {
      return InvalidArgument("categorical column '" + name + "': the vocabulary lists " +
                             std::to_string(vocabulary[i]) + " twice");
    }
  }
  c.num_oov_buckets = num_oov_buckets;
  c.buckets = static_cast<int64_t>(vocabulary.size()) + num_oov_buckets;
  return c;
}

StatusOr<CategoricalColumn> CategoricalColumnWithVocabularyFile(const std::string& name,
                                                                const std::string& path,
                                                                int64_t num_oov_buckets) {
  std::ifstream in(path);
  if (!in.is_open()) {
    return NotFound("categorical column '" + name + "': cannot read vocabulary file '" + path + "'");
  }
  std::vector<int64_t> vocabulary;
  std::map<int64_t, int64_t> first_line;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;  // blank lines
    const size_t end = line.find_last_not_of(" \t\r") + 1;
    int64_t value = 0;
    const char* first = line.data() + begin;
    const auto [ptr, error] = std::from_chars(first, line.data() + end, value);
    const std::string where = "vocabulary file '" + path + "' line " + std::to_string(number);
    if (error != std::errc() || ptr != line.data() + end) {
      return InvalidArgument("categorical column '" + name + "': " + where + ": '" +
                             line.substr(begin, end - begin) + "' is not an integer");
    }
    const auto [it, inserted] = first_line.emplace(value, number);
    if (!inserted) {
      return InvalidArgument("categorical column '" + name + "': " + where + " repeats " +
                             std::to_string(value) + " (first on line " +
                             std::to_string(it->second) + ")");
    }
    vocabulary.push_back(value);
  }
  if (vocabulary.empty()) {
    return InvalidArgument("categorical column '" + name + "': vocabulary file '" + path +
                           "' lists no value");
  }
  return CategoricalColumnWithVocabularyList(name, vocabulary, num_oov_buckets);
}

StatusOr<CategoricalColumn> CrossedColumn(const std::vector<std::string>& keys,
                                          int64_t hash_bucket_size) {
  std::string name;
  for (const std::string& key : keys) name += (name.empty() ? "" : "_X_") + key;
  if (keys.size() < 2) {
    return InvalidArgument("crossed column '" + name + "': needs at least 2 keys");
  }
  AF_RETURN_IF_ERROR(AtLeastOne("hash_bucket_size", name, hash_bucket_size));
  CategoricalColumn c;
  c.kind = CategoricalColumn::Kind::kCrossed;
  c.name = name;
  c.keys = keys;
  c.buckets = hash_bucket_size;
  return c;
}

std::vector<std::string> RawFeaturesOf(const CategoricalColumn& column) {
  if (column.kind == CategoricalColumn::Kind::kCrossed) return column.keys;
  return {column.name};
}

StatusOr<int64_t> BucketOf(const CategoricalColumn& column,
                           const std::map<std::string, double>& values) {
  using Kind = CategoricalColumn::Kind;
  const auto bucket_of_hash = [&](uint64_t h) {
    return static_cast<int64_t>(h % static_cast<uint64_t>(column.buckets));
  };
  if (column.kind == Kind::kCrossed) {
    uint64_t h = 0;
    for (const std::string& key : column.keys) {
      AF_ASSIGN_OR_RETURN(int64_t v, IntegerValue(column, key, values));
      h = Mix(h ^ Mix(static_cast<uint64_t>(v)));
    }
    return bucket_of_hash(h);
  }
  AF_ASSIGN_OR_RETURN(int64_t v, IntegerValue(column, column.name, values));
  switch (column.kind) {
    case Kind::kIdentity:
      if (v < 0 || v >= column.buckets) {
        return InvalidArgument("categorical column '" + column.name + "': value " +
                               std::to_string(v) + " is not in [0, " +
                               std::to_string(column.buckets) + ")");
      }
      return v;
    case Kind::kHashBucket:
      return bucket_of_hash(Mix(static_cast<uint64_t>(v)));
    case Kind::kVocabularyList: {
      auto it = column.vocabulary.find(v);
      if (it != column.vocabulary.end()) return it->second;
      if (column.num_oov_buckets == 0) {
        return InvalidArgument("categorical column '" + column.name + "': value " +
                               std::to_string(v) + " is not in its vocabulary");
      }
      const int64_t listed = column.buckets - column.num_oov_buckets;
      return listed + static_cast<int64_t>(Mix(static_cast<uint64_t>(v)) %
                                           static_cast<uint64_t>(column.num_oov_buckets));
    }
    case Kind::kCrossed:
      break;
  }
  return Internal("categorical column '" + column.name + "': unknown kind");
}

}  // namespace actorflow
