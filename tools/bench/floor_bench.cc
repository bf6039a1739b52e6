// The floors under actorflow's cross-process figures (cluster_bench): what two
// processes on 127.0.0.1 of this machine reach with bare TCP and with bare CAF, so
// that a report can set "our remote step round trip is X us" beside "CAF's actor
// echo is Y us, a TCP ping-pong Z us". This process is A; a child (this binary again,
// with a hidden --serve-tcp or --serve-caf SPIN_US) is B.
//
// tcp rtt:             64 bytes A -> B -> A, TCP_NODELAY, blocking read/write, us per
//                      round trip (median of 5000). The floor of any request/response
//                      between two processes whose threads sleep in the kernel.
// tcp rtt polling:     the same with both sides busy-polling non-blocking sockets
//                      (recv MSG_DONTWAIT): the floor for a runtime whose threads poll
//                      (actorflow's schedulers and network threads do, for 200 us).
// caf rtt:             an actor in A requests (atom, int64) from an echo actor that B
//                      published, 3000 round trips one after the other (the next sent
//                      from the reply handler; timed inside the actor, no client thread
//                      on the path), us per round trip. Both systems are configured as
//                      actorflow's servers are: the middleman of
//                      actors/transport/cluster_transport.h and the polling scheduler of
//                      actors/scheduler/spinning_scheduler.h with 200 us of spin. The floor of
//                      "remote step round trip": a step is at least one such exchange
//                      (client -> master), plus the hand-offs inside the server.
// caf rtt no polling:  the same with spin 0 (CAF's park-at-once behaviour).
// tcp 1 MiB, 16 MiB:   A writes blocks of that size back to back for ~1 s, B reads
//                      them, GB/s until B confirmed every byte: what a bulk byte
//                      channel beside CAF could reach.
// caf 1 MiB, 16 MiB:   CAF messages (atom, std::vector<char> of that size; CAF writes
//                      the bytes as one raw block) from A's actor to B's echo actor,
//                      which answers the size; 1 and 8 requests in flight, ~1 s, GB/s.
//                      The floor of "a tensor across two processes" (cluster_bench (a)).
//
// Each case runs --repeats times (default 5; --quick: 2, and fewer round trips and
// shorter windows); the table gives min / median / max over the repeats of each
// repeat's figure. Every wait has a deadline: B reports its port on stdout within
// 10 s, connects and replies time out after 10 s, B is killed when A is done.
//
// Usage: floor_bench [--quick] [--json] [--repeats N]
// Build with -c opt: `bazel run -c opt //tools/bench:floor_bench`.
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/transport/cluster_transport.h"
#include "actors/transport/connect.h"
#include "actors/scheduler/spinning_scheduler.h"
#include "tests/child_process.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/floor_tcp.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "floor_bench";
constexpr std::chrono::seconds kDeadline{10};        // child start, connect, one reply
constexpr std::chrono::seconds kRepeatDeadline{60};  // one repeat of a CAF case

using echo_atom = caf::atom_constant<caf::atom("floor_echo")>;
using bytes_atom = caf::atom_constant<caf::atom("floor_blob")>;
using start_atom = caf::atom_constant<caf::atom("floor_go")>;

struct Flags {
  bool quick = false;
  bool json = false;
  int repeats = -1;        // -1: 5, or 2 with --quick
  bool serve_tcp = false;  // hidden: be process B of the TCP cases
  int64_t serve_caf = -1;  // hidden: be process B of the CAF cases, with this spin
};

// An actor system configured as actorflow's servers configure theirs
// (actors/cluster/server.cc); the config outlives the system.
struct CafNode {
  explicit CafNode(int64_t spin_us) {
    ConfigureClusterTransport(cfg);
    const size_t threads = std::max<size_t>(std::thread::hardware_concurrency(), 2);
    ConfigureScheduler(cfg, SchedulerOptions{threads, spin_us});
    cfg.set("logger.console", caf::atom("none"));
    system = std::make_unique<caf::actor_system>(cfg);
  }
  ~CafNode() { ShutDownClusterSystem(system); }
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;
};

caf::behavior EchoActor() {
  return {
      [](echo_atom, int64_t x) { return x; },
      [](bytes_atom, const std::vector<char>& bytes) { return static_cast<int64_t>(bytes.size()); },
  };
}

