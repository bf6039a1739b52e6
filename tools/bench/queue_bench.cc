// Queue throughput from enqueue to dequeue, in elements/s, for 1-float elements
// (float32 []) and 64 KiB elements (float32 [16384]):
//   in-process    an ActorSession; a producer thread runs QueueEnqueue steps and a
//                 consumer thread QueueDequeue steps at the same time (one element
//                 per Session::Run), and the same with EnqueueMany/DequeueMany of
//                 --many elements per step;
//   across        a LocalCluster (ps + worker, servers talking over loopback TCP as
//   processes     separate processes do): the queue on the ps task, producer and
//                 consumer sessions on the worker, so every element crosses to the ps
//                 task and back as a raw byte block.
// The queue has capacity 64, so producer and consumer really run together. Each
// figure is elements / wall time from the first enqueue to the last dequeue; rounds
// give min / median / max.
//
// Usage: queue_bench [--quick] [--json] [--rounds N] [--many N]
// Build with -c opt: `bazel build -c opt //tools/bench:queue_bench`.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "tools/bench/bench_util.h"

namespace actorflow {
namespace bench {
namespace {

constexpr char kProgram[] = "queue_bench";

struct QueueGraph {
  Scope root = Scope::NewRootScope();
  QueueGraph(const std::string& queue_device, const std::string& client_device, int64_t elements,
             int64_t many) {
    Scope on = queue_device.empty() ? root : root.WithDevice(queue_device);
    Scope client = client_device.empty() ? root : root.WithDevice(client_device);
    // One queue per element shape: a task keeps its queues across sessions.
    Queue q = FIFOQueue(on.WithOpName("q"), {DType::kFloat32}, {Shape{elements}}, 64,
                        "q_" + std::to_string(elements));
    auto x = Placeholder(client.WithOpName("x"), DType::kFloat32, Shape{elements});
    auto xs = Placeholder(client.WithOpName("xs"), DType::kFloat32, Shape{many, elements});
    QueueEnqueue(root.WithOpName("enqueue"), q, {x});
    QueueEnqueueMany(root.WithOpName("enqueue_many"), q, {xs});
    // Fetched on the client's device: across processes the element travels back.
    Identity(client.WithOpName("y"), QueueDequeue(root.WithOpName("dequeue"), q)[0]);
    Identity(client.WithOpName("ys"), QueueDequeueMany(root.WithOpName("dequeue_many"), q, many)[0]);
    Status s = root.status();
    if (!s.ok()) Die(kProgram, "building the graph", s);
  }
};

// Elements/s of `steps` producer steps against `steps` consumer steps.
double Throughput(Session* producer, Session* consumer, int64_t elements, int64_t many,
                  int64_t steps) {
  const bool batched = many > 1;
  Tensor value = batched ? Tensor(DType::kFloat32, Shape{many, elements})
                         : Tensor(DType::kFloat32, Shape{elements});
  const std::string feed = batched ? "xs" : "x";
  const std::string enqueue = batched ? "enqueue_many" : "enqueue";
  const std::string fetch = batched ? "ys" : "y";
  const auto start = Clock::now();
  std::thread produce([&] {
    for (int64_t i = 0; i < steps; ++i) {
      Status s = producer->Run({{feed, value}}, {}, {enqueue}, nullptr);
      if (!s.ok()) Die(kProgram, "enqueue", s);
    }
  });
  std::vector<Tensor> out;
  for (int64_t i = 0; i < steps; ++i) {
    Status s = consumer->Run({}, {fetch}, {}, &out);
    if (!s.ok()) Die(kProgram, "dequeue", s);
  }
  produce.join();
  return static_cast<double>(steps * (batched ? many : 1)) / SecondsSince(start);
}

struct Case {
  std::string name;
  int64_t elements;  // floats per element
  int64_t many;      // elements per step
  bool cluster;
  std::vector<double> rates;
};

}  // namespace

int Main(int argc, char** argv) {
  bool quick = false, json = false;
  int rounds = 5;
  int64_t many = 64;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--json")) json = true;
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--many") && i + 1 < argc) many = std::atoll(argv[++i]);
  }
  if (quick) rounds = 2;
  const int64_t kSmall = 1, kLarge = 16384;  // 4 B and 64 KiB
  std::vector<Case> cases = {
      {"in-process, 1 float, 1/step", kSmall, 1, false, {}},
      {"in-process, 64 KiB, 1/step", kLarge, 1, false, {}},
      {"in-process, 1 float, many/step", kSmall, many, false, {}},
      {"in-process, 64 KiB, many/step", kLarge, many, false, {}},
      {"across processes, 1 float, 1/step", kSmall, 1, true, {}},
      {"across processes, 64 KiB, 1/step", kLarge, 1, true, {}},
      {"across processes, 1 float, many/step", kSmall, many, true, {}},
      {"across processes, 64 KiB, many/step", kLarge, many, true, {}},
  };
  auto cluster = ValueOrDie(LocalCluster::Start({{"ps", 1}, {"worker", 1}}), kProgram,
                            "starting the local cluster");
  const std::string worker = ValueOrDie(cluster->Target("worker", 0), kProgram, "worker target");
  for (int round = 0; round < rounds; ++round) {
    for (Case& c : cases) {
      QueueGraph g(c.cluster ? "/job:ps/task:0" : "", c.cluster ? "/job:worker/task:0" : "",
                   c.elements, c.many);
      SessionOptions options;
      if (c.cluster) options.target = worker;
      auto producer = ValueOrDie(NewSession(g.root.graph(), options), kProgram, "session");
      // In-process, both threads share one session (one task, one queue registry).
      std::unique_ptr<Session> other;
      Session* consumer = producer.get();
      if (c.cluster) {
        other = ValueOrDie(NewSession(g.root.graph(), options), kProgram, "session");
        consumer = other.get();
      }
      const int64_t bytes = c.elements * 4 * c.many;
      int64_t steps = bytes >= (1 << 20) ? 200 : (c.cluster ? 2000 : 5000);
      if (quick) steps /= 4;
      Throughput(producer.get(), consumer, c.elements, c.many, steps / 10);  // warm-up
      WaitQuiet(0.2, 1.0, quick ? 2.0 : 30.0);
      c.rates.push_back(Throughput(producer.get(), consumer, c.elements, c.many, steps));
    }
  }
  nlohmann::json j;
  std::printf("queue throughput, enqueue -> dequeue (elements/s, min / median / max of %d)\n",
              rounds);
  for (const Case& c : cases) {
    Stats s = Summarize(c.rates);
    const double mb = s.median * c.elements * 4 / 1e6;
    std::printf("  %-40s %s  (%.1f MB/s)\n", c.name.c_str(), Triple(s, "%.0f").c_str(), mb);
    j[c.name] = StatsJson(s);
  }
  if (json) std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace bench
}  // namespace actorflow

int main(int argc, char** argv) { return actorflow::bench::Main(argc, argv); }
