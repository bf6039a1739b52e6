// The step protocol under CAF's deterministic test coordinator: a master with two
// worker tasks, a tensor crossing tasks through Send/Recv, a deadline on the
// virtual clock, a worker dying in the middle of a step, and run metadata recorded
// only for a client that asks for it. No threads, no sockets, no sleeps: every
// message is delivered by stepping the scheduler.
//
// Runs under CAF's own test engine (the DSL's fixtures need it).

#define CAF_SUITE step_protocol
#include <map>
#include <memory>
#include <vector>

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>
#include <gmock/gmock.h>

#include "actors/runtime/device_actor.h"
#include "actors/runtime/master_actor.h"
#include "actors/protocol/messages.h"
#include "graph/ops.h"
#include "graph/scope.h"

using namespace actorflow;

namespace {

const char kTask0[] = "/job:worker/replica:0/task:0/device:CPU:0";
const char kTask1[] = "/job:worker/replica:0/task:1/device:CPU:0";

struct fixture : test_coordinator_fixture<> {
  Scope root = Scope::NewRootScope();
  DeviceActor task0;
  DeviceActor task1;
  MasterActor master;

  DeviceActor Device(const std::string& name) {
    DeviceConfig c;
    c.name = name;
    c.type = "CPU";
    c.resources = std::make_shared<ResourceManager>();
    return SpawnDeviceActor(sys, c);
  }

  // Builds the graph with `build`, then starts two worker tasks and a master.
  void Start() {
    task0 = Device(kTask0);
    task1 = Device(kTask1);
    std::vector<DevicePeer> peers{{kTask0, "CPU", task0}, {kTask1, "CPU", task1}};
    caf::anon_send(task0, peers_atom::value, peers);
    caf::anon_send(task1, peers_atom::value, peers);
    MasterConfig mc;
    mc.graph = root.graph();
    mc.devices = {DeviceInfo{kTask0, "CPU"}, DeviceInfo{kTask1, "CPU"}};
    mc.device_actors = {task0, task1};
    mc.default_device = kTask0;
    master = SpawnMasterActor(sys, mc);
    Drain();
  }

  // An in-process client's step, saying whether it wants RunMetadata.
  std::shared_ptr<StepReply> StepAsking(std::vector<std::string> fetches, bool metadata,
                                        bool trace) {
    auto req = std::make_shared<StepRequest>();
    req->fetches = std::move(fetches);
    if (trace) req->options.trace_level = RunOptions::TraceLevel::kFullTrace;
    req->reply = std::make_shared<StepReply>();
    req->want_metadata = metadata;
    auto reply = req->reply;
    caf::anon_send(master, step_atom::value, std::move(req));
    return reply;
  }

  std::shared_ptr<StepReply> Step(std::vector<std::string> fetches, int64_t timeout_ms = 0) {
    auto req = std::make_shared<StepRequest>();
    req->fetches = std::move(fetches);
    req->options.timeout_in_ms = timeout_ms;
    req->reply = std::make_shared<StepReply>();
    auto reply = req->reply;
    caf::anon_send(master, step_atom::value, std::move(req));
    return reply;
  }

  // Delivers every pending message without firing timers: time moves only when a
  // test advances the virtual clock.
  void Drain() {
    while (sched.try_run_once()) {
    }
  }

  DeviceStats Stats(const DeviceActor& device) {
    DeviceStats out;
    self->send(device, device_stats_atom::value);
    Drain();
    self->receive([&](DeviceStats& s) { out = s; });
    return out;
  }

  MasterStats StatsOf(const MasterActor& m) {
    MasterStats out;
    self->send(m, master_stats_atom::value);
    Drain();
    self->receive([&](MasterStats& s) { out = s; });
    return out;
  }

