// Two tasks of a cluster in one actor system under CAF's deterministic test
// coordinator, their masters finding each other through the task directory: the
// seed of a simulated cluster. No sockets, no threads, every message delivered by
// stepping the scheduler.
//
// Runs under CAF's own test engine (the DSL's fixtures need it).

#define CAF_SUITE task_directory
#include <memory>
#include <string>
#include <vector>

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include "actors/messages.h"
#include "actors/sim/sim_cluster_spec.h"
#include "actors/sim/task_directory.h"
#include "actors/task_actors.h"
#include "graph/graph_json.h"
#include "graph/ops.h"
#include "graph/scope.h"

using namespace actorflow;

namespace {

struct fixture : test_coordinator_fixture<> {
  ClusterSpec cluster;
  TaskDirectoryActor directory = SpawnTaskDirectory(sys);
  std::vector<TaskActors> tasks;

  fixture() {
    auto shape = ParseSimClusterSpec("sim:ps=1,worker=2");
    auto spec = shape->ToClusterSpec();
    cluster = *spec;
  }

  ~fixture() {
    for (TaskActors& t : tasks) StopTaskActors(t);
    caf::anon_send_exit(directory, caf::exit_reason::user_shutdown);
    run();
  }

  // Starts the cluster's tasks; `registered` says which of them the directory lists.
  void Start(const std::vector<TaskId>& registered) {
    for (const TaskId& id : cluster.AllTasks()) {
      ServerOptions options;
      options.cluster = cluster;
      options.task = id;
      tasks.push_back(SpawnTaskActors(sys, options, directory));
      if (std::find(registered.begin(), registered.end(), id) != registered.end()) {
        self->send(directory, directory_put_atom::value, cluster.Address(id)->ToString(),
                   tasks.back().front);
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

  template <class Reply, class... Ts>
  Reply Ask(const FrontActor& front, Ts&&... xs) {
    Reply out{};
    self->send(front, std::forward<Ts>(xs)...);
    Drain();
    self->receive([&](Reply& r) { out = std::move(r); });
    return out;
  }

  RemoteStepResult RunOn(const TaskId& id, const Scope& root, std::vector<std::string> fetches) {
    OpenSessionRequest req;
    req.graph_json = GraphToJson(*root.graph());
    auto opened = Ask<OpenSessionResult>(Front(id), open_atom::value, req);
    CAF_REQUIRE(opened.status.ok());
    RemoteStep step;
    step.session_id = opened.session_id;
    step.fetches = std::move(fetches);
    return Ask<RemoteStepResult>(Front(id), remote_step_atom::value, step);
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(task_directory_tests, fixture)

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

CAF_TEST_FIXTURE_SCOPE_END()
