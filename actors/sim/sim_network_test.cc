// The tasks of a cluster in one actor system under CAF's deterministic test
// coordinator: their masters find each other through per-task directories, and every
// message between tasks crosses a link proxy that takes the link's time on the
// virtual clock, applies the fault plan and logs it. The seed of a simulated
// cluster. No sockets, no threads, every message delivered by stepping the scheduler.
//
// Runs under CAF's own test engine (the DSL's fixtures need it).

#define CAF_SUITE sim_network
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include "actors/protocol/messages.h"
#include "actors/sim/sim_cluster_spec.h"
#include "actors/sim/fault_plan.h"
#include "actors/sim/task_directory.h"
#include "actors/cluster/task_actors.h"
#include "graph/graph_json.h"
#include "graph/ops.h"
#include "graph/scope.h"

using namespace actorflow;

namespace {

struct fixture : test_coordinator_fixture<> {
  ClusterSpec cluster;
  std::shared_ptr<TaskRegistry> registry = std::make_shared<TaskRegistry>();
  std::shared_ptr<SimNetwork> network;
  std::vector<ConnectorActor> directories;
  std::vector<TaskActors> tasks;

  fixture() {
    auto shape = ParseSimClusterSpec("sim:ps=1,worker=2");
    auto spec = shape->ToClusterSpec();
    cluster = *spec;
  }

  ~fixture() {
    for (TaskActors& t : tasks) StopTaskActors(t);
    for (auto& d : directories) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
    run();
    if (network) network->Clear();
  }

  // Messages between tasks cross `plan` over links of `latency_us` at 8 Gbit/s.
  void WithNetwork(const std::string& plan, double latency_us) {
    auto faults = ParseFaultPlan(plan, cluster);
    CAF_REQUIRE(faults.ok());
    LinkModel link;
    link.latency_us = latency_us;
    link.bandwidth_gbps = 8;
    network = std::make_shared<SimNetwork>(sys, FaultInjector(*faults, link, /*seed=*/1));
  }

  // Starts the cluster's tasks; `registered` says which of them the registry lists.
  void Start(const std::vector<TaskId>& registered) {
    for (const TaskId& id : cluster.AllTasks()) {
      ServerOptions options;
      options.cluster = cluster;
      options.task = id;
      directories.push_back(SpawnTaskDirectory(sys, registry, id, network));
      tasks.push_back(SpawnTaskActors(sys, options, directories.back()));
      if (std::find(registered.begin(), registered.end(), id) != registered.end()) {
        registry->Put(cluster.Address(id)->ToString(), id, tasks.back().front);
      }
    }
    Drain();
  }

  void Drain() {
    while (sched.try_run_once()) {
    }
  }

  FrontActor Front(const TaskId& id) {
    const auto all = cluster.AllTasks();
    return tasks[std::find(all.begin(), all.end(), id) - all.begin()].front;
  }

  // Sends to a task's front and runs the cluster, firing timers in virtual-time
  // order, until the answer arrives (at most `max_timers` timers).
  template <class Reply, class... Ts>
  Reply Ask(const FrontActor& front, Ts&&... xs) {
    Reply out{};
    bool answered = false;
    self->send(front, std::forward<Ts>(xs)...);
    for (int timers = 0; timers < 10000 && !answered; ++timers) {
      Drain();
      self->receive([&](Reply& r) {
        out = std::move(r);
        answered = true;
      }, caf::after(std::chrono::seconds(0)) >> [] {});
      if (!answered && !sched.trigger_timeout()) break;
    }
    CAF_REQUIRE(answered);
    return out;
  }