// Process B of the CAF cases: publishes the echo actor, prints "port N", and serves
// until A kills it.
[[noreturn]] void ServeCaf(int64_t spin_us) {
  CafNode node(spin_us);
  caf::actor echo = node.system->spawn(EchoActor);
  auto port = PublishOnTransport(echo, 0, "127.0.0.1");
  if (!port) {
    Die(kProgram, "publishing the echo actor", Unavailable(node.system->render(port.error())));
  }
  std::printf("port %u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  while (true) pause();  // the echo runs on CAF's threads; A ends this process
}

// What a driver actor hands back to the main thread: a figure or an error.
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  double value = 0;
  std::string error;

  void Set(double v, std::string e) {
    std::lock_guard<std::mutex> lock(mu);
    value = v;
    error = std::move(e);
    done = true;
    cv.notify_all();
  }
  double AwaitOrDie(const std::string& what) {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, kRepeatDeadline, [&] { return done; })) {
      Die(kProgram, what, DeadlineExceeded("no result within " +
                                           std::to_string(kRepeatDeadline.count()) + " s"));
    }
    if (!error.empty()) Die(kProgram, what, Unavailable(error));
    return value;
  }
};

struct RttState {
  int64_t left = 0;
  int64_t count = 0;
  Clock::time_point start;
};
using RttDriverActor = caf::stateful_actor<RttState>;

void SendEcho(RttDriverActor* self, const caf::actor& echo, const std::shared_ptr<Outcome>& out) {
  self->request(echo, kDeadline, echo_atom::value, self->state.left)
      .then(
          [=](int64_t) {
            if (--self->state.left > 0) return SendEcho(self, echo, out);
            out->Set(1e6 * SecondsSince(self->state.start) / self->state.count, "");
            self->quit();
          },
          [=](caf::error& e) {
            out->Set(0, "echo request: " + self->system().render(e));
            self->quit();
          });
}

// `count` round trips one after the other; sets `out` to us per round trip.
caf::behavior RttDriver(RttDriverActor* self, caf::actor echo, int64_t count,
                        std::shared_ptr<Outcome> out) {
  self->state.left = self->state.count = count;
  return {[=](start_atom) {
    self->state.start = Clock::now();
    SendEcho(self, echo, out);
  }};
}

struct BytesState {
  int64_t in_flight = 0;
  int64_t acked = 0;
  Clock::time_point start;
};
using BytesDriverActor = caf::stateful_actor<BytesState>;

void SendBytes(BytesDriverActor* self, const caf::actor& echo, const caf::message& blob,
               int64_t bytes, double seconds, const std::shared_ptr<Outcome>& out) {
  ++self->state.in_flight;
  self->request(echo, kDeadline, blob)
      .then(
          [=](int64_t received) {
            BytesState& s = self->state;
            --s.in_flight;
            if (received != bytes) {
              out->Set(0, "the echo received " + std::to_string(received) + " bytes of " +
                              std::to_string(bytes));
              return self->quit();
            }
            ++s.acked;
            const double elapsed = SecondsSince(s.start);
            if (elapsed < seconds) return SendBytes(self, echo, blob, bytes, seconds, out);
            if (s.in_flight > 0) return;
            out->Set(static_cast<double>(s.acked) * static_cast<double>(bytes) / elapsed / 1e9, "");
            self->quit();
          },
          [=](caf::error& e) {
            out->Set(0, "bytes request: " + self->system().render(e));
            self->quit();
          });
}

// Keeps `inflight` requests of `bytes` bytes each outstanding for about `seconds`;
// sets `out` to GB/s of acknowledged bytes. One message is made once and sent again
// and again (messages are copy-on-write): no copy in A, only CAF's serialization.
caf::behavior BytesDriver(BytesDriverActor* self, caf::actor echo, int64_t bytes, int inflight,
                          double seconds, std::shared_ptr<Outcome> out) {
  caf::message blob =
      caf::make_message(bytes_atom::value, std::vector<char>(static_cast<size_t>(bytes), 'b'));
  return {[=](start_atom) {
    self->state.start = Clock::now();
    for (int i = 0; i < inflight; ++i) SendBytes(self, echo, blob, bytes, seconds, out);
  }};
}

template <class Driver, class... Ts>
double RunDriver(caf::actor_system& system, const std::string& what, Driver driver,
                 Ts&&... args) {
  auto out = std::make_shared<Outcome>();
  caf::anon_send(system.spawn(driver, std::forward<Ts>(args)..., out), start_atom::value);
  return out->AwaitOrDie(what);
}

