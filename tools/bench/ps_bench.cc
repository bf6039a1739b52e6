// Data-parallel training through the parameter servers, in the setup of the PyTorch
// peer script dist_bench.py (an external requirement, not part of this repository:
// by default in ../shared/peers beside it): 1 ps and 2 workers, each its own process on
// 127.0.0.1, the MLP 784-256-256-10 (a DNN with hidden [256, 256]) at batch 64 per
// worker, synthetic data (seed = worker index), SGD lr 0.1 on the ps, one OpenBLAS
// thread per process. The ps is an `actorflow server` process (ProcessCluster); the
// workers are this binary run with --role worker, each a WorkerModel
// (training/distributed/worker_model.h) behind a ParameterClient (ConnectParameterServers).
//
//   local  in this process, no ps: the worker's compute (gradients at the current
//          weights) plus the SGD update applied in place; steps/s. dist_bench's
//          "local steps/s, same compute without RPC" and its "single".
//   sync   2 workers, every update averages both gradients: ms per global step
//          (vs DDP's step ms) and global samples/s = 128 / step.
//   async  2 workers, each push applied on arrival: updates/s at the ps (vs the
//          torch.rpc parameter server's), over --window-s windows.
//   straggler (only with --modes ...,straggler) sync with 3 workers and 2 gradients
//          per update, worker 2 waiting 10x its step time after each step: updates/s
//          with and without it (DataParallelJob threads, LocalCluster ps).
// Each figure is min / median / max over --reps repetitions; the ratios to `local`
// are of medians. Per-step breakdown (pull / compute / push ms, medians) from worker 0.
//
// Usage: ps_bench [--reps N] [--window-s S] [--sync-steps N] [--session actor|direct]
//                 [--modes sync,async,straggler] [--json] [--actorflow PATH]
// Build with -c opt: `bazel run -c opt //tools/bench:ps_bench`;
// tools/bench/run_ps_vs_torch.sh runs it and dist_bench.py interleaved.
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/cluster/local_cluster.h"
#include "actors/ps/parameter_client_impl.h"
#include "actors/cluster/session_factory.h"
#include "placement/cluster_spec.h"
#include "tests/child_process.h"
#include "tests/process_cluster.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/training_models.h"
#include "training/distributed/data_parallel.h"
#include "training/data/data_shard.h"
#include "training/distributed/worker_model.h"
#include "tools/cli/blas_core.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "ps_bench";
constexpr int kBatch = 64;
constexpr double kLearningRate = 0.1;

struct Flags {
  std::string role = "driver";  // driver | worker
  int reps = 5;
  double window_s = 2.0;
  int sync_steps = 100;  // per repetition
  std::string session = "actor";
  std::vector<std::string> modes = {"sync", "async"};
  bool json = false;
  std::string actorflow;
  // --role worker
  std::string cluster;
  int task = 0;
  std::string mode;
};

DNNModelSpec MlpSpec() {
  DNNModelSpec spec;
  for (int i = 0; i < 784; ++i) spec.feature_columns.push_back({"x" + std::to_string(i), {}});
  spec.hidden_units = {256, 256};
  spec.n_classes = 10;
  return spec;
}

SessionFactory Sessions(const std::string& kind) {
  return [kind](const Graph* graph) {
    SessionOptions options;
    options.target = kind == "direct" ? "direct" : "";
    return NewSession(graph, options);
  };
}

// 8 batches of synthetic data, cycled.
struct Batches {
  std::vector<Tensor> x, y;
  explicit Batches(uint32_t seed) {
    LabelledData data = SyntheticData(8 * kBatch, 784, 10, seed);
    for (int b = 0; b < 8; ++b) {
      std::vector<int64_t> rows;
      for (int r = 0; r < kBatch; ++r) rows.push_back(b * kBatch + r);
      x.push_back(GatherRows(data.features, rows));
      y.push_back(GatherRows(data.labels, rows));
    }
  }
};

