// A task's actors (actors/cluster/task_actors.h) spawned into an actor system run by CAF's
// deterministic test coordinator, as a simulated cluster runs them: no sockets, no
// threads of their own, every message delivered by stepping the scheduler.
//
// Runs under CAF's own test engine (the DSL's fixtures need it).

#define CAF_SUITE task_actors
#include <memory>
#include <string>
#include <vector>

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include "actors/protocol/messages.h"
#include "actors/cluster/graph_handoff.h"
#include "actors/cluster/task_actors.h"
#include "graph/graph_json.h"
#include "graph/ops.h"
#include "graph/scope.h"

using namespace actorflow;

namespace {

const char kCpu0[] = "/job:worker/replica:0/task:0/device:CPU:0";
const char kCpu1[] = "/job:worker/replica:0/task:0/device:CPU:1";

ServerOptions TaskOptions(int cpus) {
  ServerOptions options;
  auto cluster = ClusterSpec::FromJson(R"({"worker": ["worker-0.sim:1"]})");
  options.cluster = *cluster;
  options.task = TaskId{"worker", 0};
  options.cpus = cpus;
  return options;
}

struct fixture : test_coordinator_fixture<> {
  TaskActors task = SpawnTaskActors(sys, TaskOptions(2));

  fixture() { Drain(); }
  ~fixture() {
    StopTaskActors(task);
    run();
  }

  // Delivers every pending message without firing timers.
  void Drain() {
    while (sched.try_run_once()) {
    }
  }

  template <class Reply, class... Ts>
  Reply Ask(Ts&&... xs) {
    Reply out{};
    self->send(task.front, std::forward<Ts>(xs)...);
    Drain();
    self->receive([&](Reply& r) { out = std::move(r); });
    return out;
  }

  uint64_t Open(const Scope& root) {
    OpenSessionRequest req;
    req.graph_json = GraphToJson(*root.graph());
    auto opened = Ask<OpenSessionResult>(open_atom::value, req);
    CAF_REQUIRE(opened.status.ok());
    return opened.session_id;
  }

  RemoteStepResult Step(uint64_t session, std::vector<std::string> fetches) {
    RemoteStep step;
    step.session_id = session;
    step.fetches = std::move(fetches);
    return Ask<RemoteStepResult>(remote_step_atom::value, step);
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(task_actors_tests, fixture)

CAF_TEST(the front answers with its task and devices) {
  CAF_CHECK_EQUAL(Ask<std::string>(ping_atom::value),
                  "actorflow server /job:worker/replica:0/task:0");
  auto devices = Ask<std::vector<DevicePeer>>(devices_atom::value);
  CAF_REQUIRE_EQUAL(devices.size(), 2u);
  CAF_CHECK_EQUAL(devices[0].name, kCpu0);
  CAF_CHECK_EQUAL(devices[1].name, kCpu1);
  CAF_CHECK(devices[0].actor == task.devices[0]);
}

CAF_TEST(a session's step crosses the task's devices) {
  Scope root = Scope::NewRootScope();
  auto x = Const(root.WithDevice(kCpu0).WithOpName("x"), 21.0f);
  auto y = Neg(root.WithDevice(kCpu1).WithOpName("y"), x);
  Add(root.WithDevice(kCpu0).WithOpName("z"), y, y);
  CAF_REQUIRE(root.ok());
  const uint64_t session = Open(root);
  RemoteStepResult result = Step(session, {"z"});
  CAF_REQUIRE(result.status.ok());
  CAF_REQUIRE_EQUAL(result.outputs.size(), 1u);
  CAF_CHECK_EQUAL(result.outputs[0].data<float>()[0], -42.0f);
  CAF_CHECK_EQUAL(Ask<Status>(close_atom::value, session).code(), Code::kOk);
  RemoteStepResult closed = Step(session, {"z"});
  CAF_CHECK_EQUAL(closed.status.code(), Code::kFailedPrecondition);
}

CAF_TEST(a graph left in this process opens a session by its ticket once) {
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice(kCpu1).WithOpName("y"), Const(root.WithDevice(kCpu0).WithOpName("x"), 4.0f));
  CAF_REQUIRE(root.ok());
  const std::string endpoint = "worker-0.sim:1";
  graph_handoff::AddTask(endpoint);
  OpenSessionRequest req;
  req.graph_ticket = graph_handoff::Leave(endpoint, root.graph()->Clone());
  graph_handoff::RemoveTask(endpoint);
  CAF_REQUIRE_NOT_EQUAL(req.graph_ticket, 0u);
  auto opened = Ask<OpenSessionResult>(open_atom::value, req);
  CAF_REQUIRE(opened.status.ok());
  RemoteStepResult result = Step(opened.session_id, {"y"});
  CAF_REQUIRE(result.status.ok());
  CAF_CHECK_EQUAL(result.outputs[0].data<float>()[0], -4.0f);
  CAF_CHECK(graph_handoff::Take(req.graph_ticket) == nullptr);

  // Taken: the same ticket names nothing now, as one from another process would.
  auto again = Ask<OpenSessionResult>(open_atom::value, req);
  CAF_CHECK_EQUAL(again.status.code(), Code::kInvalidArgument);
  CAF_CHECK(again.status.message().find("ticket " + std::to_string(req.graph_ticket)) !=
            std::string::npos);
}

CAF_TEST(a killed device is replaced and the next step runs on the new one) {
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice(kCpu1).WithOpName("y"), Const(root.WithDevice(kCpu1).WithOpName("x"), 5.0f));
  CAF_REQUIRE(root.ok());
  const uint64_t session = Open(root);
  CAF_REQUIRE(Step(session, {"y"}).status.ok());
  caf::anon_send_exit(task.devices[1], caf::exit_reason::kill);
  Drain();
  auto devices = Ask<std::vector<DevicePeer>>(devices_atom::value);
  CAF_REQUIRE_EQUAL(devices.size(), 2u);
  CAF_CHECK(devices[1].actor != task.devices[1]);
  // The session's master learned of the restart and registers its partition again.
  RemoteStepResult again = Step(session, {"y"});
  CAF_REQUIRE(again.status.ok());
  CAF_CHECK_EQUAL(again.outputs[0].data<float>()[0], -5.0f);
}

CAF_TEST(stopping the task ends its front and devices) {
  self->monitor(task.front);
  self->monitor(task.devices[0]);
  StopTaskActors(task);
  Drain();
  int down = 0;
  for (int i = 0; i < 2; ++i) self->receive([&](caf::down_msg&) { ++down; });
  CAF_CHECK_EQUAL(down, 2);
  CAF_CHECK(!task.front);
}

CAF_TEST_FIXTURE_SCOPE_END()
