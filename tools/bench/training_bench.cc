// Training throughput through a Session, to set beside the PyTorch peer script
// torch_mlp_bench.py (an external requirement, not part of this repository: by
// default in ../shared/peers beside it; tools/bench/run_training_vs_torch.sh runs
// both, interleaved, and prints the ratios):
//   * MLP 784-256-256-10 (ReLU), sparse softmax cross-entropy, SGD lr 0.1, synthetic
//     float32 data (seed 0) fed through placeholders every step: samples/s at batch
//     64 and 256;
//   * Iris 4-10-10-3 at batch 32 (examples/data/iris_training.csv, standardized, or
//     synthetic 120x4 when the file is missing: the output says which): steps/s, the
//     per-step overhead floor.
// Each in two BLAS configurations: t1 = openblas_set_num_threads(1) (one core) and
// t2 = two OpenBLAS threads (the peer's "1/2": one torch thread, OpenBLAS 2), and
// through DirectSession and/or the in-process actor session. Every repetition runs
// every configuration once (interleaved), so drift hits all alike; the two sessions
// of one model alternate in 8 bursts within each sample. Each sample
// records the foreign CPU load (see bench_util.h) and is retaken when it exceeded
// --threshold cores.
//
// Usage: training_bench [--session direct|actor|both] [--reps N] [--steps N]
//          [--iris-steps N] [--threads 1,2] [--models mlp,iris] [--iris-csv PATH]
//          [--tries N] [--threshold CORES] [--quiet-wait S] [--inter-op N] [--json]
//          [--profile] [--quick]
//   --inter-op N  SessionOptions.inter_op_parallelism_threads (0, the default, lets
//              the runtime pick; for the actor session: its scheduler threads).
//   --spin-us N  SessionOptions.scheduler_spin_us (default: the session's default).
//   --tries, --threshold  a sample is retaken (at most `tries` attempts, default 2)
//              while the foreign load exceeded `threshold` cores (default 0.25);
//   --quiet-wait  before each repetition, wait at most this long (default 5 s) for
//              the machine to be quiet. The same flags as the PyTorch peer's.
//   --profile  afterwards, run traced steps (kFullTrace) per configuration and print
//              node time per op type against the step's wall time.
// Build with -c opt: `bazel build -c opt //tools/bench:training_bench`.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/cluster/session_factory.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/step_profile.h"
#include "tools/bench/training_models.h"
#include "tools/cli/blas_core.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "training_bench";

struct Flags {
  std::vector<std::string> sessions = {"direct", "actor"};
  std::vector<int> threads = {1, 2};
  std::vector<std::string> models = {"mlp784 b64", "mlp784 b256", "iris b32"};
  int reps = 5;
  int steps = 200;
  int iris_steps = 2000;
  int warmup = 30;
  double max_sample_s = 1.5;
  double threshold = 0.25;
  int tries = 2;
  double quiet_wait_s = 5.0;
  std::string iris_csv;
  int inter_op_threads = 0;  // SessionOptions.inter_op_parallelism_threads
  int64_t spin_us = -1;      // SessionOptions.scheduler_spin_us; -1: its default
  bool json = false;
  bool profile = false;
};

// One model trained through one session; sampled under every thread configuration.
struct Job {
  std::string session_kind;
  std::string model_name;  // "mlp784" or "iris"
  TrainingModel model;
  std::unique_ptr<Session> session;
  int steps = 0;            // per sample
  int units_per_step = 1;   // batch for samples/s, 1 for steps/s
  std::string unit;
  size_t next_batch = 0;
  double first_loss = NAN, last_loss = NAN;

  void Step(std::vector<Tensor>* out) {
    const FeedList& feeds = model.batches[next_batch++ % model.batches.size()];
    Status s = session->Run(feeds, {model.loss}, {model.train}, out);
    if (!s.ok()) Die(kProgram, session_kind + " " + model_name + " step", s);
  }

  // Steps per second over `n` steps, or over the steps done when cap_s ran out first;
  // `done`/`seconds`, when given, receive the steps taken and the time they took.
  double Timed(int n, double cap_s, int* done = nullptr, double* seconds = nullptr) {
    std::vector<Tensor> out;
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      Step(&out);
      if ((i & 15) == 15 && SecondsSince(t0) > cap_s) {
        n = i + 1;
        break;
      }
    }
    const double elapsed = SecondsSince(t0);
    const double rate = n / elapsed;
    if (done != nullptr) *done = n;
    if (seconds != nullptr) *seconds = elapsed;
    last_loss = *out[0].data<float>();
    if (std::isnan(first_loss)) first_loss = last_loss;
    return rate;
  }
};