Stats StatsFrom(const nlohmann::json& j) {
  Stats s;
  s.min = j["min"].get<double>();
  s.median = j["median"].get<double>();
  s.max = j["max"].get<double>();
  return s;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  return Summarize(std::move(v)).median;
}

// --- local ----------------------------------------------------------------------

void SgdInPlace(ParameterMap* weights, const ParameterMap& gradients) {
  for (auto& [name, w] : *weights) {
    float* p = w.data<float>();
    const float* g = gradients.at(name).data<float>();
    for (int64_t i = 0; i < w.NumElements(); ++i) p[i] -= static_cast<float>(kLearningRate) * g[i];
  }
}

std::vector<double> LocalStepsPerSecond(const Flags& flags, double* foreign) {
  auto model = ValueOrDie(WorkerModel::Create(MlpSpec(), 1, Sessions(flags.session), 0), kProgram,
                          "building the local model");
  ParameterMap weights = ValueOrDie(model->InitialValues(), kProgram, "initial values");
  Batches data(1);
  int64_t i = 0;
  auto step = [&] {
    GradientStep g = ValueOrDie(model->ComputeGradients(weights, data.x[i % 8], data.y[i % 8]),
                                kProgram, "a local step");
    SgdInPlace(&weights, g.gradients);
    ++i;
  };
  for (int k = 0; k < 20; ++k) step();  // warm-up
  std::vector<double> rates;
  *foreign = 0;
  for (int r = 0; r < flags.reps; ++r) {
    Measured m = MeasureRetaking(
        [&] {
          const auto start = Clock::now();
          int64_t n = 0;
          while (SecondsSince(start) < flags.window_s * 0.75) {
            step();
            ++n;
          }
          return n / SecondsSince(start);
        },
        0.25, 2);
    rates.push_back(m.value);
    *foreign = std::max(*foreign, m.foreign);
  }
  return rates;
}

// --- worker role ------------------------------------------------------------------

int WorkerMain(const Flags& flags) {
  const std::string what = "worker " + std::to_string(flags.task);
  ClusterSpec cluster = ValueOrDie(ClusterSpec::FromFile(flags.cluster), kProgram, "the cluster");
  ParameterServerOptions ps;
  int staleness = 0;
  Status mode = ParseUpdateMode(flags.mode, &ps.mode, &staleness);
  if (!mode.ok()) Die(kProgram, what, mode);
  ps.total_replicas = 2;
  ps.replicas_to_aggregate = 2;
  ps.optimizer = "sgd";
  ps.learning_rate = kLearningRate;
  auto client = ValueOrDie(ConnectParameterServers(cluster, "ps", ps, 30000), kProgram,
                           what + ": connecting to the ps");
  auto model = ValueOrDie(WorkerModel::Create(MlpSpec(), 1, Sessions(flags.session), 0), kProgram,
                          what + ": building the model");
  Status s = client->Register(flags.task);
  if (!s.ok()) Die(kProgram, what + ": register", s);
  if (flags.task == 0) {
    s = client->Initialize(ValueOrDie(model->InitialValues(), kProgram, "initial values"));
    if (!s.ok()) Die(kProgram, what + ": initialize", s);
  }
  Batches data(static_cast<uint32_t>(flags.task));
  std::vector<double> pull_ms, compute_ms, push_ms;
  int64_t i = 0;
  int64_t global_step = 0;
  // As the data-parallel driver steps: the push comes back with the next values
  // (PushAndPull), so only the first step pulls.
  ParameterSnapshot snap;
  bool have_snap = false;
  auto step = [&] {
    const auto t0 = Clock::now();
    if (!have_snap) snap = ValueOrDie(client->Pull(30000), kProgram, what + ": pull");
    const auto t1 = Clock::now();
    GradientStep g = ValueOrDie(model->ComputeGradients(snap.values, data.x[i % 8], data.y[i % 8]),
                                kProgram, what + ": gradients");
    const auto t2 = Clock::now();
    ParameterSnapshot next;
    PushResult pushed = ValueOrDie(client->PushAndPull(snap, g.gradients, 30000, &next), kProgram,
                                   what + ": push and pull");
    snap = std::move(next);
    have_snap = true;
    const auto t3 = Clock::now();
    global_step = pushed.global_step;
    pull_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    compute_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    push_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
    ++i;
  };
  nlohmann::json out;
  out["worker"] = flags.task;
  out["mode"] = flags.mode;
  if (ps.mode == UpdateMode::kSync) {
    // Both workers run the same number of steps, so neither waits for a partner
    // that has stopped.
    for (int k = 0; k < 30; ++k) step();
    std::vector<double> step_ms;
    for (int r = 0; r < flags.reps; ++r) {
      const int64_t gs0 = global_step;
      const auto start = Clock::now();
      for (int k = 0; k < flags.sync_steps; ++k) step();
      step_ms.push_back(1e3 * SecondsSince(start) / std::max<int64_t>(global_step - gs0, 1));
    }
    out["step_ms"] = step_ms;
  } else {
    // Both workers push for the same wall time; worker 0 times windows in the middle.
    const auto start = Clock::now();
    const double warmup = 1.0;
    const double total = warmup + flags.reps * flags.window_s + 0.5;
    std::vector<double> rates;
    while (SecondsSince(start) < warmup) step();
    for (int r = 0; r < flags.reps; ++r) {
      const int64_t gs0 = global_step;
      const auto window = Clock::now();
      while (SecondsSince(window) < flags.window_s) step();
      rates.push_back((global_step - gs0) / SecondsSince(window));
    }
    while (SecondsSince(start) < total) step();
    out["updates_per_s"] = rates;
  }
  out["steps"] = i;
  out["pull_ms"] = Median(pull_ms);
  out["compute_ms"] = Median(compute_ms);
  out["push_ms"] = Median(push_ms);
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
  return 0;
}