  ~fixture() {
    if (master) caf::anon_send_exit(master, caf::exit_reason::user_shutdown);
    for (auto& a : {task0, task1}) {
      if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    }
    run();
  }
};

bool HasText(const std::string& text, const std::string& part) {
  return ::testing::Value(text, ::testing::HasSubstr(part));
}

// How the master asked a device to run a partition.
struct RunAsked {
  bool record = false;
  bool collect_stats = false;
};

// A stand-in device: accepts every partition, answers each run with 7 per fetch and,
// when asked to record, one executed node "c" (with stats when asked for those too),
// and notes how each run asked.
DeviceActor::behavior_type RecordingDevice(DeviceActor::pointer,
                                           std::shared_ptr<std::vector<RunAsked>> asked) {
  auto fetches = std::make_shared<std::map<uint64_t, size_t>>();
  return {
      [fetches](deregister_atom, const std::vector<uint64_t>& ids) -> Status {
        for (uint64_t id : ids) fetches->erase(id);
        return Status::OK();
      },
      [](tensor_atom, const TensorDelivery&) {},
      [](abort_atom, const AbortRequest&) {},
      [](peers_atom, const std::vector<DevicePeer>&) {},
      [fetches](device_stats_atom) -> DeviceStats {
        DeviceStats s;
        s.partitions = static_cast<int64_t>(fetches->size());
        return s;
      },
      [](resume_atom, Closure& c) { c.fn(); },
      [](recv_timeout_atom, const std::string&) {},
      // The master never sends one (only an in-process session does).
      [](direct_run_atom, std::shared_ptr<DirectRun>&) {},
      [fetches](register_atom, const PartitionRegistration& reg) -> Status {
        (*fetches)[reg.partition_id] = reg.partition->fetches.size();
        return Status::OK();
      },
      [asked, fetches](run_atom, RunPartitionRequest& req) -> RunPartitionResult {
        const bool record = req.record_executed;
        asked->push_back(RunAsked{record, req.collect_stats});
        RunPartitionResult r;
        r.fetches.assign((*fetches)[req.partition_id], Tensor::Scalar(7.0f));
        if (record) {
          r.executed_nodes = {"c"};
          r.executed_start_micros = {0};
        }
        if (record && req.collect_stats) {
          NodeExecStats stats;
          stats.node_name = "c";
          stats.op = "Const";
          stats.device = kTask0;
          r.step_stats = {stats};
        }
        return r;
      },
  };
}

}  // namespace

CAF_TEST_FIXTURE_SCOPE(step_protocol_tests, fixture)

CAF_TEST(a tensor crosses tasks through send and recv) {
  auto x = Const(root.WithDevice("/job:worker/task:0").WithOpName("x"), 21.0f);
  auto y = Neg(root.WithDevice("/job:worker/task:1").WithOpName("y"), x);
  Add(root.WithDevice("/job:worker/task:0").WithOpName("z"), y, y);
  CAF_REQUIRE(root.ok());
  Start();
  auto reply = Step({"z"});
  Drain();
  CAF_REQUIRE(reply->done);
  CAF_REQUIRE(reply->status.ok());
  CAF_CHECK_EQUAL(reply->outputs[0].data<float>()[0], -42.0f);
  CAF_CHECK_EQUAL(Stats(task0).pending_recvs, 0);
  CAF_CHECK_EQUAL(Stats(task1).inbox_tensors, 0);
}

CAF_TEST(a deadline on the virtual clock aborts both tasks) {
  auto x = Const(root.WithDevice("/job:worker/task:1").WithOpName("x"), 1.0f);
  const Node* slow = root.WithDevice("/job:worker/task:1").WithOpName("slow").AddNode(
      "TestDelay", {x}, {{"delay_ms", AttrValue(int64_t{60000})}});
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("waiting"), Output(slow));
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("quick"), x);
  CAF_REQUIRE(root.ok());
  Start();
  auto reply = Step({"waiting"}, /*timeout_ms=*/100);
  Drain();
  CAF_CHECK(!reply->done);
  CAF_CHECK_EQUAL(Stats(task0).pending_recvs, 1);
  sched.advance_time(std::chrono::milliseconds(150));  // past the deadline only
  Drain();
  CAF_REQUIRE(reply->done);
  CAF_CHECK_EQUAL(reply->status.code(), Code::kDeadlineExceeded);
  CAF_CHECK_EQUAL(Stats(task0).pending_recvs, 0);
  CAF_CHECK_EQUAL(Stats(task0).active_steps, 0);
  CAF_CHECK_EQUAL(Stats(task1).active_steps, 0);
  auto next = Step({"quick"}, 100);
  Drain();
  CAF_REQUIRE(next->done);
  CAF_REQUIRE(next->status.ok());
  CAF_CHECK_EQUAL(next->outputs[0].data<float>()[0], -1.0f);
}