// A's handle on B's echo actor; the blocking connect runs on its own thread so that
// it is bounded by kDeadline (on a timeout this process exits, ending the thread).
caf::actor ConnectOrDie(caf::actor_system& system, int port) {
  struct Attempt {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    caf::expected<caf::actor> result{caf::sec::none};
  };
  auto attempt = std::make_shared<Attempt>();
  std::thread([attempt, &system, port] {
    auto result = ConnectOnTransport<caf::actor>(system, "127.0.0.1", static_cast<uint16_t>(port));
    std::lock_guard<std::mutex> lock(attempt->mu);
    attempt->result = std::move(result);
    attempt->done = true;
    attempt->cv.notify_all();
  }).detach();
  const std::string what = "connecting to the echo actor on 127.0.0.1:" + std::to_string(port);
  std::unique_lock<std::mutex> lock(attempt->mu);
  if (!attempt->cv.wait_for(lock, kDeadline, [&] { return attempt->done; })) {
    Die(kProgram, what, DeadlineExceeded("no handshake within 10 s"));
  }
  if (!attempt->result) Die(kProgram, what, Unavailable(system.render(attempt->result.error())));
  return *attempt->result;
}

// Process B: this binary with `args`, once it reported its port (within kDeadline).
struct Peer {
  std::unique_ptr<subprocess::ChildProcess> process;  // killed when destroyed
  int port = 0;
};

Peer StartPeerOrDie(const std::vector<std::string>& args) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) Die(kProgram, "finding this program", NotFound("/proc/self/exe is unreadable"));
  self[n] = '\0';
  const std::string what = "starting " + std::string(kProgram) + " " + args.front();
  std::string error;
  Peer peer;
  peer.process = subprocess::ChildProcess::Start(self, args, &error);
  if (!peer.process) Die(kProgram, what, Unavailable(error));
  std::string line;
  if (!peer.process->WaitForLine("port ", kDeadline, &line)) {
    Die(kProgram, what, Unavailable("no port reported within 10 s; its stderr: " +
                                    peer.process->err()));
  }
  peer.port = std::atoi(line.c_str() + 5);
  return peer;
}