struct Series {
  std::string name;  // "<session> <model> b<batch> t<threads>"
  Job* job = nullptr;
  int threads = 1;
  std::vector<double> values;  // units per second
  std::vector<double> step_ms;
  std::vector<double> foreign;
  int retakes = 0;
};

// Bursts per sample: a sample alternates between the sessions of one model this
// many times (see Main).
constexpr int kBursts = 8;

std::vector<int> ParseIntList(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::atoi(s.substr(pos, comma - pos).c_str()));
    pos = comma + 1;
  }
  return out;
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: training_bench [--session direct|actor|both] [--reps N] [--steps N]\n"
               "         [--iris-steps N] [--threads 1,2] [--models mlp,iris]\n"
               "         [--iris-csv PATH] [--tries N] [--threshold CORES]\n"
               "         [--quiet-wait S] [--inter-op N] [--spin-us N] [--json] [--profile] [--quick]\n");
  std::exit(2);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--session") {
      const std::string v = value();
      if (v == "both") {
        f.sessions = {"direct", "actor"};
      } else if (v == "direct" || v == "actor") {
        f.sessions = {v};
      } else {
        Usage();
      }
    } else if (a == "--reps") {
      f.reps = std::atoi(value().c_str());
    } else if (a == "--steps") {
      f.steps = std::atoi(value().c_str());
    } else if (a == "--iris-steps") {
      f.iris_steps = std::atoi(value().c_str());
    } else if (a == "--threads") {
      f.threads = ParseIntList(value());
    } else if (a == "--models") {
      const std::string v = value();
      f.models.clear();
      if (v.find("mlp") != std::string::npos) f.models = {"mlp784 b64", "mlp784 b256"};
      if (v.find("iris") != std::string::npos) f.models.push_back("iris b32");
      if (f.models.empty()) Usage();
    } else if (a == "--iris-csv") {
      f.iris_csv = value();
    } else if (a == "--spin-us") {
      f.spin_us = std::atoll(value().c_str());
    } else if (a == "--inter-op") {
      f.inter_op_threads = std::atoi(value().c_str());
    } else if (a == "--tries") {
      f.tries = std::atoi(value().c_str());
    } else if (a == "--threshold") {
      f.threshold = std::atof(value().c_str());
    } else if (a == "--quiet-wait") {
      f.quiet_wait_s = std::atof(value().c_str());
    } else if (a == "--json") {
      f.json = true;
    } else if (a == "--profile") {
      f.profile = true;
    } else if (a == "--quick") {
      f.reps = 2;
      f.steps = 40;
      f.iris_steps = 300;
      f.warmup = 5;
      f.quiet_wait_s = 0;
    } else {
      Usage();
    }
  }
  if (f.reps < 1 || f.steps < 1 || f.iris_steps < 1 || f.tries < 1) Usage();
  return f;
}

// The Iris training split, or a synthetic stand-in of the same shape.
LabelledData IrisData(const std::string& flag_path) {
  std::vector<std::string> candidates;
  if (!flag_path.empty()) {
    candidates.push_back(flag_path);
  } else {
    candidates.push_back("examples/data/iris_training.csv");
    if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
      candidates.push_back(std::string(ws) + "/examples/data/iris_training.csv");
    }
  }
  for (const std::string& path : candidates) {
    StatusOr<LabelledData> d = ReadLabelledCsv(path);
    if (d.ok()) {
      Standardize(&*d);
      return std::move(d).value();
    }
    if (!flag_path.empty()) Die(kProgram, "reading --iris-csv", d.status());
  }
  LabelledData d = SyntheticData(120, 4, 3, 0);
  d.source += " (no examples/data/iris_training.csv found)";
  return d;
}

std::unique_ptr<Session> OpenSession(const std::string& kind, const Graph* graph,
                                     int inter_op_threads, int64_t spin_us) {
  SessionOptions options;
  if (spin_us >= 0) options.scheduler_spin_us = spin_us;
  options.target = kind == "direct" ? "direct" : "local";
  options.inter_op_parallelism_threads = inter_op_threads;
  return ValueOrDie(NewSession(graph, options), kProgram, "opening a " + kind + " session");
}

