// Tensor transfer between two tasks of a cluster, each its own `actorflow server`
// process on 127.0.0.1 (ProcessCluster: {"worker": 2}); this process is the client,
// with a session on worker 0's master.
//
// (a) Device-to-device transfer, for 4 KiB, 1 MiB and 16 MiB of float32:
//     resident: v (Variable [n], on /job:worker/task:0, filled with ones once) ->
//               a = Identity on worker 0 -> b = Identity on worker 1 (the step's
//               target; nothing is fetched). One tensor of n bytes crosses from the
//               worker 0 process to the worker 1 process per step.
//     fed:      x fed by the client -> a = Identity on worker 0 -> b = Identity on
//               worker 1 (target). Each step also carries the feed client -> worker 0.
//     fetched:  resident, and the client fetches b: each step also carries the
//               tensor back to the client (worker 1 -> worker 0's master -> client).
//     Before timing, Sum(b) on worker 1 is fetched and checked (== n elements), so
//     the bytes arrived. steps/s, and GB/s = n bytes x steps/s (the worker 0 ->
//     worker 1 tensor only), min / median / max over repeats; one step in flight, then
//     with --inflight K clients (own sessions, own threads) in parallel.
// (b) Remote step round trip for a trivial graph, us per Session::Run (min / median /
//     max over every step): a scalar Neg on worker 0 (client -> master -> its own
//     device), and a scalar crossing to worker 1 and back (Const on worker 0 -> Neg on
//     worker 1, fetched).
//
// (c) Idle CPU: with the session of (b) still open and no step running, the CPU each
//     server process and this client use over --idle-seconds (default 10; --quick: 3),
//     in % of one core. The schedulers poll for work only briefly after each message
//     (actors/scheduler/spinning_scheduler.h), so an idle cluster should cost next to nothing.
//
// Each repeat is retaken (at most 4 attempts) while other processes than the client
// and the two servers took more than 0.3 cores; the table shows the worst kept.
//
// Usage: cluster_bench [--quick] [--json] [--repeats N] [--inflight K] [--actorflow PATH]
//                      [--only CASE] [--round-trips N] [--idle-seconds S] [--server-arg ARG]...
//   --only: the transfer cases whose name contains CASE (e.g. "16 MiB resident": for
//   profiling); --round-trips: (b)'s steps per fetch (2000; 300 with --quick).
//   --server-arg: one more argument for both servers, e.g. `--server-arg
//   --bulk-min-bytes --server-arg 0` to keep every tensor on CAF's transport.
// Build with -c opt: `bazel run -c opt //tools/bench:cluster_bench`.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "tests/child_process.h"
#include "tests/process_cluster.h"
#include "tools/bench/bench_util.h"
#include "tools/cli/blas_core.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "cluster_bench";

struct Flags {
  bool quick = false;
  bool json = false;
  int repeats = 7;
  int inflight = 4;
  std::string actorflow;
  double idle_seconds = -1;  // (c); -1: 10, or 3 with --quick
  std::string only;  // run only the transfer cases whose name contains this (profiling)
  int round_trips = -1;  // (b)'s steps per fetch; -1: 2000, or 300 with --quick
  std::vector<std::string> server_args;  // --server-arg, passed to both servers
};

// The actorflow binary: --actorflow, or the runfiles (bazel run), or bazel-bin.
std::string FindActorflow(const std::string& flag) {
  if (!flag.empty()) return flag;
  std::string path = subprocess::FindWorkspaceProgram("tools/actorflow");
  if (path.empty()) Die(kProgram, "finding the actorflow binary", NotFound("pass --actorflow PATH"));
  return path;
}

std::unique_ptr<Session> OpenOrDie(const Graph* graph, const std::string& target,
                                   bool step_channel = true) {
  SessionOptions options;
  options.target = target;
  options.step_channel = step_channel;
  return ValueOrDie(NewSession(graph, options), kProgram, "opening a session on " + target);
}