// --- straggler ----------------------------------------------------------------------

// Sync with one backup worker: 3 workers, 2 gradients per update, on a LocalCluster
// (the ps task a real server on 127.0.0.1 in this process, the workers threads).
// Worker 2 waits 10x its step time after every step (a timed wait) when `straggle`.
// Returns updates/s over the chief's run and the gradients dropped as stale.
std::pair<double, int64_t> StragglerRun(const Flags& flags, bool straggle) {
  auto cluster = ValueOrDie(LocalCluster::Start({{"ps", 1}}), kProgram, "a local ps");
  DataParallelOptions options;
  options.spec = MlpSpec();
  options.seed = 1;
  options.batch_size = kBatch;
  options.epochs = 2;
  options.ps.mode = UpdateMode::kSync;
  options.ps.total_replicas = 3;
  options.ps.replicas_to_aggregate = 2;
  options.ps.optimizer = "sgd";
  options.ps.learning_rate = kLearningRate;
  options.session_factory = Sessions(flags.session);
  const LabelledData data = SyntheticData(3 * 40 * kBatch, 784, 10, 7);
  const ClusterSpec spec = cluster->spec();
  const ParameterServerOptions ps = options.ps;
  DataParallelJob job(
      options, [spec, ps](int) { return ConnectParameterServers(spec, "ps", ps, 30000); },
      {data.features, data.labels}, {data.features, data.labels});
  if (straggle) job.set_delay(2, 10.0);
  DataParallelResult result = ValueOrDie(job.Run(), kProgram, "a straggler run");
  return {result.stats.updates_applied / result.workers[0].seconds,
          result.stats.gradients_dropped_stale};
}

nlohmann::json StragglerReport(const Flags& flags) {
  std::vector<double> without, with, ratio;
  int64_t dropped = 0;
  for (int r = 0; r < flags.reps; ++r) {
    const double base = StragglerRun(flags, false).first;
    const auto [rate, drops] = StragglerRun(flags, true);
    without.push_back(base);
    with.push_back(rate);
    ratio.push_back(base / rate);
    dropped += drops;
  }
  nlohmann::json r;
  r["updates_per_s_without"] = StatsJson(Summarize(without));
  r["updates_per_s_with"] = StatsJson(Summarize(with));
  r["slowdown"] = StatsJson(Summarize(ratio));
  r["dropped_stale_per_run"] = static_cast<double>(dropped) / flags.reps;
  return r;
}

