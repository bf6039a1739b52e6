// What the actor runtime costs, through the in-process actor session
// (NewActorSession, actors/runtime/local_session.h):
// (a) Round trip session -> master -> device(s) -> master -> session, in us per
//     Session::Run: a 1-node step (a scalar Const fetched) on one device; a 10-node
//     chain (a Const and 9 Negs) on one device and split across two (device_count
//     CPU=2, nodes pinned alternately, so 9 Send/Recv pairs). DirectSession runs the
//     same graphs for reference.
// (b) In-process Send/Recv of a 4 MiB tensor: x [1048576] float32 is fed to an
//     Identity on CPU:0 whose result goes to an Identity on CPU:1, which is fetched.
//     The fetched buffer must be the fed buffer (no copy anywhere); the equivalent
//     bandwidth is 4 MiB / step time (target >= 10 GB/s).
// (c) Two independent chains of MatMuls [1024,1024] x [1024,1024] with one BLAS thread
//     (openblas_set_num_threads(1)): both chains on CPU:0, then one chain per device.
//     steps/s and the speed-up (target >= 1.8x on 2 cores).
// Configurations are interleaved round by round; times are min / median / max.
//
// Usage: runtime_bench [--quick] [--json] [--chain N] [--rounds N]
// Build with -c opt: `bazel build -c opt //tools/bench:runtime_bench`.
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/runtime/local_session.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "tools/bench/bench_util.h"
#include "tools/cli/blas_core.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "runtime_bench";
constexpr int64_t kBigElements = 1 << 20;  // 4 MiB of float32

std::unique_ptr<Session> ActorSessionWith(const Graph* graph, int cpus) {
  SessionOptions options;
  options.device_count = {{"CPU", cpus}};
  std::unique_ptr<ActorSession> s =
      ValueOrDie(NewActorSession(graph, options), kProgram, "opening an actor session");
  return std::unique_ptr<Session>(s.release());
}

void RunOrDie(Session* session, const FeedList& feeds, const std::vector<std::string>& fetches,
              std::vector<Tensor>* out, const std::string& what) {
  Status s = session->Run(feeds, fetches, {}, out);
  if (!s.ok()) Die(kProgram, what, s);
}

// One timed configuration: a session, what it runs, and the samples it collected.
struct Case {
  std::string name;
  std::shared_ptr<Graph> graph;  // keeps the graph alive for the session
  std::unique_ptr<Session> session;
  FeedList feeds;
  std::vector<std::string> fetches;
  std::vector<double> us;  // per Session::Run
  std::vector<Tensor> out;

  void Warm(int n) {
    for (int i = 0; i < n; ++i) RunOrDie(session.get(), feeds, fetches, &out, name);
  }
  void Sample(int n) {
    for (int i = 0; i < n; ++i) {
      const Clock::time_point t0 = Clock::now();
      Status s = session->Run(feeds, fetches, {}, &out);
      us.push_back(1e6 * SecondsSince(t0));
      if (!s.ok()) Die(kProgram, name, s);
    }
  }
};

// (a) A scalar Const, fetched.
std::shared_ptr<Graph> OneNodeGraph() {
  Scope root = Scope::NewRootScope();
  Const(root.WithOpName("c"), 1.0f);
  if (!root.ok()) Die(kProgram, "building the 1-node graph", root.status());
  return root.graph_ptr();
}

// (a) c = Const 1 on CPU:0; n1..n9 = Neg(previous), on CPU:(i % devices). Fetch "n9".
std::shared_ptr<Graph> ChainGraph(int devices) {
  Scope root = Scope::NewRootScope();
  Output prev = Const(root.WithDevice("/cpu:0").WithOpName("c"), 1.0f);
  for (int i = 1; i <= 9; ++i) {
    prev = Neg(root.WithDevice("/cpu:" + std::to_string(i % devices))
                   .WithOpName("n" + std::to_string(i)),
               prev);
  }
  if (!root.ok()) Die(kProgram, "building the 10-node chain", root.status());
  return root.graph_ptr();
}