// The master keeps one timer for its steps' deadlines: a step whose deadline comes
// before that of a step already in flight must still end at its own.
CAF_TEST(a later step with an earlier deadline ends at its own deadline) {
  auto x = Const(root.WithDevice("/job:worker/task:1").WithOpName("x"), 1.0f);
  const Node* slow = root.WithDevice("/job:worker/task:1").WithOpName("slow").AddNode(
      "TestDelay", {x}, {{"delay_ms", AttrValue(int64_t{60000})}});
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("waiting"), Output(slow));
  CAF_REQUIRE(root.ok());
  Start();
  auto patient = Step({"waiting"}, /*timeout_ms=*/10000);
  Drain();
  auto hasty = Step({"waiting"}, /*timeout_ms=*/100);
  Drain();
  CAF_CHECK(!patient->done);
  CAF_CHECK(!hasty->done);
  sched.advance_time(std::chrono::milliseconds(150));
  Drain();
  CAF_REQUIRE(hasty->done);
  CAF_CHECK_EQUAL(hasty->status.code(), Code::kDeadlineExceeded);
  CAF_CHECK(HasText(hasty->status.message(), "deadline of 100 ms"));
  CAF_CHECK(!patient->done);
  sched.advance_time(std::chrono::milliseconds(10000));
  Drain();
  CAF_REQUIRE(patient->done);
  CAF_CHECK_EQUAL(patient->status.code(), Code::kDeadlineExceeded);
  CAF_CHECK(HasText(patient->status.message(), "deadline of 10000 ms"));
  CAF_CHECK_EQUAL(Stats(task0).active_steps, 0);
}

CAF_TEST(a worker dying mid step fails that step naming it) {
  auto x = Const(root.WithDevice("/job:worker/task:1").WithOpName("x"), 1.0f);
  const Node* slow = root.WithDevice("/job:worker/task:1").WithOpName("slow").AddNode(
      "TestDelay", {x}, {{"delay_ms", AttrValue(int64_t{60000})}});
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("waiting"), Output(slow));
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("local"),
      Const(root.WithDevice("/job:worker/task:0").WithOpName("c"), 2.0f));
  CAF_REQUIRE(root.ok());
  Start();
  auto reply = Step({"waiting"});
  Drain();
  CAF_CHECK(!reply->done);
  caf::anon_send_exit(task1, caf::exit_reason::kill);
  Drain();
  CAF_REQUIRE(reply->done);
  CAF_CHECK_EQUAL(reply->status.code(), Code::kUnavailable);
  CAF_CHECK(HasText(reply->status.message(), "/job:worker/replica:0/task:1"));
  CAF_CHECK_EQUAL(Stats(task0).pending_recvs, 0);
  auto later = Step({"local"});
  Drain();
  CAF_REQUIRE(later->done);
  CAF_REQUIRE(later->status.ok());
  CAF_CHECK_EQUAL(later->outputs[0].data<float>()[0], -2.0f);
  task1 = DeviceActor{};
}

CAF_TEST(devices record nodes only for a client that wants run metadata) {
  Const(root.WithDevice("/job:worker/task:0").WithOpName("c"), 1.0f);
  CAF_REQUIRE(root.ok());
  auto asked = std::make_shared<std::vector<RunAsked>>();
  task0 = sys.spawn(RecordingDevice, asked);
  MasterConfig mc;
  mc.graph = root.graph();
  mc.devices = {DeviceInfo{kTask0, "CPU"}};
  mc.device_actors = {task0};
  mc.default_device = kTask0;
  master = SpawnMasterActor(sys, mc);
  Drain();

  // No metadata wanted, traced or not: the devices record nothing.
  for (bool trace : {false, true}) {
    auto quiet = StepAsking({"c"}, /*metadata=*/false, trace);
    Drain();
    CAF_REQUIRE(quiet->done);
    CAF_REQUIRE(quiet->status.ok());
    CAF_CHECK_EQUAL(quiet->outputs[0].data<float>()[0], 7.0f);
    CAF_CHECK(quiet->metadata.executed_nodes.empty());
    CAF_CHECK(quiet->metadata.step_stats.empty());
    CAF_REQUIRE_EQUAL(asked->size(), 1u);
    CAF_CHECK(!asked->back().record);
    CAF_CHECK(!asked->back().collect_stats);
    asked->clear();
  }

  // Wanted and traced: executed nodes and stats.
  auto traced = StepAsking({"c"}, /*metadata=*/true, /*trace=*/true);
  Drain();
  CAF_REQUIRE(traced->done);
  CAF_REQUIRE(traced->status.ok());
  CAF_REQUIRE_EQUAL(asked->size(), 1u);
  CAF_CHECK(asked->back().record);
  CAF_CHECK(asked->back().collect_stats);
  CAF_CHECK_EQUAL(traced->metadata.executed_nodes, std::vector<std::string>{"c"});
  CAF_CHECK_EQUAL(traced->metadata.step_stats.size(), 1u);
  asked->clear();

  // A request that leaves want_metadata at its default gets the executed nodes.
  auto remote = Step({"c"});
  Drain();
  CAF_REQUIRE(remote->done);
  CAF_REQUIRE(remote->status.ok());
  CAF_REQUIRE_EQUAL(asked->size(), 1u);
  CAF_CHECK(asked->back().record);
  CAF_CHECK(!asked->back().collect_stats);
  CAF_CHECK_EQUAL(remote->metadata.executed_nodes, std::vector<std::string>{"c"});
  CAF_CHECK(remote->metadata.step_stats.empty());
}