std::string SizeName(int64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// Per case, every repeat's figure; printed and written in this order.
struct Results {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, std::string> units;

  void Add(const std::string& name, const char* unit, double value) {
    if (!values.count(name)) order.push_back(name);
    values[name].push_back(value);
    units[name] = unit;
  }
  nlohmann::json Json(const std::string& name) const { return StatsJson(Summarize(values.at(name))); }
};

void RunTcpCases(int repeats, bool quick, Results* results) {
  Peer peer = StartPeerOrDie({"--serve-tcp"});
  const int round_trips = quick ? 1000 : 5000;
  const double seconds = quick ? 0.3 : 1.0;
  for (bool polling : {false, true}) {
    const std::string name = polling ? "tcp rtt polling" : "tcp rtt";
    for (int r = 0; r < repeats; ++r) {
      results->Add(name, "us",
                   ValueOrDie(TcpRoundTripUs(peer.port, round_trips, polling), kProgram, name));
    }
  }
  for (int64_t bytes : {int64_t{1} << 20, int64_t{16} << 20}) {
    const std::string name = "tcp " + SizeName(bytes);
    for (int r = 0; r < repeats; ++r) {
      results->Add(name, "GB/s",
                   ValueOrDie(TcpGbPerS(peer.port, static_cast<size_t>(bytes), seconds),
                              kProgram, name));
    }
  }
}

// The CAF cases with schedulers (both sides) polling for `spin_us`; the byte
// transfers only with polling on, as actorflow's servers run.
void RunCafCases(int64_t spin_us, int repeats, bool quick, Results* results) {
  Peer peer = StartPeerOrDie({"--serve-caf", std::to_string(spin_us)});
  auto node = std::make_unique<CafNode>(spin_us);
  caf::actor_system& system = *node->system;
  const caf::actor echo = ConnectOrDie(system, peer.port);
  const std::string rtt = spin_us > 0 ? "caf rtt" : "caf rtt no polling";
  RunDriver(system, rtt + " (warm-up)", RttDriver, echo, int64_t{200});
  const int64_t round_trips = quick ? 1000 : 3000;
  for (int r = 0; r < repeats; ++r) {
    results->Add(rtt, "us", RunDriver(system, rtt, RttDriver, echo, round_trips));
  }
  if (spin_us > 0) {
    const double seconds = quick ? 0.3 : 1.0;
    for (int64_t bytes : {int64_t{1} << 20, int64_t{16} << 20}) {
      for (int inflight : {1, 8}) {
        const std::string name = "caf " + SizeName(bytes) + " x" + std::to_string(inflight);
        for (int r = 0; r < repeats; ++r) {
          results->Add(name, "GB/s",
                       RunDriver(system, name, BytesDriver, echo, bytes, inflight, seconds));
        }
      }
    }
  }
  node.reset();  // A's connection closes before B is killed
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      flags.quick = true;
    } else if (arg == "--json") {
      flags.json = true;
    } else if (arg == "--repeats" && has_value) {
      flags.repeats = std::atoi(argv[++i]);
    } else if (arg == "--serve-tcp") {
      flags.serve_tcp = true;
    } else if (arg == "--serve-caf" && has_value) {
      flags.serve_caf = std::atoll(argv[++i]);
    } else {
      Die(kProgram, "parsing the command line",
          InvalidArgument("unknown or incomplete flag '" + arg +
                          "'; usage: floor_bench [--quick] [--json] [--repeats N]"));
    }
  }
  if (flags.repeats == -1) flags.repeats = flags.quick ? 2 : 5;
  if (flags.repeats < 1) Die(kProgram, "--repeats", InvalidArgument("must be at least 1"));
  return flags;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  if (flags.serve_tcp) Die(kProgram, "serving TCP", ServeTcp());
  if (flags.serve_caf >= 0) ServeCaf(flags.serve_caf);

  const double load_before = LoadAverage1();
  Results results;
  RunTcpCases(flags.repeats, flags.quick, &results);
  RunCafCases(kDefaultSchedulerSpinUs, flags.repeats, flags.quick, &results);
  RunCafCases(0, flags.repeats, flags.quick, &results);
  const double load_after = LoadAverage1();

  // The table, in a fixed order: round trips first, then transfers.
  const std::vector<std::string> shown = {
      "tcp rtt",    "tcp rtt polling", "caf rtt",       "caf rtt no polling", "tcp 1 MiB",
      "tcp 16 MiB", "caf 1 MiB x1",    "caf 1 MiB x8",  "caf 16 MiB x1",      "caf 16 MiB x8"};
#ifndef NDEBUG
  std::printf("note: built without optimization; use -c opt for real figures\n");
#endif
  std::printf("floor_bench: this process and a child on 127.0.0.1; %d repeats; min / median / "
              "max over repeats; load average %.2f before, %.2f after\n",
              flags.repeats, load_before, load_after);
  std::printf("  %-20s %-26s %s\n", "case", "min / median / max", "unit");
  for (const std::string& name : shown) {
    const char* format = results.units.at(name) == "us" ? "%.1f" : "%.3f";
    std::printf("  %-20s %-26s %s\n", name.c_str(),
                Triple(Summarize(results.values.at(name)), format).c_str(),
                results.units.at(name).c_str());
  }
  std::printf("  (caf: scheduler spin %lld us on both sides unless 'no polling'; caf bytes: "
              "xK = K requests in flight)\n",
              static_cast<long long>(kDefaultSchedulerSpinUs));
  if (flags.json) {
    nlohmann::json j;
    j["tcp_rtt_us"] = results.Json("tcp rtt");
    j["tcp_rtt_polling_us"] = results.Json("tcp rtt polling");
    j["caf_rtt_us"] = results.Json("caf rtt");
    j["caf_rtt_no_polling_us"] = results.Json("caf rtt no polling");
    for (const char* size : {"1 MiB", "16 MiB"}) {
      j["tcp_gb_per_s"][size] = results.Json(std::string("tcp ") + size);
      for (const char* inflight : {" x1", " x8"}) {
        j["caf_gb_per_s"][std::string(size) + inflight] =
            results.Json(std::string("caf ") + size + inflight);
      }
    }
    j["repeats"] = flags.repeats;
    j["load_average"] = {load_before, load_after};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace actorflow

int main(int argc, char** argv) { return actorflow::bench::Main(argc, argv); }