// (b) x (fed, CPU:0) -> a = Identity on CPU:0 -> b = Identity on CPU:1 (fetched).
std::shared_ptr<Graph> CrossDeviceIdentityGraph() {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithDevice("/cpu:0").WithOpName("x"), DType::kFloat32,
                       Shape{-1});
  auto a = Identity(root.WithDevice("/cpu:0").WithOpName("a"), x);
  Identity(root.WithDevice("/cpu:1").WithOpName("b"), a);
  if (!root.ok()) Die(kProgram, "building the cross-device graph", root.status());
  return root.graph_ptr();
}

// (c) Two chains m_c_i = MatMul(m_c_{i-1}, w_c), c = 0, 1; chain c on CPU:(c % devices).
// w's entries are uniform in +-sqrt(3/1024), so values keep unit variance.
std::shared_ptr<Graph> MatMulChainsGraph(int devices, int length) {
  Scope root = Scope::NewRootScope();
  std::mt19937 rng(7);
  const float bound = std::sqrt(3.0f / 1024.0f);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int c = 0; c < 2; ++c) {
    Scope dev = root.WithDevice("/cpu:" + std::to_string(c % devices));
    Tensor x(DType::kFloat32, Shape{1024, 1024});
    Tensor w(DType::kFloat32, Shape{1024, 1024});
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = normal(rng);
    for (int64_t i = 0; i < w.NumElements(); ++i) w.data<float>()[i] = dist(rng);
    Output m = Const(dev.WithOpName("x" + std::to_string(c)), x);
    Output wc = Const(dev.WithOpName("w" + std::to_string(c)), w);
    for (int i = 1; i <= length; ++i) {
      m = MatMul(dev.WithOpName("m" + std::to_string(c) + "_" + std::to_string(i)), m, wc);
    }
  }
  if (!root.ok()) Die(kProgram, "building the MatMul chains", root.status());
  return root.graph_ptr();
}

struct Flags {
  bool quick = false;
  bool json = false;
  int chain = 8;
  int rounds = 10;
};

