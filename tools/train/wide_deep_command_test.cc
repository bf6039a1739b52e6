// `actorflow train --model wide-deep` through its C++ entry point on CSV files of
// tools/ctr_data.py's layout written here (labels from a planted model of hour and
// category): its JSON line, between-graph training on a local cluster that moves
// rows rather than tables, and the flags it refuses.
#include "tools/train/wide_deep_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/test_files.h"
#include "kernels/direct_session.h"
#include "tools/train/train_command.h"
#include "tools/train/train_flags.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/wide_deep.h"
#include "training/serving/servable.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

// P(click) = sigmoid(1.5 if category and hour are both even else -1.5).
void WriteCsv(const std::string& path, int rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::ostringstream csv;
  csv << "user,item,site,category,hour,price,clicked\n";
  for (int r = 0; r < rows; ++r) {
    const int category = static_cast<int>(rng() % 100), hour = static_cast<int>(rng() % 24);
    const double logit = (category % 2 == 0 && hour % 2 == 0) ? 1.5 : -1.5;
    const double p = 1 / (1 + std::exp(-logit));
    const int clicked = std::uniform_real_distribution<double>(0, 1)(rng) < p ? 1 : 0;
    csv << rng() % 10000 << "," << rng() % 100000 << "," << rng() % 1000000 << "," << category
        << "," << hour << "," << (rng() % 1000) / 1000.0 << "," << clicked << "\n";
  }
  ASSERT_TRUE(WriteTestFile(path, csv.str()));
}

TrainCommandOptions WideDeep(const ScopedTempDir& dir) {
  WriteCsv(dir.File("train.csv"), 8000, 1);
  WriteCsv(dir.File("test.csv"), 2000, 2);
  TrainCommandOptions options;
  options.model = "wide-deep";
  ApplyModelDefaults([](const std::string&) { return false; }, &options);
  options.train_path = dir.File("train.csv");
  options.test_path = dir.File("test.csv");
  options.label = "clicked";
  options.json = true;
  return options;
}

nlohmann::json RunJson(const TrainCommandOptions& options) {
  std::ostringstream out, err;
  EXPECT_EQ(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << err.str();
  return nlohmann::json::parse(out.str(), nullptr, /*allow_exceptions=*/false);
}

TEST(WideDeepCommandTest, OneProcessLearnsThePlantedInteraction) {
  ScopedTempDir dir("wide_deep");
  const nlohmann::json j = RunJson(WideDeep(dir));
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["model"], "wide-deep");
  EXPECT_EQ(j["steps"], 2 * (8000 / 256 + 1));  // two passes of 32 batches
  // Perfect knowledge of the rule scores 0.84 here: P is 0.82 on a quarter of the rows.
  EXPECT_GT(j["auc"].get<double>(), 0.75) << j;
  EXPECT_GT(j["accuracy"].get<double>(), 0.7) << j;
  EXPECT_EQ(j["bytes_pulled_per_step"], 0.0);
  EXPECT_GT(j["dense_bytes_per_step"].get<double>(), 1e7);  // the tables are large
}

class WideDeepClusterTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WideDeepClusterTest, ALocalClusterMovesRowsOnly) {
  ScopedTempDir dir("wide_deep");
  TrainCommandOptions options = WideDeep(dir);
  options.cluster = "local:ps=2,worker=2";
  options.mode = GetParam();
  options.epochs = 1;
  const nlohmann::json j = RunJson(options);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_GT(j["auc"].get<double>(), 0.7) << j;
  // Async: each worker steps through its 4000 rows; sync: one step per pair of batches.
  EXPECT_EQ(j["steps"], GetParam() == "sync" ? 16 : 32) << j;
  const double moved = j["bytes_pulled_per_step"].get<double>() + j["bytes_pushed_per_step"].get<double>();
  EXPECT_GT(moved, 0);
  EXPECT_LT(moved * 50, j["dense_bytes_per_step"].get<double>()) << j;
}

// The same on a simulated cluster: rows only on the simulated links, the drivers'
// invariants hold, and the same flags give the same run.
TEST_P(WideDeepClusterTest, ASimulatedClusterReplays) {
  ScopedTempDir dir("wide_deep");
  TrainCommandOptions options = WideDeep(dir);
  options.cluster = "sim:ps=2,worker=2";
  options.mode = GetParam();
  options.epochs = 1;
  const nlohmann::json j = RunJson(options);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_GT(j["auc"].get<double>(), 0.7) << j;
  EXPECT_EQ(j["steps"], GetParam() == "sync" ? 16 : 32) << j;
  const double moved = j["bytes_pulled_per_step"].get<double>() + j["bytes_pushed_per_step"].get<double>();
  EXPECT_GT(moved, 0);
  EXPECT_LT(moved * 50, j["dense_bytes_per_step"].get<double>()) << j;
  EXPECT_EQ(j["invariant_violations"], 0);
  const nlohmann::json again = RunJson(options);
  EXPECT_EQ(j["event_log_hash"], again["event_log_hash"]);
  EXPECT_EQ(j["auc"], again["auc"]);
}

