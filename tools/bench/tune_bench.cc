// The speed-up of one network per device: `actorflow tune` (tools/tune_command.h)
// runs the same grid of --configs configurations on local:worker=1 and on
// local:worker=W (W = --workers, default 2), each configuration a DNNClassifier
// trained on Iris (--steps steps of --batch rows, hidden layers --hidden) with its
// session on one worker task.
// OpenBLAS uses one thread, so a configuration keeps one core busy. The two
// cluster sizes alternate round by round; times are min / median / max, and the
// speed-up is the ratio of the medians (target >= 1.8x for 2 workers on 2 cores).
// Each run starts once the machine's foreign load stayed below 0.2 cores for 2 s
// (waiting at most 60 s), and is retaken (up to 4 times) while other processes took
// more than 0.2 cores during it; the kept run's foreign load is printed.
//
// Usage: tune_bench [--quick] [--json] [--rounds N] [--workers W] [--steps N] [--configs N]
//                   [--hidden 10,10] [--batch 32]
// Build with -c opt: `bazel build -c opt //tools/bench:tune_bench`.
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/bench/bench_util.h"
#include "tools/tune_command.h"
#include "tools/cli/blas_core.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "tune_bench";

}  // namespace

int Main(int argc, char** argv) {
  bool quick = false, json = false;
  int rounds = 3, workers = 2, configs = 4;
  int64_t steps = 1000, batch = 32;
  std::string hidden = "10,10";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--json")) json = true;
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--workers") && i + 1 < argc) workers = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoll(argv[++i]);
    if (!std::strcmp(argv[i], "--configs") && i + 1 < argc) configs = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--hidden") && i + 1 < argc) hidden = argv[++i];
    if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) batch = std::atoll(argv[++i]);
  }
  if (quick) {
    rounds = 1;
    steps = 300;
  }
  openblas_set_num_threads(1);
  // `configs` seeds of the same model: equal work per configuration.
  std::string grid = "seed=";
  for (int i = 0; i < configs; ++i) grid += (i ? "|" : "") + std::to_string(i + 1);
  grid += ";lr=0.01";

  std::vector<double> one, many;
  double foreign_one = 0, foreign_many = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int w : {1, workers}) {
      cli::TuneCommandOptions options;
      options.cluster = "local:worker=" + std::to_string(w);
      options.grid = grid;
      options.train.steps = steps;
      options.train.batch = batch;
      options.train.hidden = hidden;
      // Other processes' load would blur a 2-core speed-up: start when it is quiet,
      // and retake a run that other load disturbed (the least disturbed one counts).
      const double waited = WaitQuiet(0.2, 2.0, quick ? 5.0 : 60.0);
      if (waited > 0.5) std::printf("(waited %.1f s for other load to settle)\n", waited);
      cli::TuneReport report;
      Measured m = MeasureRetaking(
          [&] {
            report = ValueOrDie(cli::RunTune(options, nullptr), kProgram, "tune");
            return report.seconds;
          },
          0.2, quick ? 1 : 4);
      const double foreign = m.foreign;
      report.seconds = m.value;
      for (const TrialResult& r : report.results) {
        if (!r.status.ok()) Die(kProgram, "a configuration", r.status);
      }
      (w == 1 ? one : many).push_back(report.seconds);
      (w == 1 ? foreign_one : foreign_many) += foreign / rounds;
      std::printf("round %d: %d worker(s): %.2f s (foreign load %.2f cores)\n", round + 1, w,
                  report.seconds, foreign);
      std::fflush(stdout);
    }
  }
  const Stats s1 = Summarize(one), sw = Summarize(many);
  const double speedup = s1.median / sw.median;
  std::printf("tune %d configurations x %lld steps (Iris DNN %s, batch %lld), seconds "
              "min / median / max:\n",
              configs, static_cast<long long>(steps), hidden.c_str(), static_cast<long long>(batch));
  std::printf("  1 worker:   %s\n", Triple(s1, "%.2f").c_str());
  std::printf("  %d workers:  %s\n", workers, Triple(sw, "%.2f").c_str());
  std::printf("  speed-up:   %.2fx (target >= 1.8x for 2 workers on 2 cores)\n", speedup);
  if (json) {
    nlohmann::json j;
    j["one_worker_s"] = StatsJson(s1);
    j["workers"] = workers;
    j["many_workers_s"] = StatsJson(sw);
    j["speedup"] = speedup;
    j["foreign_load_one"] = foreign_one;
    j["foreign_load_many"] = foreign_many;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace bench
}  // namespace actorflow

int main(int argc, char** argv) {
  // Before any thread: OpenBLAS's kernels for this CPU (tools/cli/blas_core.h).
  actorflow::cli::RestartWithBetterBlasCore(argv);
  return actorflow::bench::Main(argc, argv);
}