CAF_TEST(closing a session deregisters its partitions from every device) {
  auto x = Const(root.WithDevice("/job:worker/task:0").WithOpName("x"), 3.0f);
  auto y = Neg(root.WithDevice("/job:worker/task:1").WithOpName("y"), x);
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("z"), y);
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("local"), x);
  CAF_REQUIRE(root.ok());
  Start();
  for (const char* fetch : {"z", "local"}) {  // two plans, three partitions
    auto reply = Step({fetch});
    Drain();
    CAF_REQUIRE(reply->done);
    CAF_REQUIRE(reply->status.ok());
  }
  CAF_CHECK_EQUAL(Stats(task0).partitions, 2);
  CAF_CHECK_EQUAL(Stats(task1).partitions, 1);
  MasterStats before = StatsOf(master);
  CAF_CHECK_EQUAL(before.plans, 2);
  CAF_CHECK_EQUAL(before.partitions, 3);

  auto closed = std::make_shared<Status>(Internal("no answer"));
  MasterActor m = master;
  sys.spawn([m, closed](caf::event_based_actor* asker) {
    asker->request(m, caf::infinite, close_atom::value).then([closed](Status& s) {
      *closed = s;
    });
  });
  Drain();
  CAF_CHECK(closed->ok());
  CAF_CHECK_EQUAL(Stats(task0).partitions, 0);
  CAF_CHECK_EQUAL(Stats(task1).partitions, 0);
  MasterStats after = StatsOf(master);
  CAF_CHECK_EQUAL(after.plans, 0);
  CAF_CHECK_EQUAL(after.partitions, 0);
  CAF_CHECK(after.closed);

  // A closed session runs nothing more.
  auto late = Step({"local"});
  Drain();
  CAF_REQUIRE(late->done);
  CAF_CHECK_EQUAL(late->status.code(), Code::kFailedPrecondition);
}

CAF_TEST(two masters sharing a device never share a step or partition id) {
  auto x = Const(root.WithDevice("/job:worker/task:0").WithOpName("x"), 1.0f);
  Neg(root.WithDevice("/job:worker/task:0").WithOpName("n"), x);
  CAF_REQUIRE(root.ok());
  Start();
  MasterConfig mc;
  mc.graph = root.graph();
  mc.devices = {DeviceInfo{kTask0, "CPU"}, DeviceInfo{kTask1, "CPU"}};
  mc.device_actors = {task0, task1};
  mc.default_device = kTask0;
  MasterActor second = SpawnMasterActor(sys, mc);
  // Both masters' partitions sit on task0 side by side and both run.
  for (int round = 0; round < 3; ++round) {
    for (MasterActor m : {master, second}) {
      auto req = std::make_shared<StepRequest>();
      req->fetches = {"n"};
      req->reply = std::make_shared<StepReply>();
      auto reply = req->reply;
      caf::anon_send(m, step_atom::value, std::move(req));
      Drain();
      CAF_REQUIRE(reply->done);
      CAF_REQUIRE(reply->status.ok());
      CAF_CHECK_EQUAL(reply->outputs[0].data<float>()[0], -1.0f);
    }
  }
  CAF_CHECK_EQUAL(Stats(task0).partitions, 2);
  caf::anon_send_exit(second, caf::exit_reason::user_shutdown);
}

CAF_TEST_FIXTURE_SCOPE_END()