// --- driver -----------------------------------------------------------------------

std::string FindActorflow(const std::string& flag) {
  if (!flag.empty()) return flag;
  std::string path = subprocess::FindWorkspaceProgram("tools/actorflow");
  if (path.empty()) Die(kProgram, "finding the actorflow binary", NotFound("pass --actorflow PATH"));
  return path;
}

std::string SelfPath() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) Die(kProgram, "finding this binary", Internal("readlink /proc/self/exe failed"));
  return std::string(exe, static_cast<size_t>(n));
}

// One mode: a fresh ps process and two worker processes; worker 0's JSON.
nlohmann::json RunMode(const Flags& flags, const std::string& mode) {
  subprocess::ProcessClusterOptions options;
  options.binary = FindActorflow(flags.actorflow);
  options.shape = {{"ps", 1}, {"worker", 2}};
  options.not_started = {{"worker", 0}, {"worker", 1}};
  const char* tmp = std::getenv("TMPDIR");
  options.dir = tmp != nullptr ? tmp : "/tmp";
  auto cluster = ValueOrDie(subprocess::ProcessCluster::Start(options), kProgram,
                            "starting the ps process");
  std::vector<std::unique_ptr<subprocess::ChildProcess>> workers;
  for (int w = 0; w < 2; ++w) {
    std::string error;
    workers.push_back(subprocess::ChildProcess::Start(
        SelfPath(),
        {"--role", "worker", "--cluster", cluster->spec_path(), "--task", std::to_string(w),
         "--mode", mode, "--reps", std::to_string(flags.reps), "--window-s",
         std::to_string(flags.window_s), "--sync-steps", std::to_string(flags.sync_steps),
         "--session", flags.session},
        &error));
    if (workers.back() == nullptr) Die(kProgram, "starting a worker", Internal(error));
  }
  std::vector<nlohmann::json> results;
  for (int w = 0; w < 2; ++w) {
    if (!workers[w]->WaitForExit(std::chrono::minutes(5)) || workers[w]->exit_code() != 0) {
      Die(kProgram, "worker " + std::to_string(w) + " (" + mode + ")",
          Internal("did not end well; stderr: " + workers[w]->err()));
    }
    const std::string& out = workers[w]->out();
    results.push_back(nlohmann::json::parse(out.substr(0, out.find('\n'))));
  }
  results[0]["peer_steps"] = results[1]["steps"];
  return results[0];
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(kProgram, "flags", InvalidArgument(a + " needs a value"));
      return argv[++i];
    };
    if (a == "--role") {
      flags.role = value();
    } else if (a == "--reps") {
      flags.reps = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--window-s") {
      flags.window_s = std::max(0.2, std::atof(value().c_str()));
    } else if (a == "--sync-steps") {
      flags.sync_steps = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--session") {
      flags.session = value();
    } else if (a == "--modes") {
      flags.modes = Split(value());
    } else if (a == "--json") {
      flags.json = true;
    } else if (a == "--actorflow") {
      flags.actorflow = value();
    } else if (a == "--cluster") {
      flags.cluster = value();
    } else if (a == "--task") {
      flags.task = std::atoi(value().c_str());
    } else if (a == "--mode") {
      flags.mode = value();
    } else {
      std::fprintf(stderr,
                   "usage: %s [--reps N] [--window-s S] [--sync-steps N] [--session actor|direct] "
                   "[--modes sync,async] [--json] [--actorflow PATH]\n",
                   kProgram);
      std::exit(2);
    }
  }
  return flags;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  // One BLAS thread per process, as the peers run (children inherit the variable).
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  openblas_set_num_threads(1);
  if (flags.role == "worker") return WorkerMain(flags);
  const double load_before = LoadAverage1();
  double local_foreign = 0;
  std::vector<double> local = LocalStepsPerSecond(flags, &local_foreign);
  const double local_med = Median(local);
  nlohmann::json report;
  report["session"] = flags.session;
  report["local_steps_per_s"] = StatsJson(Summarize(local));
  report["local_foreign_load"] = local_foreign;
  for (const std::string& mode : flags.modes) {
    if (mode == "straggler") {
      report[mode] = StragglerReport(flags);
      continue;
    }
    nlohmann::json r = RunMode(flags, mode);
    if (mode == "sync") {
      std::vector<double> ms = r["step_ms"].get<std::vector<double>>();
      const double med = Median(ms);
      r["step_ms_stats"] = StatsJson(Summarize(ms));
      r["samples_per_s"] = 2 * kBatch * 1e3 / med;
      r["ratio_to_local_samples"] = (2 * kBatch * 1e3 / med) / (kBatch * local_med);
    } else {
      std::vector<double> rates = r["updates_per_s"].get<std::vector<double>>();
      r["updates_per_s_stats"] = StatsJson(Summarize(rates));
      r["ratio_to_local_steps"] = Median(rates) / local_med;
    }
    report[mode] = r;
  }
  report["load_average"] = {load_before, LoadAverage1()};
  if (flags.json) {
    std::printf("%s\n", report.dump().c_str());
    return 0;
  }
