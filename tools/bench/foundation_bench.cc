// Foundation benchmark: what the runtime costs on top of the math.
//
// (a) MatMul float32 [n,n] x [n,n]: the CPU kernel (built through KernelRegistry and
//     computed directly, output allocation included), a DirectSession step of a
//     1-node graph with both inputs fed, and bare cblas_sgemm into a preallocated
//     buffer. Samples are interleaved (kernel, bare, session, kernel, ...) so that
//     clock and cache drift hit all three alike. Ratio = bare median / op median:
//     1.0 means the op adds nothing; the target is >= 0.95 for n >= 512.
// (b) Session::Run overhead: a 10-node graph (a float32 scalar placeholder and a
//     chain of 9 scalar Adds), one feed and one fetch, timed run by run.
//
// Usage: foundation_bench [--json] [--quick]
//   --json   print one line of JSON instead of the tables
//   --quick  fewer sizes and runs (a smoke run, seconds)
// Build with -c opt for meaningful figures: `bazel run -c opt //tools/bench:foundation_bench`.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "tools/bench/bench_util.h"
#include "graph/tensor.h"
#include "kernels/direct_session.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

using bench::MakeNode;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Stats {
  double min = 0, median = 0, max = 0;  // in the unit of the samples
};

Stats Summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  Stats s;
  s.min = samples.front();
  s.max = samples.back();
  const size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  return s;
}

nlohmann::json StatsJson(const Stats& s) {
  return {{"min", s.min}, {"median", s.median}, {"max", s.max}};
}

// Exits the benchmark with a message: a failure here means the build is broken.
[[noreturn]] void Die(const std::string& what, const Status& status) {
  std::fprintf(stderr, "foundation_bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

template <typename T>
T ValueOrDie(StatusOr<T> value, const std::string& what) {
  if (!value.ok()) Die(what, value.status());
  return std::move(value).value();
}

Tensor RandomMatrix(int64_t n, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DType::kFloat32, Shape{n, n});
  float* p = t.data<float>();
  for (int64_t i = 0; i < n * n; ++i) p[i] = dist(*rng);
  return t;
}

// ---- (a) MatMul ------------------------------------------------------------------

struct MatMulResult {
  int n = 0;
  int threads = 0;
  int samples = 0;
  int reps = 0;          // calls per sample (small n), each sample is their mean
  Stats kernel_ms, bare_ms, session_ms;
  double max_abs_diff = 0;  // kernel output vs bare, a sanity check
};

MatMulResult BenchMatMul(int n, int threads, double budget_s) {
  openblas_set_num_threads(threads);
  std::mt19937 rng(42 + n);
  const Tensor a = RandomMatrix(n, &rng);
  const Tensor b = RandomMatrix(n, &rng);
  const AttrMap placeholder_attrs = {{"dtype", DType::kFloat32}, {"shape", Shape{n, n}}};
  auto graph = ValueOrDie(
      Graph::FromNodeDefs({MakeNode("a", "Placeholder", {}, placeholder_attrs),
                           MakeNode("b", "Placeholder", {}, placeholder_attrs),
                           MakeNode("m", "MatMul", {"a", "b"}, {})}),
      "building the MatMul graph");
  const Node* m = graph->FindNode("m");
  std::unique_ptr<Kernel> kernel =
      ValueOrDie(KernelRegistry::Global().CreateKernel(*m, kDeviceCpu), "MatMul kernel");
  ResourceManager resources;
  std::unique_ptr<Session> session =
      ValueOrDie(NewDirectSession(graph.get()), "opening a direct session");
  const FeedList feeds = {{"a", a}, {"b", b}};
  std::vector<float> c(static_cast<size_t>(n) * n);
  int64_t step = 0;

  Tensor kernel_out;
  auto run_kernel = [&] {
    KernelContext ctx(m, {a, b}, &resources, ++step);
    kernel->Compute(&ctx);
    if (!ctx.status().ok()) Die("MatMul kernel", ctx.status());
    kernel_out = ctx.outputs()[0];
  };
  auto run_bare = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data<float>(), n,
                b.data<float>(), n, 0.0f, c.data(), n);
  };
  auto run_session = [&] {
    std::vector<Tensor> out;
    Status s = session->Run(feeds, {"m"}, {}, &out);
    if (!s.ok()) Die("MatMul session step", s);
  };

  // Warm up (thread pools, page faults, the session's plan cache) and size the run.
  run_kernel();
  run_bare();
  run_session();
  auto start = Clock::now();
  run_bare();
  const double one_call = std::max(SecondsSince(start), 1e-7);

  MatMulResult r;
  r.n = n;
  r.threads = threads;
  r.reps = std::max(1, static_cast<int>(0.005 / one_call));  // samples of >= ~5 ms
  r.samples = std::clamp(static_cast<int>(budget_s / (3 * r.reps * one_call)), 9, 60);
  auto time_ms = [&](auto&& fn) {
    auto t0 = Clock::now();
    for (int i = 0; i < r.reps; ++i) fn();
    return 1e3 * SecondsSince(t0) / r.reps;
  };
  std::vector<double> kernel_ms, bare_ms, session_ms;
  for (int s = 0; s < r.samples; ++s) {
    kernel_ms.push_back(time_ms(run_kernel));
    bare_ms.push_back(time_ms(run_bare));
    session_ms.push_back(time_ms(run_session));
  }
  r.kernel_ms = Summarize(kernel_ms);
  r.bare_ms = Summarize(bare_ms);
  r.session_ms = Summarize(session_ms);
  const float* k = kernel_out.data<float>();
  for (size_t i = 0; i < c.size(); ++i) {
    r.max_abs_diff = std::max(r.max_abs_diff, static_cast<double>(std::fabs(k[i] - c[i])));
  }
  session->Close();
  return r;
}

