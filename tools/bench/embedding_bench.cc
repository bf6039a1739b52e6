// Sparse embedding training on a local cluster: a table of R x 64 float32 rows
// partitioned over 4 ps tasks ("div"), trained from one worker with Adagrad on
// batches of 512 Zipf-distributed ids. For R = 1 000 000 and 10 000 000 (2.5 GB) it
// prints the step time (min/median/max over the timed steps) and the bytes a step
// moves between devices (RunMetadata::transfers) against the bytes a step of the same
// model reading the table whole moves (measured on the first table, scaled by rows
// for the others), and the ratio of the two tables' step times.
//
//   bazel run -c opt //tools/bench:embedding_bench -- [--steps 100] [--rows 1000000,10000000]
//                                                     [--json FILE]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/sparse_ops.h"
#include "nlohmann/json.hpp"
#include "tools/bench/bench_util.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/partitioned_variable.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "embedding_bench";
constexpr int64_t kDim = 64;
constexpr int64_t kBatch = 512;
constexpr int kPsTasks = 4;
constexpr char kWorker[] = "/job:worker/task:0";

// Ids with P(id = k) ~ 1/(k+1) over [0, rows): a Zipf exponent of 1, as click logs.
std::vector<int32_t> ZipfIds(int64_t rows, std::mt19937_64& rng) {
  std::vector<int32_t> ids(kBatch);
  std::uniform_real_distribution<double> u(0, 1);
  for (int32_t& id : ids) {
    id = static_cast<int32_t>(std::min<double>(rows - 1, std::floor(std::pow(rows + 1.0, u(rng)) - 1)));
  }
  return ids;
}

struct Result {
  int64_t rows = 0;
  Stats step_ms;
  double bytes_per_step = 0;
  double dense_bytes_per_step = 0;
  double rows_touched_per_step = 0;
};

// `dense`: the same model reading the table whole (Gather on the worker of the
// parts' concatenation), so that each step pulls the table and pushes a dense
// gradient of every part: the traffic the sparse path avoids, measured.
Result Run(int64_t rows, int steps, bool dense) {
  Scope root = Scope::NewRootScope();
  const Scope worker = root.WithDevice(kWorker);
  // Each part starts as zeros made beside it, so that initialization moves nothing.
  auto table = ValueOrDie(
      CreatePartitionedVariable(root, "emb", Shape{rows, kDim}, Fill(worker, Shape{rows, kDim}, 0.0f),
                                kPsTasks, [](int k) { return "/job:ps/task:" + std::to_string(k); }),
      kProgram, "table");
  const Output ids = Placeholder(worker.WithOpName("ids"), DType::kInt32, Shape{kBatch});
  const Output y = Placeholder(worker.WithOpName("y"), DType::kFloat32, Shape{kBatch});
  const Output rows_read = dense ? Gather(worker, table.value, ids)
                                 : EmbeddingLookup(worker, table.parts, ids, "div");
  const Output pred = Sum(worker, rows_read, 1);
  const Output loss = Mean(worker.WithOpName("loss"), Square(worker, Sub(worker, pred, y)));
  AdagradOptimizer adagrad(0.1);
  ValueOrDie(adagrad.Minimize(worker.WithOpName("train"), loss), kProgram, "minimize");
  GlobalVariablesInitializer(worker.WithOpName("init"));
  if (!root.ok()) Die(kProgram, "graph", root.status());

  auto cluster = ValueOrDie(LocalCluster::Start({{"ps", kPsTasks}, {"worker", 1}}), kProgram,
                            "cluster");
  SessionOptions options;
  options.target = ValueOrDie(cluster->Target("worker", 0), kProgram, "target");
  auto session = ValueOrDie(NewSession(root.graph(), options), kProgram, "session");
  const Status init = session->Run({}, {}, {"init"}, nullptr);
  if (!init.ok()) Die(kProgram, "init", init);

  std::mt19937_64 rng(7);
  Result result;
  result.rows = rows;
  std::vector<double> step_ms;
  double bytes = 0, touched = 0;
  const int warmup = dense ? 1 : 3;
  for (int step = 0; step < warmup + steps; ++step) {
    const std::vector<int32_t> batch = ZipfIds(rows, rng);
    std::vector<float> labels(kBatch);
    for (int64_t i = 0; i < kBatch; ++i) labels[i] = static_cast<float>(batch[i] % 5);
    const FeedList feeds = {{"ids", Tensor::FromVector(batch)},
                            {"y", Tensor::FromVector(labels)}};
    RunMetadata meta;
    const auto start = Clock::now();
    const Status s = session->Run(RunOptions(), feeds, {}, {"train"}, nullptr, &meta);
    const double ms = 1000 * SecondsSince(start);
    if (!s.ok()) Die(kProgram, "step", s);
    if (step < warmup) continue;
    step_ms.push_back(ms);
    for (const CrossDeviceTransfer& t : meta.transfers) bytes += static_cast<double>(t.bytes);
    std::vector<int32_t> distinct = batch;
    std::sort(distinct.begin(), distinct.end());
    touched += static_cast<double>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
  }
  result.step_ms = Summarize(step_ms);
  result.bytes_per_step = bytes / steps;
  result.rows_touched_per_step = touched / steps;
  return result;
}