#ifndef NDEBUG
  std::printf("note: built without optimization; use -c opt for real figures\n");
#endif
  std::printf("ps_bench: 1 ps + 2 workers, separate processes on 127.0.0.1, MLP 784-256-256-10, "
              "batch 64/worker, SGD lr 0.1, %s session; load average %.2f before, %.2f after\n",
              flags.session.c_str(), load_before, LoadAverage1());
  std::printf("  local    steps/s %s (one process, no ps; foreign load max %.2f)\n",
              Triple(Summarize(local), "%.0f").c_str(), local_foreign);
  if (report.contains("sync")) {
    const nlohmann::json& r = report["sync"];
    std::printf("  sync     step ms %s; global samples/s %.0f; ratio to local samples/s %.2f "
                "(ideal 2); worker 0 pull %.2f / compute %.2f / push %.2f ms\n",
                Triple(Summarize(r["step_ms"].get<std::vector<double>>()), "%.3f").c_str(),
                r["samples_per_s"].get<double>(), r["ratio_to_local_samples"].get<double>(),
                r["pull_ms"].get<double>(), r["compute_ms"].get<double>(),
                r["push_ms"].get<double>());
  }
  if (report.contains("async")) {
    const nlohmann::json& r = report["async"];
    std::printf("  async    updates/s %s; ratio to local steps/s %.2f (ideal 2); worker 0 pull "
                "%.2f / compute %.2f / push %.2f ms\n",
                Triple(Summarize(r["updates_per_s"].get<std::vector<double>>()), "%.0f").c_str(),
                r["ratio_to_local_steps"].get<double>(), r["pull_ms"].get<double>(),
                r["compute_ms"].get<double>(), r["push_ms"].get<double>());
  }
  if (report.contains("straggler")) {
    const nlohmann::json& r = report["straggler"];
    std::printf("  straggler sync 2 of 3 workers, worker 2 delayed 10x its step time (in-process "
                "workers, LocalCluster ps): updates/s %s without, %s with; slowdown %s; "
                "%.0f gradients dropped as stale per run\n",
                Triple(StatsFrom(r["updates_per_s_without"]), "%.0f").c_str(),
                Triple(StatsFrom(r["updates_per_s_with"]), "%.0f").c_str(),
                Triple(StatsFrom(r["slowdown"]), "%.2f").c_str(),
                r["dropped_stale_per_run"].get<double>());
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace actorflow

int main(int argc, char** argv) {
  // Before any thread: OpenBLAS's kernels for this CPU (tools/cli/blas_core.h).
  actorflow::cli::RestartWithBetterBlasCore(argv);
  return actorflow::bench::Main(argc, argv);
}
