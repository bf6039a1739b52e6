// word2vec and wide & deep between-graph on a cluster file of real `actorflow server`
// processes on 127.0.0.1 (ps tasks holding the tables, worker tasks computing), driven
// by one `actorflow train --cluster FILE` process: each trains, moves rows rather
// than tables, and a worker task with no server is named within the step deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cluster_test_kit.h"
#include "tests/process_cluster.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using subprocess::ActorflowBinary;
using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;
using subprocess::ProcessResult;
using subprocess::StartTestCluster;
using subprocess::TestTmpDir;

std::string WriteTmpFile(const std::string& name, const std::string& text) {
  const std::string path = TestTmpDir(name);
  std::ofstream(path) << text;
  return path;
}

// 300 sentences of 12 words drawn from 200, each ending "the end".
std::string Text() {
  std::mt19937 rng(5);
  std::string text;
  for (int s = 0; s < 300; ++s) {
    for (int w = 0; w < 12; ++w) {
      text += "wo" + std::string(1, 'a' + rng() % 10) + std::string(1, 'a' + rng() % 20) + " ";
    }
    text += "the end.\n";
  }
  return text;
}

// tools/ctr_data.py's columns; P(click) = sigmoid(+-1.5) by category and hour parity.
std::string ClickCsv(int rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::ostringstream csv;
  csv << "user,item,site,category,hour,price,clicked\n";
  for (int r = 0; r < rows; ++r) {
    const int category = static_cast<int>(rng() % 100), hour = static_cast<int>(rng() % 24);
    const double logit = (category % 2 == 0 && hour % 2 == 0) ? 1.5 : -1.5;
    const int clicked = std::uniform_real_distribution<double>(0, 1)(rng) < 1 / (1 + std::exp(-logit));
    csv << rng() % 10000 << "," << rng() % 100000 << "," << rng() % 1000000 << "," << category
        << "," << hour << "," << (rng() % 1000) / 1000.0 << "," << clicked << "\n";
  }
  return csv.str();
}

std::unique_ptr<ProcessCluster> StartCluster(ProcessClusterOptions options = {}) {
  options.shape = {{"ps", 2}, {"worker", 2}};
  return StartTestCluster(std::move(options));
}

// The JSON line of a train run that must succeed.
nlohmann::json Train(const std::vector<std::string>& args) {
  const ProcessResult r = subprocess::RunProcess(ActorflowBinary(), args);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r.err << r.error;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(SparseModelsProcessTest, Word2VecTrainsOnAClusterFileMovingRows) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  const nlohmann::json j =
      Train({"train", "--model", "word2vec", "--text", WriteTmpFile("text.txt", Text()),
             "--cluster", cluster->spec_path(), "--steps", "600", "--batch", "32",
             "--embedding-dim", "8", "--num-sampled", "4", "--json"});
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["steps"], 600);  // 300 a worker: its first and last 100 differ
  EXPECT_LT(j["loss"].get<double>(), j["first_loss"].get<double>()) << j;
  const double moved = j["bytes_pulled_per_step"].get<double>() + j["bytes_pushed_per_step"].get<double>();
  EXPECT_GT(moved, 0) << j;
  EXPECT_LT(4 * moved, j["dense_bytes_per_step"].get<double>()) << j;
}

TEST(SparseModelsProcessTest, WideDeepTrainsSyncOnAClusterFile) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  const nlohmann::json j =
      Train({"train", "--model", "wide-deep", "--train", WriteTmpFile("train.csv", ClickCsv(4000, 1)),
             "--test", WriteTmpFile("test.csv", ClickCsv(1000, 2)), "--label", "clicked",
             "--cluster", cluster->spec_path(), "--mode", "sync", "--epochs", "1", "--json"});
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["steps"], 8);  // 2000 rows a worker, batches of 256
  EXPECT_GT(j["auc"].get<double>(), 0.6) << j;
  const double moved = j["bytes_pulled_per_step"].get<double>() + j["bytes_pushed_per_step"].get<double>();
  EXPECT_GT(moved, 0) << j;
  EXPECT_LT(moved * 50, j["dense_bytes_per_step"].get<double>()) << j;
}

TEST(SparseModelsProcessTest, AWorkerTaskWithoutAServerIsNamedInTime) {
  ProcessClusterOptions options;
  options.not_started = {{"worker", 1}};
  auto cluster = StartCluster(options);
  ASSERT_NE(cluster, nullptr);
  const ProcessResult r = subprocess::RunProcess(
      ActorflowBinary(),
      {"train", "--model", "word2vec", "--text", WriteTmpFile("text.txt", Text()), "--cluster",
       cluster->spec_path(), "--steps", "20", "--batch", "16", "--embedding-dim", "4",
       "--num-sampled", "2", "--timeout-ms", "3000"});
  ASSERT_TRUE(r.exited) << r.error;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr(cluster->Address("worker", 1))) << r.err;
}

}  // namespace
}  // namespace actorflow