int Main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      flags.quick = true;
      flags.rounds = 3;
    } else if (a == "--json") {
      flags.json = true;
    } else if (a == "--chain" && i + 1 < argc) {
      flags.chain = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      flags.rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: runtime_bench [--quick] [--json] [--chain N] [--rounds N]\n");
      return 2;
    }
  }
  if (flags.chain < 1 || flags.rounds < 1) return 2;
  openblas_set_num_threads(1);
  nlohmann::json j;
  const double load_before = LoadAverage1();

  // ---- (a) round trips --------------------------------------------------------------
  std::vector<Case> trips;
  auto add_trip = [&](std::string name, std::shared_ptr<Graph> g, bool actor, int cpus,
                      std::string fetch) {
    Case c;
    c.name = std::move(name);
    c.graph = std::move(g);
    c.session = actor ? ActorSessionWith(c.graph.get(), cpus)
                      : ValueOrDie(NewDirectSession(c.graph.get()), kProgram,
                                   "opening a direct session");
    c.fetches = {std::move(fetch)};
    trips.push_back(std::move(c));
  };
  add_trip("actor  1 node, 1 device", OneNodeGraph(), true, 1, "c");
  add_trip("actor 10 nodes, 1 device", ChainGraph(1), true, 2, "n9");
  add_trip("actor 10 nodes, 2 devices", ChainGraph(2), true, 2, "n9");
  add_trip("direct 1 node", OneNodeGraph(), false, 1, "c");
  add_trip("direct 10 nodes", ChainGraph(1), false, 1, "n9");
  const int per_round = flags.quick ? 300 : 2000;
  for (Case& c : trips) c.Warm(per_round / 2);
  double foreign_trips = 0;
  for (int r = 0; r < flags.rounds; ++r) {
    LoadWindow w;
    for (Case& c : trips) c.Sample(per_round);
    foreign_trips = std::max(foreign_trips, w.Stop());
  }
  if (trips[2].out[0].data<float>()[0] != -1.0f) {
    Die(kProgram, "10-node chain", Internal("expected -1 from 1 and 9 Negs"));
  }

  // ---- (b) 4 MiB across devices ----------------------------------------------------
  Case big;
  big.name = "actor 4 MiB CPU:0 -> CPU:1";
  big.graph = CrossDeviceIdentityGraph();
  big.session = ActorSessionWith(big.graph.get(), 2);
  Tensor payload(DType::kFloat32, Shape{kBigElements});
  for (int64_t i = 0; i < kBigElements; ++i) payload.data<float>()[i] = static_cast<float>(i);
  big.feeds = {{"x", payload}};
  big.fetches = {"b"};
  Case small;
  small.name = "actor 4 B CPU:0 -> CPU:1";
  small.graph = big.graph;
  small.session = ActorSessionWith(small.graph.get(), 2);
  small.feeds = {{"x", Tensor::FromVector<float>({1.0f})}};
  small.fetches = {"b"};
  big.Warm(100);
  small.Warm(100);
  const bool same_buffer = big.out[0].raw_data() == payload.raw_data();
  const bool same_values = TensorsEqual(big.out[0], payload);
  const int big_per_round = flags.quick ? 200 : 1000;
  double foreign_big = 0;
  for (int r = 0; r < flags.rounds; ++r) {
    LoadWindow w;
    big.Sample(big_per_round);
    small.Sample(big_per_round);
    foreign_big = std::max(foreign_big, w.Stop());
  }
  const double bytes = static_cast<double>(payload.TotalBytes());

  // ---- (c) MatMul chains on one vs two devices --------------------------------------
  Case one, two;
  one.name = "2 chains on CPU:0";
  one.graph = MatMulChainsGraph(1, flags.chain);
  one.session = ActorSessionWith(one.graph.get(), 2);
  two.name = "chain 0 on CPU:0, chain 1 on CPU:1";
  two.graph = MatMulChainsGraph(2, flags.chain);
  two.session = ActorSessionWith(two.graph.get(), 2);
  const std::string last = "_" + std::to_string(flags.chain);
  one.fetches = two.fetches = {"m0" + last, "m1" + last};
  one.Warm(1);
  two.Warm(1);
  std::vector<double> mm_one_us, mm_two_us;  // one step per round each
  if (!TensorsEqual(one.out[0], two.out[0]) || !TensorsEqual(one.out[1], two.out[1])) {
    Die(kProgram, "MatMul chains", Internal("one and two devices computed different values"));
  }
  // Two cores are needed for the two-device case: each round first waits for a quiet
  // machine, and a step taken while other processes used > 0.25 cores is retaken.
  std::vector<double> foreign_mm, speedups;
  int mm_retakes = 0;
  const int mm_rounds = flags.quick ? 3 : std::max(5, flags.rounds);
  for (int r = 0; r < mm_rounds; ++r) {
    if (!flags.quick) WaitQuiet(0.15, 1.0, 10.0);
    double pair[2];
    int k = 0;
    for (Case* c : {&one, &two}) {
      Measured m = MeasureRetaking(
          [c] {
            c->us.clear();
            c->Sample(1);
            return c->us.back();
          },
          0.25, flags.quick ? 1 : 3);
      foreign_mm.push_back(m.foreign);
      mm_retakes += m.attempts - 1;
      pair[k++] = m.value;
    }
    one.us.clear();
    two.us.clear();
    speedups.push_back(pair[0] / pair[1]);
    mm_one_us.push_back(pair[0]);
    mm_two_us.push_back(pair[1]);
  }
  const double gflop = 2.0 * 2 * flags.chain * 1024.0 * 1024.0 * 1024.0 / 1e9;

  // ---- Output ------------------------------------------------------------------------
  const double load_after = LoadAverage1();
  if (flags.json) {
    j["foreign_max"] = {foreign_trips, foreign_big};
    for (const Case& c : trips) j["round_trip_us"][c.name] = StatsJson(Summarize(c.us));
    const Stats bs = Summarize(big.us);
    j["send_recv_4mib"] = {{"us", StatsJson(bs)},
                           {"small_us", StatsJson(Summarize(small.us))},
                           {"same_buffer", same_buffer},
                           {"same_values", same_values},
                           {"gbps_median", bytes / (bs.median * 1e-6) / 1e9},
                           {"gbps_best", bytes / (bs.min * 1e-6) / 1e9}};
    j["matmul_chains"] = {{"chain", flags.chain},
                          {"one_device_us", StatsJson(Summarize(mm_one_us))},
                          {"two_devices_us", StatsJson(Summarize(mm_two_us))},
                          {"retakes", mm_retakes},
                          {"speedup", StatsJson(Summarize(speedups))}};
    j["loadavg"] = {load_before, load_after};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
#if !defined(__OPTIMIZE__)
  std::printf("note: built without optimization; use -c opt for real figures\n");
#endif
  std::printf("runtime_bench: load average %.2f before, %.2f after (2 cores)\n\n", load_before,
              load_after);
  std::printf("(a) Session::Run round trip, us per step (%d rounds x %d runs, interleaved; "
              "foreign load max %.2f cores)\n",
              flags.rounds, per_round, foreign_trips);
  std::printf("  %-28s %-30s\n", "case", "min / median / max");
  for (const Case& c : trips) {
    std::printf("  %-28s %-30s\n", c.name.c_str(), Triple(Summarize(c.us), "%.2f").c_str());
  }
  const Stats bs = Summarize(big.us);
  const Stats ss = Summarize(small.us);
  std::printf("\n(b) Send/Recv of a 4 MiB float32 tensor, fed -> Identity (CPU:0) -> "
              "Identity (CPU:1) -> fetched (foreign load max %.2f cores)\n", foreign_big);
  std::printf("  fetched buffer == fed buffer: %s (%p vs %p); values equal: %s\n",
              same_buffer ? "yes, no copy" : "NO, copied", big.out[0].raw_data(),
              payload.raw_data(), same_values ? "yes" : "NO");
  std::printf("  4 MiB step us:  %s\n", Triple(bs, "%.2f").c_str());
  std::printf("  4 B step us:    %s   (same graph, scalar-sized payload)\n",
              Triple(ss, "%.2f").c_str());
  std::printf("  equivalent GB/s (4 MiB / step time): median %.1f, best %.1f, worst %.1f  "
              "(target >= 10)\n",
              bytes / (bs.median * 1e-6) / 1e9, bytes / (bs.min * 1e-6) / 1e9,
              bytes / (bs.max * 1e-6) / 1e9);
  const Stats o = Summarize(mm_one_us), t = Summarize(mm_two_us), sp = Summarize(speedups);
  double fmax = 0;
  for (double f : foreign_mm) fmax = std::max(fmax, f);
  std::printf("\n(c) two chains of %d MatMuls [1024,1024]x[1024,1024], 1 BLAS thread each, "
              "%.1f GFLOP per step\n", flags.chain, gflop);
  std::printf("  %-36s ms/step %-32s steps/s (med) %.2f  GFLOP/s %.1f\n", one.name.c_str(),
              Triple({o.min / 1e3, o.median / 1e3, o.max / 1e3}, "%.1f").c_str(),
              1e6 / o.median, gflop / (o.median * 1e-6));
  std::printf("  %-36s ms/step %-32s steps/s (med) %.2f  GFLOP/s %.1f\n", two.name.c_str(),
              Triple({t.min / 1e3, t.median / 1e3, t.max / 1e3}, "%.1f").c_str(),
              1e6 / t.median, gflop / (t.median * 1e-6));
  std::printf("  speed-up two/one devices: ratio of medians %.2f; per round min / median / max "
              "%s  (target >= 1.8)\n  %d rounds, foreign load max %.2f cores, %d steps retaken\n",
              o.median / t.median, Triple(sp, "%.2f").c_str(), mm_rounds, fmax, mm_retakes);
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