double Gflops(int n, double ms) { return 2.0 * n * n * n / (ms * 1e-3) / 1e9; }

// ---- (b) Session::Run overhead ------------------------------------------------------

struct OverheadResult {
  int nodes = 0;
  int runs = 0;
  Stats us;
  double mean_us = 0;
};

OverheadResult BenchSessionOverhead(int runs, int warmup) {
  std::vector<NodeDef> defs = {
      MakeNode("x", "Placeholder", {}, {{"dtype", DType::kFloat32}, {"shape", Shape{}}})};
  std::string prev = "x";
  for (int i = 1; i <= 9; ++i) {
    std::string name = "add" + std::to_string(i);
    defs.push_back(MakeNode(name, "Add", {prev, "x"}, {}));
    prev = name;
  }
  auto graph = ValueOrDie(Graph::FromNodeDefs(defs), "building the Add chain");
  std::unique_ptr<Session> session =
      ValueOrDie(NewDirectSession(graph.get()), "opening a direct session");
  const FeedList feeds = {{"x", Tensor::Scalar(1.0f)}};
  const std::vector<std::string> fetches = {prev};
  std::vector<Tensor> out;
  for (int i = 0; i < warmup; ++i) {
    Status s = session->Run(feeds, fetches, {}, &out);
    if (!s.ok()) Die("Add chain step", s);
  }
  if (out.empty() || *out[0].data<float>() != 10.0f) {
    Die("Add chain", Internal("expected 10 from x=1 and 9 Adds"));
  }
  std::vector<double> us;
  us.reserve(runs);
  double total = 0;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    Status s = session->Run(feeds, fetches, {}, &out);
    const double t = 1e6 * SecondsSince(t0);
    if (!s.ok()) Die("Add chain step", s);
    us.push_back(t);
    total += t;
  }
  session->Close();
  OverheadResult r;
  r.nodes = graph->num_nodes();
  r.runs = runs;
  r.us = Summarize(us);
  r.mean_us = total / runs;
  return r;
}

// ---- Output ------------------------------------------------------------------------

std::string Triple(const Stats& s, const char* fmt) {
  char buf[96];
  std::string f = std::string(fmt) + " / " + fmt + " / " + fmt;
  std::snprintf(buf, sizeof(buf), f.c_str(), s.min, s.median, s.max);
  return buf;
}

