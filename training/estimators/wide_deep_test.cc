// Categorical columns (ids, hashes, vocabularies, crosses and their errors), the AUC,
// and wide & deep trained in one process on rows drawn from a planted logistic model
// with an interaction: its test AUC comes within 0.02 of the planted model's own.
#include "training/estimators/wide_deep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "graph/test_files.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

TEST(CategoricalColumnsTest, EachKindMapsValuesToItsBuckets) {
  auto user = CategoricalColumnWithIdentity("user", 10);
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(*BucketOf(*user, {{"user", 7}}), 7);
  EXPECT_THAT(BucketOf(*user, {{"user", 10}}).status().message(), HasSubstr("'user': value 10"));
  EXPECT_THAT(BucketOf(*user, {{"user", 2.5}}).status().message(), HasSubstr("not an integer"));
  EXPECT_THAT(BucketOf(*user, {{"item", 1}}).status().message(), HasSubstr("no feature 'user'"));

  auto site = CategoricalColumnWithHashBucket("site", 100);
  ASSERT_TRUE(site.ok());
  std::set<int64_t> buckets;
  for (int v = 0; v < 1000; ++v) {
    const int64_t b = *BucketOf(*site, {{"site", v}});
    EXPECT_TRUE(b >= 0 && b < 100);
    buckets.insert(b);
  }
  EXPECT_GT(buckets.size(), 90u) << "the hash spreads 1000 values over few buckets";
  EXPECT_EQ(*BucketOf(*site, {{"site", 12345}}), *BucketOf(*site, {{"site", 12345}}));

  auto color = CategoricalColumnWithVocabularyList("color", {30, 10, 20}, 2);
  ASSERT_TRUE(color.ok());
  EXPECT_EQ(color->buckets, 5);
  EXPECT_EQ(*BucketOf(*color, {{"color", 10}}), 1);
  const int64_t oov = *BucketOf(*color, {{"color", 99}});
  EXPECT_TRUE(oov == 3 || oov == 4);

  auto cross = CrossedColumn({"a", "b"}, 1000);
  ASSERT_TRUE(cross.ok());
  EXPECT_EQ(cross->name, "a_X_b");
  EXPECT_NE(*BucketOf(*cross, {{"a", 1}, {"b", 2}}), *BucketOf(*cross, {{"a", 2}, {"b", 1}}));
}

TEST(CategoricalColumnsTest, BadColumnsAreNamed) {
  EXPECT_THAT(CategoricalColumnWithHashBucket("site", 0).status().message(),
              HasSubstr("'site': hash_bucket_size must be >= 1"));
  EXPECT_THAT(CategoricalColumnWithVocabularyList("color", {1, 2, 1}).status().message(),
              HasSubstr("lists 1 twice"));
  EXPECT_THAT(CrossedColumn({"a"}, 10).status().message(), HasSubstr("at least 2 keys"));
  EXPECT_EQ(CrossedColumn({"a", "b"}, 0).status().code(), Code::kInvalidArgument);
  auto strict = CategoricalColumnWithVocabularyList("color", {1, 2}, 0);
  ASSERT_TRUE(strict.ok());
  EXPECT_THAT(BucketOf(*strict, {{"color", 3}}).status().message(),
              HasSubstr("value 3 is not in its vocabulary"));
}

TEST(CategoricalColumnsTest, AVocabularyFileListsValuesByLine) {
  ScopedTempDir dir("vocabulary");
  ASSERT_TRUE(WriteTestFile(dir.File("colors.txt"), "7\n\n 3 \n-2\n"));
  auto colors = CategoricalColumnWithVocabularyFile("color", dir.File("colors.txt"), 2);
  ASSERT_TRUE(colors.ok()) << colors.status();
  EXPECT_EQ(colors->buckets, 5);
  EXPECT_EQ(*BucketOf(*colors, {{"color", 7}}), 0);
  EXPECT_EQ(*BucketOf(*colors, {{"color", 3}}), 1);
  EXPECT_EQ(*BucketOf(*colors, {{"color", -2}}), 2);
  const int64_t oov = *BucketOf(*colors, {{"color", 11}});
  EXPECT_GE(oov, 3);
  EXPECT_LT(oov, 5);

  auto missing = CategoricalColumnWithVocabularyFile("color", dir.File("none.txt"));
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("none.txt"));
  ASSERT_TRUE(WriteTestFile(dir.File("twice.txt"), "1\n2\n1\n"));
  EXPECT_THAT(CategoricalColumnWithVocabularyFile("color", dir.File("twice.txt")).status().message(),
              HasSubstr("twice.txt' line 3 repeats 1 (first on line 1)"));
  ASSERT_TRUE(WriteTestFile(dir.File("words.txt"), "1\nred\n"));
  EXPECT_THAT(CategoricalColumnWithVocabularyFile("color", dir.File("words.txt")).status().message(),
              HasSubstr("line 2: 'red' is not an integer"));
  ASSERT_TRUE(WriteTestFile(dir.File("empty.txt"), "\n"));
  EXPECT_THAT(CategoricalColumnWithVocabularyFile("color", dir.File("empty.txt")).status().message(),
              HasSubstr("lists no value"));
}