void RunOrDie(Session* s, const FeedList& feeds, const std::vector<std::string>& fetches,
              const std::vector<std::string>& targets, std::vector<Tensor>* out,
              const std::string& what) {
  Status status = s->Run(RunOptions(), feeds, fetches, targets, out, nullptr);
  if (!status.ok()) Die(kProgram, what, status);
}

// v<n> or x -> a (worker 0) -> b (worker 1); "sum" checks what arrived.
std::shared_ptr<Graph> TransferGraph(int64_t n, bool resident) {
  Scope root = Scope::NewRootScope();
  Scope w0 = root.WithDevice("/job:worker/task:0");
  Scope w1 = root.WithDevice("/job:worker/task:1");
  Output source;
  if (resident) {
    // Variables outlive sessions on the server: one name per size.
    auto v = Variable(w0.WithOpName("v" + std::to_string(n)), Shape{n}, DType::kFloat32);
    Assign(w0.WithOpName("v_init"), v, Fill(w0, Shape{n}, Const(w0, 1.0f)));
    source = v;
  } else {
    source = Placeholder(w0.WithOpName("x"), DType::kFloat32, Shape{n});
  }
  auto a = Identity(w0.WithOpName("a"), source);
  auto b = Identity(w1.WithOpName("b"), a);
  Sum(w1.WithOpName("sum"), b);
  if (!root.ok()) Die(kProgram, "building the transfer graph", root.status());
  return root.graph_ptr();
}

struct TransferCase {
  std::string name;
  int64_t bytes = 0;
  bool resident = true;
  bool fetched = false;  // the client fetches b (its bytes come back to the client)
  int inflight = 1;
  std::vector<double> steps_per_s, gb_per_s;
  std::vector<double> foreign;  // cores taken by other processes, per kept repeat
  // CPU time of the client and both servers per step (less sensitive to other load
  // than wall time): what a step costs, whoever else runs.
  std::vector<double> cpu_us_per_step;
};

