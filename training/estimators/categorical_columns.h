// Categorical feature columns (TensorFlow 1.x's tf.feature_column for categorical
// data) over integer-valued raw features: each maps a row's raw values to one id in
// [0, buckets), the row of the column's weight or embedding table. Features here are
// numbers (a CSV's columns), so a "hash bucket" hashes the integer value and a
// "vocabulary list" lists integer values.
//
//   auto user = CategoricalColumnWithIdentity("user", 10000);
//   auto site = CategoricalColumnWithHashBucket("site", 100000);
//   auto cross = CrossedColumn({"category", "hour"}, 24000);
//   EmbeddingColumn user_embedding{*user, /*dimension=*/16};
//   AF_ASSIGN_OR_RETURN(int64_t id, BucketOf(*cross, row));   // row: name -> value
//
// Thread safety: the columns are values; the functions are pure.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_CATEGORICAL_COLUMNS_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_CATEGORICAL_COLUMNS_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/status.h"

namespace actorflow {

struct CategoricalColumn {
  enum class Kind { kIdentity, kHashBucket, kVocabularyList, kCrossed };
  Kind kind = Kind::kIdentity;
  std::string name;               // the raw feature; a cross: its keys joined by "_X_"
  int64_t buckets = 0;            // ids lie in [0, buckets)
  std::vector<std::string> keys;  // kCrossed: the raw features crossed
  std::unordered_map<int64_t, int64_t> vocabulary;  // kVocabularyList: value -> id
  int64_t num_oov_buckets = 0;    // kVocabularyList: ids for values not listed
};

// id = the value itself, which must lie in [0, num_buckets).
StatusOr<CategoricalColumn> CategoricalColumnWithIdentity(const std::string& name,
                                                          int64_t num_buckets);
// id = a 64-bit hash of the value mod hash_bucket_size.
StatusOr<CategoricalColumn> CategoricalColumnWithHashBucket(const std::string& name,
                                                            int64_t hash_bucket_size);
// id = the value's position in `vocabulary`; a value not listed goes to one of
// num_oov_buckets further ids by hash (with none, it is an error naming the value).
StatusOr<CategoricalColumn> CategoricalColumnWithVocabularyList(
    const std::string& name, const std::vector<int64_t>& vocabulary, int64_t num_oov_buckets = 1);
// The vocabulary list read from a file (tf.feature_column's
// categorical_column_with_vocabulary_file): one integer value per line, blank lines
// skipped, a value's id its position. NotFound naming the file when it cannot be
// read; InvalidArgument naming the file and line for a value that is not an integer
// or one listed twice (and the line it was first on), or a file without values.
StatusOr<CategoricalColumn> CategoricalColumnWithVocabularyFile(const std::string& name,
                                                                const std::string& path,
                                                                int64_t num_oov_buckets = 1);
// id = a hash of the raw values of `keys` (at least 2) mod hash_bucket_size: one
// weight per combination, what a linear model needs for an interaction.
StatusOr<CategoricalColumn> CrossedColumn(const std::vector<std::string>& keys,
                                          int64_t hash_bucket_size);

// A dense [dimension] vector per id, learned (tf.feature_column.embedding_column).
struct EmbeddingColumn {
  CategoricalColumn categorical;
  int64_t dimension = 8;
};
// A one-hot [buckets] vector per id (tf.feature_column.indicator_column).
struct IndicatorColumn {
  CategoricalColumn categorical;
};

// The raw features a column reads: its name, or a cross's keys.
std::vector<std::string> RawFeaturesOf(const CategoricalColumn& column);

// The id of one row: `values` holds the row's raw features by name. InvalidArgument
// naming the column for a missing feature, a value that is not an integer, an
// identity value outside [0, buckets) or an unlisted value without oov buckets.
StatusOr<int64_t> BucketOf(const CategoricalColumn& column,
                           const std::map<std::string, double>& values);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_CATEGORICAL_COLUMNS_H_