std::vector<int64_t> ParseRows(const std::string& text) {
  std::vector<int64_t> rows;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) rows.push_back(std::stoll(item));
  return rows;
}

int Main(int argc, char** argv) {
  int steps = 100;
  std::vector<int64_t> table_rows = {1000000, 10000000};
  std::string json_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--steps") steps = std::stoi(argv[i + 1]);
    else if (flag == "--rows") table_rows = ParseRows(argv[i + 1]);
    else if (flag == "--json") json_path = argv[i + 1];
    else Die(kProgram, "flags", InvalidArgument("unknown flag " + flag));
  }
  nlohmann::json rows_json = nlohmann::json::array();
  std::vector<Result> results;
  double dense_bytes_per_row = 0;
  for (int64_t rows : table_rows) {
    Result r = Run(rows, steps, /*dense=*/false);
    // The dense traffic, measured on the smallest table only (it moves the table
    // twice a step); larger tables scale it by their rows.
    if (rows == table_rows.front()) {
      const Result dense = Run(rows, 3, /*dense=*/true);
      dense_bytes_per_row = dense.bytes_per_step / static_cast<double>(rows);
      std::printf("dense reads of %lld rows: step ms %s; %.0f bytes/step moved (measured)\n",
                  static_cast<long long>(rows), Triple(dense.step_ms, "%.1f").c_str(),
                  dense.bytes_per_step);
    }
    r.dense_bytes_per_step = dense_bytes_per_row * static_cast<double>(rows);
    results.push_back(r);
    std::printf("table %lld x %lld over %d ps, batch %lld: step ms %s; %.0f bytes/step moved, "
                "%.0f dense (%.0fx fewer); %.1f rows touched/step\n",
                static_cast<long long>(rows), static_cast<long long>(kDim), kPsTasks,
                static_cast<long long>(kBatch), Triple(r.step_ms, "%.2f").c_str(),
                r.bytes_per_step, r.dense_bytes_per_step,
                r.dense_bytes_per_step / std::max(1.0, r.bytes_per_step), r.rows_touched_per_step);
    rows_json.push_back({{"rows", rows},
                         {"step_ms", StatsJson(r.step_ms)},
                         {"bytes_per_step", r.bytes_per_step},
                         {"dense_bytes_per_step", r.dense_bytes_per_step},
                         {"rows_touched_per_step", r.rows_touched_per_step}});
  }
  if (results.size() >= 2) {
    std::printf("median step time, %lld rows / %lld rows: %.2f\n",
                static_cast<long long>(results.back().rows),
                static_cast<long long>(results.front().rows),
                results.back().step_ms.median / results.front().step_ms.median);
  }
  if (!json_path.empty()) std::ofstream(json_path) << rows_json.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace actorflow

int main(int argc, char** argv) { return actorflow::bench::Main(argc, argv); }