// CPU seconds (user + system) of a process, from /proc/PID/stat; 0 if it is gone.
double ProcessCpuSecondsOf(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(close_paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  // Fields 3.. after "pid (comm)": utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && (fields >> field); ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  static const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (utime + stime) / hz;
}

// Foreign load that does not count the benchmark's own server processes: machine
// busy time minus this process's and the servers' CPU time, per wall second.
class ClusterLoadWindow {
 public:
  explicit ClusterLoadWindow(std::vector<int> pids) : pids_(std::move(pids)) {
    servers0_ = ServersCpu();
  }
  double Stop() {
    const double foreign_with_servers = window_.Stop();
    const double servers = ServersCpu() - servers0_;
    cpu_s_ = ProcessCpuSeconds() - own0_ + servers;
    return std::max(0.0, foreign_with_servers - servers / std::max(window_.wall_s(), 1e-6));
  }
  // CPU seconds of this process and the servers in the window (after Stop).
  double cpu_s() const { return cpu_s_; }

 private:
  double ServersCpu() const {
    double total = 0;
    for (int pid : pids_) total += ProcessCpuSecondsOf(pid);
    return total;
  }
  std::vector<int> pids_;
  double servers0_ = 0;
  double own0_ = ProcessCpuSeconds();
  double cpu_s_ = 0;
  LoadWindow window_;
};

// One client: its own session, feeds and step loop.
struct Client {
  std::unique_ptr<Session> session;
  FeedList feeds;
};

void RunTransferCase(TransferCase* c, const std::string& target, const std::vector<int>& server_pids,
                     int repeats, double min_s) {
  const int64_t n = c->bytes / 4;
  std::shared_ptr<Graph> graph = TransferGraph(n, c->resident);
  std::vector<Client> clients(c->inflight);
  for (Client& client : clients) {
    client.session = OpenOrDie(graph.get(), target);
    if (!c->resident) {
      client.feeds = {{"x", Tensor(DType::kFloat32, Shape{n})}};
      float* x = client.feeds[0].second.data<float>();
      for (int64_t i = 0; i < n; ++i) x[i] = 1.0f;
    }
  }
  if (c->resident) RunOrDie(clients[0].session.get(), {}, {}, {"v_init"}, nullptr, "v_init");
  // The bytes arrive: sum of n ones on worker 1 (exact in float32 for n <= 2^24).
  std::vector<Tensor> out;
  RunOrDie(clients[0].session.get(), clients[0].feeds, {"sum"}, {}, &out, c->name + " check");
  if (out[0].data<float>()[0] != static_cast<float>(n)) {
    Die(kProgram, c->name, Internal("worker 1 received a tensor summing to " +
                                     std::to_string(out[0].data<float>()[0]) + ", not " +
                                     std::to_string(n)));
  }
  for (Client& client : clients) {
    for (int i = 0; i < 3; ++i) {
      RunOrDie(client.session.get(), client.feeds, {}, {"b"}, nullptr, c->name + " warm-up");
    }
  }
  for (int r = 0; r < repeats; ++r) {
    // Retaken (at most 4 attempts) while other processes took more than 0.3 cores.
    double best_foreign = 1e9, best_steps_per_s = 0, best_cpu_us = 0;
    for (int attempt = 0; attempt < 4 && best_foreign > 0.3; ++attempt) {
      ClusterLoadWindow window(server_pids);
      const Clock::time_point start = Clock::now();
      std::vector<std::future<int64_t>> counts;
      for (Client& client : clients) {
        counts.push_back(std::async(std::launch::async, [&client, c, start, min_s] {
          int64_t steps = 0;
          std::vector<Tensor> fetched;
          while (SecondsSince(start) < min_s) {
            if (c->fetched) {
              RunOrDie(client.session.get(), client.feeds, {"b"}, {}, &fetched, c->name);
            } else {
              RunOrDie(client.session.get(), client.feeds, {}, {"b"}, nullptr, c->name);
            }
            ++steps;
          }
          return steps;
        }));
      }
      int64_t steps = 0;
      for (auto& f : counts) steps += f.get();
      const double steps_per_s = steps / SecondsSince(start);
      const double foreign = window.Stop();
      if (foreign < best_foreign) {
        best_foreign = foreign;
        best_steps_per_s = steps_per_s;
        best_cpu_us = 1e6 * window.cpu_s() / std::max<int64_t>(steps, 1);
      }
    }
    c->steps_per_s.push_back(best_steps_per_s);
    c->gb_per_s.push_back(best_steps_per_s * static_cast<double>(c->bytes) / 1e9);
    c->foreign.push_back(best_foreign);
    c->cpu_us_per_step.push_back(best_cpu_us);
  }
}

// (b) Trivial steps: "local" on worker 0 only, "remote" through worker 1.
std::shared_ptr<Graph> TrivialGraph() {
  Scope root = Scope::NewRootScope();
  Scope w0 = root.WithDevice("/job:worker/task:0");
  auto c = Const(w0.WithOpName("c"), 1.0f);
  Neg(w0.WithOpName("local"), c);
  Neg(root.WithDevice("/job:worker/task:1").WithOpName("remote"), c);
  if (!root.ok()) Die(kProgram, "building the trivial graph", root.status());
  return root.graph_ptr();
}

std::vector<double> RoundTripsUs(Session* session, const std::string& fetch, int steps) {
  std::vector<Tensor> out;
  for (int i = 0; i < 20; ++i) RunOrDie(session, {}, {fetch}, {}, &out, fetch + " warm-up");
  std::vector<double> us;
  for (int i = 0; i < steps; ++i) {
    const Clock::time_point t0 = Clock::now();
    RunOrDie(session, {}, {fetch}, {}, &out, fetch);
    us.push_back(1e6 * SecondsSince(t0));
  }
  return us;
}

std::string SizeName(int64_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB"
                            : std::to_string(bytes >> 10) + " KiB";
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      flags.quick = true;
    } else if (a == "--json") {
      flags.json = true;
    } else if (a == "--repeats" && i + 1 < argc) {
      flags.repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--inflight" && i + 1 < argc) {
      flags.inflight = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--actorflow" && i + 1 < argc) {
      flags.actorflow = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      flags.only = argv[++i];
    } else if (a == "--round-trips" && i + 1 < argc) {
      flags.round_trips = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--server-arg" && i + 1 < argc) {
      flags.server_args.push_back(argv[++i]);
    } else if (a == "--idle-seconds" && i + 1 < argc) {
      flags.idle_seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--json] [--repeats N] [--inflight K] "
                           "[--actorflow PATH] [--only CASE] [--round-trips N] [--idle-seconds S] "
                           "[--server-arg ARG]...\n", kProgram);
      std::exit(2);
    }
  }
  if (flags.quick) flags.repeats = std::min(flags.repeats, 3);
  return flags;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  subprocess::ProcessClusterOptions options;
  options.binary = FindActorflow(flags.actorflow);
  options.shape = {{"worker", 2}};
  options.server_args = flags.server_args;
  const char* tmp = std::getenv("TMPDIR");
  options.dir = tmp != nullptr ? tmp : "/tmp";
  auto cluster = ValueOrDie(subprocess::ProcessCluster::Start(options), kProgram,
                            "starting 2 server processes");
  const std::string target = cluster->Target("worker", 0);
  const double load_before = LoadAverage1();

  const double min_s = flags.quick ? 0.2 : 0.6;
  std::vector<TransferCase> cases;
  for (int64_t bytes : {int64_t{4} << 10, int64_t{1} << 20, int64_t{16} << 20}) {
    for (bool resident : {true, false}) {
      TransferCase c;
      c.bytes = bytes;
      c.resident = resident;
      c.name = SizeName(bytes) + (resident ? " resident" : " fed");
      cases.push_back(c);
    }
    TransferCase fetched;
    fetched.bytes = bytes;
    fetched.fetched = true;
    fetched.name = SizeName(bytes) + " fetched";
    cases.push_back(fetched);
    TransferCase pipelined;
    pipelined.bytes = bytes;
    pipelined.inflight = flags.inflight;
    pipelined.name = SizeName(bytes) + " resident x" + std::to_string(flags.inflight);
    cases.push_back(pipelined);
  }
  const std::vector<int> server_pids = {cluster->process("worker", 0)->pid(),
                                         cluster->process("worker", 1)->pid()};
  if (!flags.only.empty()) {
    std::vector<TransferCase> chosen;
    for (const TransferCase& c : cases) {
      if (c.name.find(flags.only) != std::string::npos) chosen.push_back(c);
    }
    if (chosen.empty()) Die(kProgram, "--only " + flags.only, NotFound("no such case"));
    cases = chosen;
  }
  for (TransferCase& c : cases) RunTransferCase(&c, target, server_pids, flags.repeats, min_s);

  std::shared_ptr<Graph> trivial = TrivialGraph();
  std::unique_ptr<Session> session = OpenOrDie(trivial.get(), target);
  const int round_trips = flags.round_trips > 0 ? flags.round_trips : (flags.quick ? 300 : 2000);
  std::vector<double> local_us = RoundTripsUs(session.get(), "local", round_trips);
  std::vector<double> remote_us = RoundTripsUs(session.get(), "remote", round_trips);
  // The same steps with the step channel off: every step through CAF's transport.
  std::unique_ptr<Session> over_caf = OpenOrDie(trivial.get(), target, /*step_channel=*/false);
  std::vector<double> local_caf_us = RoundTripsUs(over_caf.get(), "local", round_trips);
  over_caf.reset();
  // (c) The session stays open (a connected client) while nothing runs.
  const double idle_s = flags.idle_seconds > 0 ? flags.idle_seconds : (flags.quick ? 3 : 10);
  std::vector<double> idle_cpu0;
  for (int pid : server_pids) idle_cpu0.push_back(ProcessCpuSecondsOf(pid));
  const double idle_own0 = ProcessCpuSeconds();
  const auto idle_start = std::chrono::steady_clock::now();
  // A measurement window, not a synchronization: nothing waits for anything here.
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
  const double idle_wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - idle_start).count();
  std::vector<double> idle_percent;  // worker 0, worker 1, client
  for (size_t i = 0; i < server_pids.size(); ++i) {
    idle_percent.push_back(100.0 * (ProcessCpuSecondsOf(server_pids[i]) - idle_cpu0[i]) / idle_wall);
  }
  idle_percent.push_back(100.0 * (ProcessCpuSeconds() - idle_own0) / idle_wall);
  const double load_after = LoadAverage1();

  if (flags.json) {
    nlohmann::json j;
    for (const TransferCase& c : cases) {
      j["transfer"][c.name] = {{"bytes", c.bytes},
                               {"inflight", c.inflight},
                               {"steps_per_s", StatsJson(Summarize(c.steps_per_s))},
                               {"gb_per_s", StatsJson(Summarize(c.gb_per_s))},
                               {"cpu_us_per_step", StatsJson(Summarize(c.cpu_us_per_step))},
                               {"foreign_load", StatsJson(Summarize(c.foreign))}};
    }
    j["round_trip_us"]["worker0_only"] = StatsJson(Summarize(local_us));
    j["round_trip_us"]["worker0_worker1"] = StatsJson(Summarize(remote_us));
    j["round_trip_us"]["worker0_only_over_caf"] = StatsJson(Summarize(local_caf_us));
    j["idle_cpu_percent"] = {{"seconds", idle_wall},
                             {"worker0", idle_percent[0]},
                             {"worker1", idle_percent[1]},
                             {"client", idle_percent[2]}};
    j["load_average"] = {load_before, load_after};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
#ifndef NDEBUG
  std::printf("note: built without optimization; use -c opt for real figures\n");
#endif
  std::printf("cluster_bench: 2 `actorflow server` processes on 127.0.0.1, client in this "
              "process; load average %.2f before, %.2f after\n\n", load_before, load_after);
  std::printf("(a) worker 0 -> worker 1 tensor transfer (%d repeats of >= %.1f s; min / median "
              "/ max)\n", flags.repeats, min_s);
  std::printf("  %-22s %-22s %-22s %-14s %s\n", "case", "steps/s", "GB/s",
              "CPU us/step", "foreign load (max)");
  for (const TransferCase& c : cases) {
    std::printf("  %-22s %-22s %-22s %-14.0f %.2f\n", c.name.c_str(),
                Triple(Summarize(c.steps_per_s), "%.0f").c_str(),
                Triple(Summarize(c.gb_per_s), "%.3f").c_str(),
                Summarize(c.cpu_us_per_step).median, Summarize(c.foreign).max);
  }
  std::printf("  (4 KiB: messages/s = steps/s; 'fed' steps also carry the feed to worker 0, 'fetched' ones b back; "
              "CPU us/step: median, client + both servers)\n");
  std::printf("\n(b) remote step round trip, trivial graph, us per Session::Run (%d steps)\n",
              round_trips);
  std::printf("  %-24s %s\n", "worker 0 only", Triple(Summarize(local_us), "%.1f").c_str());
  std::printf("  %-24s %s\n", "worker 0 -> worker 1", Triple(Summarize(remote_us), "%.1f").c_str());
  std::printf("  %-24s %s\n", "worker 0 only, over CAF",
              Triple(Summarize(local_caf_us), "%.1f").c_str());
  std::printf("\n(c) idle CPU over %.1f s, session open, no step running (%% of one core)\n",
              idle_wall);
  std::printf("  worker 0 %.2f%%, worker 1 %.2f%%, client %.2f%%\n", idle_percent[0],
              idle_percent[1], idle_percent[2]);
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