  RemoteStepResult RunOn(const TaskId& id, const Scope& root, std::vector<std::string> fetches,
                         int64_t timeout_ms = 0) {
    OpenSessionRequest req;
    req.graph_json = GraphToJson(*root.graph());
    auto opened = Ask<OpenSessionResult>(Front(id), open_atom::value, req);
    CAF_REQUIRE(opened.status.ok());
    RemoteStep step;
    step.session_id = opened.session_id;
    step.fetches = std::move(fetches);
    step.timeout_in_ms = timeout_ms;
    return Ask<RemoteStepResult>(Front(id), remote_step_atom::value, step);
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(sim_network_tests, fixture)

CAF_TEST(a step crosses three tasks of one actor system) {
  Start(cluster.AllTasks());
  Scope root = Scope::NewRootScope();
  auto w = Const(root.WithDevice("/job:ps/task:0").WithOpName("w"), 3.0f);
  auto x = Const(root.WithDevice("/job:worker/task:1").WithOpName("x"), 7.0f);
  auto y = Mul(root.WithDevice("/job:worker/task:1").WithOpName("y"), w, x);
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("z"), y);
  CAF_REQUIRE(root.ok());
  RemoteStepResult result = RunOn({"worker", 0}, root, {"z"});
  CAF_REQUIRE(result.status.ok());
  CAF_CHECK_EQUAL(result.outputs[0].data<float>()[0], -21.0f);
}

CAF_TEST(a task the directory does not list is named in the error of the step) {
  Start({{"worker", 0}, {"ps", 0}});
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithDevice("/job:worker/task:1").WithOpName("x"), 7.0f);
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("z"), x);
  CAF_REQUIRE(root.ok());
  RemoteStepResult result = RunOn({"worker", 0}, root, {"z"});
  CAF_CHECK_EQUAL(result.status.code(), Code::kUnavailable);
  CAF_CHECK(result.status.message().find("/job:worker/task:1") != std::string::npos);
  CAF_CHECK(result.status.message().find("worker-1.sim:1") != std::string::npos);
}

CAF_TEST(messages between tasks take the link time on the virtual clock and are logged) {
  WithNetwork(R"({"faults": []})", /*latency_us=*/250);
  Start(cluster.AllTasks());
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithDevice("/job:worker/task:1").WithOpName("x"), 7.0f);
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("z"), x);
  CAF_REQUIRE(root.ok());
  const auto before = sys.clock().now();
  RemoteStepResult result = RunOn({"worker", 0}, root, {"z"});
  CAF_REQUIRE(result.status.ok());
  CAF_CHECK_EQUAL(result.outputs[0].data<float>()[0], -7.0f);
  // At least: connect answer, device list, registration and its answer, the run and
  // its answer, the tensor: each a link crossing of 250 us.
  CAF_CHECK_GREATER_OR_EQUAL(sys.clock().now() - before, std::chrono::microseconds(250 * 5));
  const EventLog& log = network->log();
  CAF_CHECK_GREATER_OR_EQUAL(log.Count(SimEvent::Kind::kDelivered), 5u);
  CAF_CHECK_EQUAL(log.Count(SimEvent::Kind::kDropped), 0u);
  bool tensor_crossed = false;
  for (const SimEvent& e : log.events()) {
    CAF_CHECK_NOT_EQUAL(e.from, e.to);
    tensor_crossed = tensor_crossed || (e.message_kind == "tensor" && e.from == "/job:worker/task:1" &&
                                        e.to == "/job:worker/task:0" && e.bytes == 64 + 4);
  }
  CAF_CHECK(tensor_crossed);
}

CAF_TEST(a dropped tensor ends the step at its deadline and is counted) {
  WithNetwork(R"({"faults": [{"drop": {"from": "/job:worker/task:1", "kind": "tensor"}}]})", 100);
  Start(cluster.AllTasks());
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithDevice("/job:worker/task:1").WithOpName("x"), 7.0f);
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("z"), x);
  CAF_REQUIRE(root.ok());
  RemoteStepResult result = RunOn({"worker", 0}, root, {"z"}, /*timeout_ms=*/500);
  CAF_CHECK_EQUAL(result.status.code(), Code::kDeadlineExceeded);
  CAF_CHECK_EQUAL(network->log().Count(SimEvent::Kind::kDropped), 1u);
}

CAF_TEST_FIXTURE_SCOPE_END()