TEST(AreaUnderCurveTest, RanksWithTiesCountingHalf) {
  EXPECT_DOUBLE_EQ(AreaUnderCurve({0.1, 0.4, 0.35, 0.8}, {0, 0, 1, 1}), 0.75);
  EXPECT_DOUBLE_EQ(AreaUnderCurve({0.5, 0.5, 0.5}, {0, 1, 0}), 0.5);
  EXPECT_DOUBLE_EQ(AreaUnderCurve({0.1, 0.9}, {0, 1}), 1.0);
  EXPECT_TRUE(std::isnan(AreaUnderCurve({0.1, 0.9}, {1, 1})));
}

// Rows (user in [0, 300), group in [0, 8), hour in [0, 24), price) with
// logit = u[user] + x[group, hour] + 2 (price - 0.5) - 0.5; labels drawn from it.
struct Planted {
  CsvData train, test;
  double auc = 0;
};

Planted MakeData(int64_t train_rows, int64_t test_rows) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> u(300), x(8 * 24);
  for (double& w : u) w = 0.7 * normal(rng);
  for (double& w : x) w = 1.0 * normal(rng);
  std::uniform_real_distribution<double> uniform(0, 1);
  Planted p;
  std::vector<double> scores;
  std::vector<int> labels;
  for (CsvData* data : {&p.train, &p.test}) {
    const int64_t n = data == &p.train ? train_rows : test_rows;
    std::vector<float> features;
    std::vector<int32_t> y;
    for (int64_t r = 0; r < n; ++r) {
      const int user = static_cast<int>(rng() % 300), group = static_cast<int>(rng() % 8);
      const int hour = static_cast<int>(rng() % 24);
      const double price = uniform(rng);
      const double logit = u[user] + x[group * 24 + hour] + 2 * (price - 0.5) - 0.5;
      const double prob = 1 / (1 + std::exp(-logit));
      const int label = uniform(rng) < prob ? 1 : 0;
      features.insert(features.end(), {static_cast<float>(user), static_cast<float>(group),
                                       static_cast<float>(hour), static_cast<float>(price)});
      y.push_back(label);
      if (data == &p.test) {
        scores.push_back(prob);
        labels.push_back(label);
      }
    }
    data->features = Tensor::FromVector(features, Shape{n, 4});
    data->labels = Tensor::FromVector(y);
    data->feature_names = {"user", "group", "hour", "price"};
  }
  p.auc = AreaUnderCurve(scores, labels);
  return p;
}

WideDeepOptions SmallModel() {
  WideDeepOptions o;
  auto user = CategoricalColumnWithIdentity("user", 300);
  auto group = CategoricalColumnWithIdentity("group", 8);
  auto hour = CategoricalColumnWithIdentity("hour", 24);
  auto cross = CrossedColumn({"group", "hour"}, 2000);
  o.linear_columns = {*user, *group, *hour, *cross};
  o.linear_numeric_columns = {"price"};
  o.dnn_embedding_columns = {{*user, 4}, {*group, 4}};
  o.dnn_indicator_columns = {{*hour}};
  o.dnn_numeric_columns = {"price"};
  o.hidden_units = {16};
  o.dnn_learning_rate = 0.1;
  o.linear_learning_rate = 1.0;
  o.epochs = 4;
  o.batch = 128;
  return o;
}

TEST(WideDeepTest, ReachesThePlantedModelsAuc) {
  const Planted data = MakeData(40000, 10000);
  auto result = TrainWideDeep(SmallModel(), data.train, data.test, [](const Graph* g, int) {
    return NewDirectSession(g);
  });
  ASSERT_TRUE(result.ok()) << result.status();
  std::cout << "[ measured ] wide & deep AUC " << result->auc << ", planted " << data.auc
            << ", accuracy " << result->accuracy << ", " << result->steps << " steps\n";
  EXPECT_GT(result->auc, data.auc - 0.02);
  EXPECT_LE(result->auc, data.auc + 0.01);
  EXPECT_EQ(result->steps, 4 * ((40000 + 127) / 128));
  EXPECT_GT(result->accuracy, 0.6);
  EXPECT_EQ(result->bytes_pulled_per_step, 0);
  EXPECT_GT(result->rows_touched_per_step, 0);
}

TEST(WideDeepTest, MissingFeaturesAndBadOptionsAreNamed) {
  const Planted data = MakeData(100, 10);
  WideDeepOptions o = SmallModel();
  auto site = CategoricalColumnWithHashBucket("site", 10);
  o.linear_columns.push_back(*site);
  auto direct = [](const Graph* g, int) { return NewDirectSession(g); };
  EXPECT_THAT(TrainWideDeep(o, data.train, data.test, direct).status().message(),
              HasSubstr("feature 'site'"));
  o = SmallModel();
  o.num_workers = 2;
  EXPECT_THAT(TrainWideDeep(o, data.train, data.test, direct).status().message(),
              HasSubstr("ps tasks"));
  Planted two_classes = MakeData(100, 10);
  two_classes.train.labels.data<int32_t>()[5] = 2;
  EXPECT_THAT(TrainWideDeep(SmallModel(), two_classes.train, data.test, direct).status().message(),
              HasSubstr("training row 6: label 2 is not 0 or 1"));
  o = SmallModel();
  auto big = CategoricalColumnWithIdentity("user", 300);
  o.dnn_indicator_columns = {{*big}, {*CategoricalColumnWithHashBucket("user", 5000)}};
  EXPECT_THAT(TrainWideDeep(o, data.train, data.test, direct).status().message(),
              HasSubstr("at most 1000"));
}

}  // namespace
}  // namespace actorflow
