// Collective data parallelism between two `actorflow server` processes on 127.0.0.1
// (ProcessCluster {"worker": 2}), in the setup of the PyTorch peer script
// dist_bench.py (../shared/peers): this process is the client, with one session on
// each worker's master and one thread per session, so every step is between-graph.
//
// (a) all-reduce (sum) of a resident float32 Variable [n] on each worker, n = 269 322
//     (the MLP's parameter count, 1.03 MiB) and 16 777 216 (64 MiB), as dist_bench's
//     `allreduce` (gloo's dist.all_reduce of the same sizes): ms per op (one Session::Run
//     per op and worker; both workers run it at once) and algorithm bandwidth =
//     bytes / time. The first op checks the sum.
// (b) the synchronous training step of dist_bench's `ddp`: MLP 784-256-256-10, batch 64
//     per worker (synthetic, resident in the graph, seed = worker), SGD lr 0.1,
//     AllReduceOptimizer (one 25 MiB bucket): ms per step, both workers at once. After
//     the steps the replicas' weights are compared byte for byte.
// Each figure is min / median / max over --reps repetitions of --iters ops.
//
// Usage: allreduce_bench [--quick] [--json] [--reps N] [--actorflow PATH]
// Build with -c opt: `bazel run -c opt //tools/bench:allreduce_bench`.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/cluster/session_factory.h"
#include "graph/collective_ops.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "tests/process_cluster.h"
#include "tools/bench/bench_util.h"
#include "training/distributed/allreduce_optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "allreduce_bench";

struct Flags {
  bool quick = false;
  bool json = false;
  int reps = 3;
  std::string actorflow;
};

std::string Cpu(int task) {
  return "/job:worker/replica:0/task:" + std::to_string(task) + "/device:CPU:0";
}

CollectiveGroup Group() { return CollectiveGroup{"bench", {Cpu(0), Cpu(1)}}; }

// One worker's graph and session.
struct Worker {
  Scope root = Scope::NewRootScope();
  std::unique_ptr<Session> session;
};

void RunOrDie(Worker& w, const std::vector<std::string>& fetches,
              const std::vector<std::string>& targets, std::vector<Tensor>* out,
              const std::string& what) {
  const Status s = w.session->Run(RunOptions(), {}, fetches, targets, out, nullptr);
  if (!s.ok()) Die(kProgram, what, s);
}

void Open(Worker& w, const subprocess::ProcessCluster& cluster, int task) {
  if (!w.root.ok()) Die(kProgram, "building worker " + std::to_string(task) + "'s graph", w.root.status());
  SessionOptions options;
  options.target = cluster.Target("worker", task);
  w.session = ValueOrDie(NewSession(w.root.graph(), options), kProgram, "opening a session");
}

// Runs `targets` `iters` times on both workers at once; seconds per op (the slower).
double TimeBoth(Worker* workers, const std::vector<std::string>& targets, int iters) {
  double seconds[2] = {0, 0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      const auto start = Clock::now();
      for (int i = 0; i < iters; ++i) RunOrDie(workers[t], {}, targets, nullptr, "a timed step");
      seconds[t] = SecondsSince(start);
    });
  }
  for (std::thread& th : threads) th.join();
  return std::max(seconds[0], seconds[1]) / iters;
}

// (a): ms per all-reduce of n floats.
Stats AllReduceMs(const subprocess::ProcessCluster& cluster, int64_t n, int reps, int iters) {
  Worker workers[2];
  for (int t = 0; t < 2; ++t) {
    Scope on = workers[t].root.WithDevice(Cpu(t));
    auto v = ValueOrDie(CreateVariable(on, "v" + std::to_string(n), Fill(on, Shape{n}, static_cast<float>(t + 1))),
                        kProgram, "the variable");
    // A server keeps its variables and execution counts across sessions: each size
    // has its own variable and instance.
    Output sum = CollectiveAllReduce(on.WithOpName("ar"), v, Group(), n);
    Slice(on.WithOpName("first"), sum, {0}, {1});
    GlobalVariablesInitializer(workers[t].root.WithOpName("init"));
    Open(workers[t], cluster, t);
  }
  TimeBoth(workers, {"init"}, 1);
  std::vector<Tensor> out;
  std::thread other([&] { RunOrDie(workers[1], {"first"}, {}, nullptr, "the checked op"); });
  RunOrDie(workers[0], {"first"}, {}, &out, "the checked op");
  other.join();
  if (out[0].data<float>()[0] != 3.0f) {
    Die(kProgram, "checking the sum", Internal("got " + out[0].SummarizeValue() + ", want 3"));
  }
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) ms.push_back(1e3 * TimeBoth(workers, {"ar"}, iters));
  return Summarize(ms);
}

Tensor Uniform(const Shape& shape, float bound, std::mt19937* rng) {
  Tensor t(DType::kFloat32, shape);
  std::uniform_real_distribution<float> u(-bound, bound);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = u(*rng);
  return t;
}