void PrintTable(const std::vector<Series>& series, const Flags& flags,
                const std::string& iris_source, int total_retakes) {
#if !defined(__OPTIMIZE__)
  std::printf("note: built without optimization; use -c opt for real figures\n");
#endif
  std::printf("training_bench: reps=%d steps=%d (iris %d) warmup=%d; iris data: %s\n",
              flags.reps, flags.steps, flags.iris_steps, flags.warmup, iris_source.c_str());
  std::printf("%-28s %-10s %10s %10s %10s  %12s  %s  %s\n", "config (session model batch "
              "blas-threads)", "unit", "min", "median", "max", "ms/step(med)", "foreign(max)",
              "loss first->last");
  for (const Series& s : series) {
    const Stats st = Summarize(s.values);
    double fmax = 0;
    for (double f : s.foreign) fmax = std::max(fmax, f);
    std::printf("%-28s %-10s %10.0f %10.0f %10.0f  %12.3f  %12.2f  %.3f->%.3f\n", s.name.c_str(),
                s.job->unit.c_str(), st.min, st.median, st.max, Summarize(s.step_ms).median,
                fmax, s.job->first_loss, s.job->last_loss);
  }
  std::printf("samples retaken because foreign load > %.2f cores: %d\n", flags.threshold,
              total_retakes);
  if (flags.sessions.size() == 2) {
    std::printf("actor / direct, ratio of medians:\n");
    for (const Series& a : series) {
      if (a.job->session_kind != "actor") continue;
      for (const Series& d : series) {
        if (d.job->session_kind == "direct" && d.job->model_name == a.job->model_name &&
            d.job->model.batch_size == a.job->model.batch_size && d.threads == a.threads) {
          std::printf("  %-22s %.3f\n", a.name.substr(6).c_str(),
                      Summarize(a.values).median / Summarize(d.values).median);
        }
      }
    }
  }
}

void PrintJson(const std::vector<Series>& series, const Flags& flags,
               const std::string& iris_source) {
  nlohmann::json j;
#if defined(__OPTIMIZE__)
  j["optimized_build"] = true;
#else
  j["optimized_build"] = false;
#endif
  j["reps"] = flags.reps;
  j["iris_data"] = iris_source;
  for (const Series& s : series) {
    double fmax = 0;
    for (double f : s.foreign) fmax = std::max(fmax, f);
    nlohmann::json r = StatsJson(Summarize(s.values));
    r["unit"] = s.job->unit;
    r["samples"] = s.values;
    r["step_ms_median"] = Summarize(s.step_ms).median;
    r["foreign_max"] = fmax;
    r["retakes"] = s.retakes;
    // For an actor series: its samples divided by the direct session's sample of the
    // same repetition (taken in the same alternating bursts).
    for (const Series& d : series) {
      if (s.job->session_kind == "actor" && d.job->session_kind == "direct" &&
          d.job->model_name == s.job->model_name &&
          d.job->model.batch_size == s.job->model.batch_size && d.threads == s.threads) {
        std::vector<double> ratios;
        for (size_t k = 0; k < s.values.size() && k < d.values.size(); ++k) {
          ratios.push_back(s.values[k] / d.values[k]);
        }
        r["ratio_to_direct_per_rep"] = ratios;
      }
    }
    j["results"][s.name] = r;
  }
  std::printf("%s\n", j.dump().c_str());
}