INSTANTIATE_TEST_SUITE_P(Modes, WideDeepClusterTest, ::testing::Values("async", "sync"));

// The test rows through the exported servable: their probabilities, fed the ids the
// columns give.
std::vector<double> ServedProbabilities(const std::string& version_dir, const CsvData& test) {
  auto servable = LoadServable(version_dir, 1);
  EXPECT_TRUE(servable.ok()) << servable.status();
  if (!servable.ok()) return {};
  auto signature = (*servable)->Signature("");
  auto columns = CtrDataColumns();
  auto session = NewDirectSession((*servable)->graph.get());
  EXPECT_TRUE(signature.ok() && columns.ok() && session.ok());
  if (!signature.ok() || !columns.ok() || !session.ok()) return {};
  const int64_t rows = test.features.dim(0), f = test.features.dim(1);
  std::map<std::string, std::vector<int32_t>> ids;
  std::map<std::string, std::vector<float>> numbers;
  for (int64_t r = 0; r < rows; ++r) {
    std::map<std::string, double> values;
    for (int64_t c = 0; c < f; ++c) values[test.feature_names[c]] = test.features.data<float>()[r * f + c];
    for (const CategoricalColumn& column : columns->linear_columns) {
      ids[column.name].push_back(static_cast<int32_t>(*BucketOf(column, values)));
    }
    numbers["price"].push_back(static_cast<float>(values["price"]));
  }
  FeedList feeds;
  for (const auto& [name, info] : (*signature)->inputs) {
    if (ids.count(name)) {
      feeds.emplace_back(info.endpoint, Tensor::FromVector(ids[name]));
    } else {
      EXPECT_EQ(name, "price");
      feeds.emplace_back(info.endpoint, Tensor::FromVector(numbers[name], Shape{rows, 1}));
    }
  }
  EXPECT_EQ(feeds.size(), 7u);  // six categorical columns and price
  std::vector<Tensor> out;
  const Status run = (*session)->Run(feeds, {(*signature)->outputs.at("probability").endpoint},
                                     {}, &out);
  EXPECT_TRUE(run.ok()) << run;
  if (!run.ok()) return {};
  return std::vector<double>(out[0].data<float>(), out[0].data<float>() + rows);
}

// --checkpoint-dir on a sync cluster (the tables on two ps tasks): the exported
// servable scores the test rows as the evaluation did (the same AUC), a second run
// resumes from the checkpoint's global step, and --logdir holds worker 0's log.
TEST(WideDeepCommandTest, ACheckpointDirExportsTheModelItEvaluated) {
  ScopedTempDir dir("wide_deep");
  TrainCommandOptions options = WideDeep(dir);
  options.cluster = "local:ps=2,worker=2";
  options.mode = "sync";
  options.epochs = 1;
  options.checkpoint_dir = dir.File("model");
  options.logdir = dir.File("logs");
  const nlohmann::json j = RunJson(options);
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["global_step"], 16);
  EXPECT_FALSE(std::filesystem::is_empty(dir.File("logs") + "/worker_0"));

  ExportRequest request;
  request.base_path = dir.File("servables");
  auto version_dir = ExportModelDir(dir.File("model"), request);
  ASSERT_TRUE(version_dir.ok()) << version_dir.status();
  CsvOptions csv;
  csv.label_column = "clicked";
  auto test = LoadCsv(dir.File("test.csv"), csv);
  ASSERT_TRUE(test.ok()) << test.status();
  const std::vector<double> scores = ServedProbabilities(*version_dir, *test);
  ASSERT_EQ(scores.size(), 2000u);
  std::vector<int> labels(test->labels.data<int32_t>(), test->labels.data<int32_t>() + 2000);
  EXPECT_NEAR(AreaUnderCurve(scores, labels), j["auc"].get<double>(), 1e-6);

  const nlohmann::json resumed = RunJson(options);
  ASSERT_TRUE(resumed.is_object()) << resumed;
  EXPECT_EQ(resumed["global_step"], 32);
}

TEST(WideDeepCommandTest, BadFlagsAreNamed) {
  ScopedTempDir dir("wide_deep");
  struct Case {
    std::function<void(TrainCommandOptions*)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](TrainCommandOptions* o) { o->test_path.clear(); }, "needs --train and --test"},
      {[](TrainCommandOptions* o) { o->hidden = "0"; }, "--hidden"},
      {[](TrainCommandOptions* o) {
         o->cluster = "local:ps=1,worker=2";
         o->mode = "ssp:2";
       },
       "use async or sync"},
      {[](TrainCommandOptions* o) { o->label = "price"; }, "label '0."},
      // A feature the columns read taken as the label.
      {[](TrainCommandOptions* o) { o->label = "hour"; }, "reads feature 'hour'"},
  };
  for (const Case& c : cases) {
    TrainCommandOptions options = WideDeep(dir);
    c.change(&options);
    std::ostringstream out, err;
    EXPECT_NE(TrainCommand(options, out, err, /*interactive=*/false), kExitOk) << c.message;
    EXPECT_THAT(err.str(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