// Worker `task`'s MLP replica with its resident batch; "train" and the weights.
void BuildMlp(Worker& w, int task, std::vector<std::string>* weights) {
  const Scope on = w.root.WithDevice(Cpu(task));
  std::mt19937 data_rng(task);
  std::normal_distribution<float> normal;
  Tensor x(DType::kFloat32, Shape{64, 784});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = normal(data_rng);
  Tensor y(DType::kInt32, Shape{64});
  for (int64_t i = 0; i < 64; ++i) y.data<int32_t>()[i] = static_cast<int32_t>(data_rng() % 10);
  std::mt19937 rng(7);  // the same start on both; the broadcast is not timed
  Output h = Const(on, x);
  const int64_t sizes[] = {784, 256, 256, 10};
  for (int l = 0; l < 3; ++l) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(sizes[l]));
    const std::string k = std::to_string(l);
    Output kernel = ValueOrDie(CreateVariable(on, "w" + k, Uniform(Shape{sizes[l], sizes[l + 1]}, bound, &rng)), kProgram, "w");
    Output bias = ValueOrDie(CreateVariable(on, "b" + k, Uniform(Shape{sizes[l + 1]}, bound, &rng)), kProgram, "b");
    h = Add(on, MatMul(on, h, kernel), bias);
    if (l < 2) h = Relu(on, h);
    weights->push_back("w" + k);
    weights->push_back("b" + k);
  }
  Output loss = Mean(on, SparseSoftmaxCrossEntropyWithLogits(on, h, Const(on, y)).loss);
  AllReduceOptions options;
  options.group = Group();
  AllReduceOptimizer opt(std::make_unique<GradientDescentOptimizer>(0.1), options);
  ValueOrDie(opt.Minimize(on.WithOpName("train"), loss, Output()), kProgram, "the train op");
  GlobalVariablesInitializer(w.root.WithOpName("init"));
}

// (b): ms per synchronous step; `identical` says whether the replicas ended equal.
Stats SyncStepMs(const subprocess::ProcessCluster& cluster, int reps, int iters, bool* identical) {
  Worker workers[2];
  std::vector<std::string> weights;
  for (int t = 0; t < 2; ++t) {
    weights.clear();
    BuildMlp(workers[t], t, &weights);
    Open(workers[t], cluster, t);
  }
  TimeBoth(workers, {"init"}, 1);
  TimeBoth(workers, {"train"}, 3);  // plans the steps, warms the caches
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) ms.push_back(1e3 * TimeBoth(workers, {"train"}, iters));
  std::vector<Tensor> a, b;
  RunOrDie(workers[0], weights, {}, &a, "reading the weights");
  RunOrDie(workers[1], weights, {}, &b, "reading the weights");
  *identical = true;
  for (size_t i = 0; i < a.size(); ++i) {
    *identical = *identical && std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].TotalBytes()) == 0;
  }
  return Summarize(ms);
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      flags.quick = true;
    } else if (a == "--json") {
      flags.json = true;
    } else if (a == "--reps" && i + 1 < argc) {
      flags.reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--actorflow" && i + 1 < argc) {
      flags.actorflow = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--json] [--reps N] [--actorflow PATH]\n", kProgram);
      std::exit(2);
    }
  }
  if (flags.quick) flags.reps = std::min(flags.reps, 2);
  return flags;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  // One OpenBLAS thread per process, as the peer's: the servers inherit it.
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  subprocess::ProcessClusterOptions options;
  options.binary = flags.actorflow.empty() ? subprocess::FindWorkspaceProgram("tools/actorflow")
                                           : flags.actorflow;
  if (options.binary.empty()) Die(kProgram, "finding actorflow", NotFound("pass --actorflow PATH"));
  options.shape = {{"worker", 2}};
  const char* tmp = std::getenv("TMPDIR");
  options.dir = tmp != nullptr ? tmp : "/tmp";
  auto cluster = ValueOrDie(subprocess::ProcessCluster::Start(options), kProgram,
                            "starting 2 server processes");
  nlohmann::json j;
  const int64_t sizes[] = {269322, int64_t{16} << 20};
  for (int64_t n : sizes) {
    const int iters = n > (1 << 20) ? (flags.quick ? 3 : 10) : (flags.quick ? 30 : 200);
    const Stats ms = AllReduceMs(*cluster, n, flags.reps, iters);
    const double mib = 4.0 * n / (1 << 20);
    Stats gbps{4.0 * n / ms.max / 1e6, 4.0 * n / ms.median / 1e6, 4.0 * n / ms.min / 1e6, ms.count};
    const std::string name = "n=" + std::to_string(n);
    j["allreduce"][name] = {{"mib", mib}, {"ms", StatsJson(ms)}, {"algbw_gb_per_s", StatsJson(gbps)}};
    std::printf("all-reduce n=%lld (%.2f MiB): ms/op %s; algbw GB/s %s\n", static_cast<long long>(n),
                mib, Triple(ms, "%.3f").c_str(), Triple(gbps, "%.2f").c_str());
  }
  bool identical = false;
  const Stats step = SyncStepMs(*cluster, flags.reps, flags.quick ? 50 : 300, &identical);
  j["sync_step"] = {{"ms", StatsJson(step)}, {"replicas_identical", identical}};
  std::printf("sync step, MLP 784-256-256-10 b64 x 2 workers, all-reduce: ms %s; replicas identical: %s\n",
              Triple(step, "%.3f").c_str(), identical ? "yes" : "NO");
  if (flags.json) std::printf("%s\n", j.dump().c_str());
  return identical ? 0 : 1;
}

}  // namespace
}  // namespace bench
}  // namespace actorflow

int main(int argc, char** argv) { return actorflow::bench::Main(argc, argv); }