void Profile(const std::vector<Series>& series, int steps_mlp, int steps_iris) {
  std::printf("\nprofile: traced steps (kFullTrace; tracing itself adds time per node); "
              "node time per op type per step, share of the traced wall time\n");
  for (const Series& s : series) {
    openblas_set_num_threads(s.threads);
    Job& job = *s.job;
    const int n = job.model_name == "iris" ? steps_iris : steps_mlp;
    StepProfile profile;
    RunOptions options;
    options.trace_level = RunOptions::TraceLevel::kFullTrace;
    std::vector<Tensor> out;
    for (int i = 0; i < n; ++i) {
      const FeedList& feeds = job.model.batches[job.next_batch++ % job.model.batches.size()];
      RunMetadata meta;
      const Clock::time_point t0 = Clock::now();
      Status st = job.session->Run(options, feeds, {job.model.loss}, {job.model.train}, &out,
                                   &meta);
      const double us = 1e6 * SecondsSince(t0);
      if (!st.ok()) Die(kProgram, "traced step", st);
      profile.Add(meta, us);
    }
    const double untraced_ms = 1e3 / job.Timed(n, 1.0);
    std::printf("  %s: %lld nodes/step; wall %.1f us/step traced (%.1f untraced); "
                "in nodes %.1f us, first start to last end %.1f us\n%s",
                s.name.c_str(), static_cast<long long>(profile.nodes_per_step()),
                profile.wall_us_per_step(), 1e3 * untraced_ms, profile.node_us_per_step(),
                profile.span_us_per_step(), profile.Table(8).c_str());
  }
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  const LabelledData mlp_data = SyntheticData(16 * 256, 784, 10, 0);
  const LabelledData iris_data = IrisData(flags.iris_csv);
  const std::vector<int64_t> mlp_sizes = {784, 256, 256, 10};
  const std::vector<int64_t> iris_sizes = {4, 10, 10, 3};

  std::vector<std::unique_ptr<Job>> jobs;
  for (const std::string& model_flag : flags.models) {
    const char* model = model_flag.c_str();
    for (const std::string& kind : flags.sessions) {
      auto job = std::make_unique<Job>();
      job->session_kind = kind;
      const bool iris = std::strncmp(model, "iris", 4) == 0;
      job->model_name = iris ? "iris" : "mlp784";
      const int batch = iris ? 32 : std::atoi(model + 8);
      job->model = ValueOrDie(BuildMlp(iris ? iris_sizes : mlp_sizes, batch,
                                       iris ? iris_data : mlp_data, 0.1, 0),
                              kProgram, std::string("building ") + model);
      job->session = OpenSession(kind, job->model.graph.get(), flags.inter_op_threads, flags.spin_us);
      Status s = job->session->Run({}, {}, {job->model.init}, nullptr);
      if (!s.ok()) Die(kProgram, "initializing variables", s);
      job->steps = iris ? flags.iris_steps : flags.steps;
      job->units_per_step = iris ? 1 : batch;
      job->unit = iris ? "steps/s" : "samples/s";
      jobs.push_back(std::move(job));
    }
  }
  std::vector<Series> series;
  for (int t : flags.threads) {
    for (auto& job : jobs) {
      Series s;
      s.job = job.get();
      s.threads = t;
      s.name = job->session_kind + " " + job->model_name + " b" +
               std::to_string(job->model.batch_size) + " t" + std::to_string(t);
      series.push_back(std::move(s));
    }
  }
  for (Series& s : series) {  // warm-up: thread pools, plans, page faults
    openblas_set_num_threads(s.threads);
    s.job->Timed(s.job->units_per_step > 1 ? flags.warmup : 10 * flags.warmup,
                 flags.max_sample_s);
  }
  // Series that differ only by session (same model, batch and BLAS threads) are
  // sampled together, in bursts that alternate between the sessions: this machine's
  // speed drifts within a sample, and a ratio of two sessions is fair only when both
  // saw the same drift.
  std::vector<std::vector<Series*>> groups;
  for (Series& s : series) {
    const bool joins = !groups.empty() && groups.back().front()->threads == s.threads &&
                       groups.back().front()->job->model_name == s.job->model_name &&
                       groups.back().front()->job->model.batch_size == s.job->model.batch_size;
    if (joins) {
      groups.back().push_back(&s);
    } else {
      groups.push_back({&s});
    }
  }
  int total_retakes = 0;
  for (int r = 0; r < flags.reps; ++r) {
    if (flags.quiet_wait_s > 0) WaitQuiet(0.15, 1.0, flags.quiet_wait_s);
    for (const std::vector<Series*>& group : groups) {
      openblas_set_num_threads(group.front()->threads);
      std::vector<std::vector<double>> attempts;  // per attempt: steps/s per series
      Measured m = MeasureRetaking(
          [&] {
            std::vector<int> steps(group.size(), 0);
            std::vector<double> seconds(group.size(), 0.0);
            for (int burst = 0; burst < kBursts; ++burst) {
              for (size_t i = 0; i < group.size(); ++i) {
                Job& job = *group[i]->job;
                int done = 0;
                double took = 0;
                job.Timed(std::max(1, job.steps / kBursts), flags.max_sample_s / kBursts, &done,
                          &took);
                steps[i] += done;
                seconds[i] += took;
              }
            }
            std::vector<double> rates(group.size());
            for (size_t i = 0; i < group.size(); ++i) rates[i] = steps[i] / seconds[i];
            attempts.push_back(std::move(rates));
            return static_cast<double>(attempts.size() - 1);  // the attempt's index
          },
          flags.threshold, flags.tries);
      const std::vector<double>& kept = attempts[static_cast<size_t>(m.value)];
      for (size_t i = 0; i < group.size(); ++i) {
        Series& s = *group[i];
        s.values.push_back(kept[i] * s.job->units_per_step);
        s.step_ms.push_back(1e3 / kept[i]);
        s.foreign.push_back(m.foreign);
        s.retakes += m.attempts - 1;
      }
      total_retakes += m.attempts - 1;
    }
    std::fprintf(stderr, "training_bench: rep %d of %d done\n", r + 1, flags.reps);
  }
  if (flags.json) {
    PrintJson(series, flags, iris_data.source);
  } else {
    PrintTable(series, flags, iris_data.source, total_retakes);
  }
  if (flags.profile) Profile(series, 50, 1000);
  for (auto& job : jobs) job->session->Close();
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