void PrintTables(const std::vector<MatMulResult>& matmuls, const OverheadResult& overhead,
                 bool optimized) {
  if (!optimized) {
    std::printf("note: built without optimization; use `bazel run -c opt` for real figures\n\n");
  }
  std::printf("(a) MatMul float32 [n,n]x[n,n]: ms per call as min / median / max; "
              "ratio = bare / op (medians, and minima in parentheses); GFLOP/s of medians\n");
  std::printf("%5s %3s %8s  %-26s %-26s %-26s %-15s %-15s %6s %6s %6s\n", "n", "thr", "samples",
              "kernel ms", "bare sgemm ms", "session ms", "bare/kernel", "bare/session",
              "GF krn", "GF bare", "GF ses");
  for (const MatMulResult& r : matmuls) {
    char samples[32], kernel_ratio[32], session_ratio[32];
    std::snprintf(samples, sizeof(samples), "%dx%d", r.samples, r.reps);
    std::snprintf(kernel_ratio, sizeof(kernel_ratio), "%.3f (%.3f)",
                  r.bare_ms.median / r.kernel_ms.median, r.bare_ms.min / r.kernel_ms.min);
    std::snprintf(session_ratio, sizeof(session_ratio), "%.3f (%.3f)",
                  r.bare_ms.median / r.session_ms.median, r.bare_ms.min / r.session_ms.min);
    std::printf("%5d %3d %8s  %-26s %-26s %-26s %-15s %-15s %6.1f %6.1f %6.1f\n", r.n, r.threads,
                samples, Triple(r.kernel_ms, "%.4g").c_str(), Triple(r.bare_ms, "%.4g").c_str(),
                Triple(r.session_ms, "%.4g").c_str(), kernel_ratio, session_ratio,
                Gflops(r.n, r.kernel_ms.median), Gflops(r.n, r.bare_ms.median),
                Gflops(r.n, r.session_ms.median));
  }
  std::printf("(samples: samples x calls averaged in each sample)\n\n");
  std::printf("(b) Session::Run overhead, %d-node scalar Add chain, 1 feed + 1 fetch, %d runs\n",
              overhead.nodes, overhead.runs);
  std::printf("    us per run: min %.2f  median %.2f  max %.2f  mean %.2f  "
              "(median per node %.2f)\n",
              overhead.us.min, overhead.us.median, overhead.us.max, overhead.mean_us,
              overhead.us.median / overhead.nodes);
}

void PrintJson(const std::vector<MatMulResult>& matmuls, const OverheadResult& overhead,
               bool optimized) {
  nlohmann::json j;
  j["optimized_build"] = optimized;
  j["matmul"] = nlohmann::json::array();
  for (const MatMulResult& r : matmuls) {
    j["matmul"].push_back({{"n", r.n},
                           {"threads", r.threads},
                           {"samples", r.samples},
                           {"calls_per_sample", r.reps},
                           {"kernel_ms", StatsJson(r.kernel_ms)},
                           {"bare_ms", StatsJson(r.bare_ms)},
                           {"session_ms", StatsJson(r.session_ms)},
                           {"ratio_bare_over_kernel", r.bare_ms.median / r.kernel_ms.median},
                           {"ratio_bare_over_session", r.bare_ms.median / r.session_ms.median},
                           {"ratio_min_bare_over_kernel", r.bare_ms.min / r.kernel_ms.min},
                           {"gflops_kernel", Gflops(r.n, r.kernel_ms.median)},
                           {"gflops_bare", Gflops(r.n, r.bare_ms.median)},
                           {"gflops_session", Gflops(r.n, r.session_ms.median)},
                           {"max_abs_diff", r.max_abs_diff}});
  }
  j["session_overhead"] = {{"nodes", overhead.nodes},
                           {"runs", overhead.runs},
                           {"us", StatsJson(overhead.us)},
                           {"mean_us", overhead.mean_us}};
  std::printf("%s\n", j.dump().c_str());
}

int Main(int argc, char** argv) {
  bool json = false;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: foundation_bench [--json] [--quick]\n");
      return 2;
    }
  }
#if defined(__OPTIMIZE__)
  const bool optimized = true;
#else
  const bool optimized = false;
#endif
  const std::vector<int> sizes = quick ? std::vector<int>{128, 512}
                                       : std::vector<int>{128, 512, 1024, 2048};
  const double budget_s = quick ? 0.2 : 4.0;  // per (n, threads), all three variants
  std::vector<MatMulResult> matmuls;
  for (int n : sizes) {
    for (int threads : {1, 2}) {
      matmuls.push_back(BenchMatMul(n, threads, budget_s));
      if (matmuls.back().max_abs_diff > 1e-3 * n) {
        std::fprintf(stderr, "foundation_bench: MatMul n=%d differs from sgemm by %g\n", n,
                     matmuls.back().max_abs_diff);
        return 1;
      }
    }
  }
  const OverheadResult overhead =
      quick ? BenchSessionOverhead(2000, 200) : BenchSessionOverhead(20000, 2000);
  if (json) {
    PrintJson(matmuls, overhead, optimized);
  } else {
    PrintTables(matmuls, overhead, optimized);
  }
  return 0;
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) { return actorflow::Main(argc, argv); }
