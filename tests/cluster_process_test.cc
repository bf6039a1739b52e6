// Clusters of real processes on 127.0.0.1: `actorflow server` tasks (1 ps, 2
// workers) on free ports, driven by clients in this process (NewSession on
// actorflow://...) and by `actorflow run --target`. The same scenarios as
// actors/cluster/local_cluster_test.cc, where a lost task is a killed process (SIGKILL):
// the slides' ps/worker example across two clients, a worker killed mid-step, an
// unreachable task, and bad input to the server and the client.
//
// Every wait is bounded; no sleeps, no fixed ports. Steps that must wait inside a
// server run on //tests:test_server (the server plus the test-only ops), and
// TestSignalFifo tells this process that a step has reached a node over there.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <future>

#include "actors/cluster/remote_session.h"
#include "actors/cluster/session_factory.h"
#include "graph/graph_json.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "tests/cluster_test_kit.h"
#include "tests/process_cluster.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using subprocess::ActorflowBinary;
using subprocess::ChildProcess;
using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;
using subprocess::StartTestCluster;
using subprocess::TestTmpDir;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using ::testing::HasSubstr;

std::string TestServerBinary() { return subprocess::Runfile("tests/test_server"); }

std::string WriteTmpFile(const std::string& name, const std::string& text) {
  std::string path = TestTmpDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::unique_ptr<ProcessCluster> StartCluster(const std::string& binary,
                                             ProcessClusterOptions options = {}) {
  options.binary = binary;
  options.shape = {{"ps", 1}, {"worker", 2}};
  return StartTestCluster(std::move(options));
}

std::unique_ptr<Session> Open(const Graph* graph, const std::string& target) {
  SessionOptions options;
  options.target = target;
  auto session = NewSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

// Runs a command to its end, at most `timeout`; a child still running then is
// killed (and the test fails).
std::unique_ptr<ChildProcess> RunToEnd(const std::string& binary,
                                       const std::vector<std::string>& args,
                                       milliseconds timeout = milliseconds(60000)) {
  std::string error;
  auto child = ChildProcess::Start(binary, args, &error);
  EXPECT_NE(child, nullptr) << error;
  if (child == nullptr) return nullptr;
  EXPECT_TRUE(child->WaitForExit(timeout)) << binary << " did not end within "
                                           << timeout.count() << " ms";
  child->Kill();
  return child;
}

// The slides' example: the weights live on the ps task, each worker computes.
void BuildSlidesModel(const Scope& root) {
  Scope ps = root.WithDevice("/job:ps/task:0");
  auto w = Variable(ps.WithOpName("w"), Shape{2}, DType::kFloat32);
  Assign(ps.WithOpName("w_init"), w, Const(ps.WithOpName("w0"), Tensor::FromVector<float>({1, 2})));
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{2});
  Scope w0 = root.WithDevice("/job:worker/task:0");
  Scope w1 = root.WithDevice("/job:worker/task:1");
  auto y0 = Mul(w0.WithOpName("y0"), w, x);
  auto y1 = Add(w1.WithOpName("y1"), w, x);
  AssignAdd(ps.WithOpName("w_update"), w, Add(w1.WithOpName("delta"), y0, y1));
}

TEST(ClusterProcessTest, SlidesExampleRunsAndASecondClientSeesTheFirstOnesUpdates) {
  auto cluster = StartCluster(ActorflowBinary());
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  BuildSlidesModel(root);
  ASSERT_TRUE(root.ok()) << root.status();
  const FeedList feed = {{"x", Tensor::FromVector<float>({10, 20})}};
  {
    auto first = Open(root.graph(), cluster->Target("worker", 0));
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->Run({}, {}, {"w_init"}, nullptr).ok());
    std::vector<Tensor> out;
    RunMetadata meta;
    Status s = first->Run(RunOptions(), feed, {"y0", "y1"}, {"w_update"}, &out, &meta);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({10, 40})));
    EXPECT_TRUE(TensorsEqual(out[1], Tensor::FromVector<float>({11, 22})));
  }
  // Another client, on another task's master: the variable (on the ps process)
  // kept the first client's update.
  auto second = Open(root.graph(), cluster->Target("worker", 1));
  ASSERT_NE(second, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(second->Run({}, {"w"}, {}, &out).ok());
  // w + (w*x + w + x) = [1,2] + ([10,40] + [11,22])
  EXPECT_TRUE(TensorsEqual(out[0], Tensor::FromVector<float>({22, 64})));
}

TEST(ClusterProcessTest, TheRunCommandRunsAGraphWithDeviceFieldsOnTheCluster) {
  auto cluster = StartCluster(ActorflowBinary());
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  BuildSlidesModel(root);
  ASSERT_TRUE(root.ok()) << root.status();
  const std::string graph_json = GraphToJson(*root.graph(), /*pretty=*/true);
  ASSERT_THAT(graph_json, HasSubstr("\"device\": \"/job:ps/task:0\"")) << graph_json;
  const std::string graph_path = WriteTmpFile("slides_graph.json", graph_json);

  // Client 1 (worker 0's master): initialize, then compute on both workers.
  auto first = RunToEnd(ActorflowBinary(),
                        {"run", "--target", cluster->Target("worker", 0), "--graph", graph_path,
                         "--before", "w_init", "--feed", "x=[10,20]", "--fetch", "y0,y1", "--json"});
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->exit_code(), 0) << first->err();
  auto result = nlohmann::json::parse(first->out(), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(result.is_discarded()) << first->out();
  EXPECT_EQ(result["fetches"]["y0"]["data"], nlohmann::json::parse("[10, 40]")) << first->out();
  EXPECT_EQ(result["fetches"]["y1"]["data"], nlohmann::json::parse("[11, 22]")) << first->out();

  // Client 2 (worker 1's master) updates the variable client 1 initialized.
  auto second = RunToEnd(ActorflowBinary(),
                         {"run", "--target", cluster->Target("worker", 1), "--graph", graph_path,
                          "--feed", "x=[10,20]", "--before", "w_update", "--fetch", "w"});
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(second->exit_code(), 0) << second->err();
  EXPECT_EQ(second->out(), "w = float32[2] [22, 64]\n");
}

TEST(ClusterProcessTest, KillingAWorkerMidStepFailsThatStepAndARestartHealsIt) {
  auto cluster = StartCluster(TestServerBinary());
  ASSERT_NE(cluster, nullptr);
  subprocess::SignalFifo fifo(TestTmpDir() + "/w1_started.fifo");
  ASSERT_TRUE(fifo.ok()) << fifo.path();

  Scope root = Scope::NewRootScope();
  Scope w0 = root.WithDevice("/job:worker/task:0");
  Scope w1 = root.WithDevice("/job:worker/task:1");
  auto x = Const(w1.WithOpName("x"), 3.0f);
  const Node* started = w1.WithOpName("started").AddNode(
      "TestSignalFifo", {x}, {{"path", AttrValue(fifo.path())}, {"text", AttrValue("w1_started")}});
  const Node* slow = w1.WithOpName("slow").AddNode("TestDelay", {Output(started)},
                                                    {{"delay_ms", AttrValue(int64_t{20000})}});
  Neg(w0.WithOpName("needs_w1"), Output(slow));
  Neg(w0.WithOpName("needs_w1_quickly"), x);
  Neg(w0.WithOpName("local_only"), Const(w0.WithOpName("c"), 1.0f));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = Open(root.graph(), cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);

  RunOptions options;
  options.timeout_in_ms = 15000;
  auto step = std::async(std::launch::async, [&] {
    return session->Run(options, {}, {"needs_w1"}, {}, nullptr, nullptr);
  });
  ASSERT_TRUE(fifo.WaitFor("w1_started", milliseconds(10000))) << "the step never reached worker 1";
  ASSERT_TRUE(cluster->Kill("worker", 1).ok());
  const auto killed = Clock::now();
  ASSERT_EQ(step.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the step hung after its worker's process died";
  Status lost = step.get();
  EXPECT_EQ(lost.code(), Code::kUnavailable) << lost;
  EXPECT_THAT(lost.message(), HasSubstr("/job:worker/replica:0/task:1")) << lost;
  const auto noticed = Clock::now() - killed;
  EXPECT_LT(noticed, std::chrono::seconds(3)) << "noticed the loss only late";
  std::cerr << "killed worker noticed after "
            << std::chrono::duration_cast<milliseconds>(noticed).count() << " ms\n";

  std::vector<Tensor> out;
  Status local = session->Run(options, {}, {"local_only"}, {}, &out, nullptr);
  ASSERT_TRUE(local.ok()) << local;
  EXPECT_EQ(out[0].data<float>()[0], -1.0f);

  ASSERT_TRUE(cluster->Restart("worker", 1).ok());
  Status healed = session->Run(options, {}, {"needs_w1_quickly"}, {}, &out, nullptr);
  ASSERT_TRUE(healed.ok()) << healed;
  EXPECT_EQ(out[0].data<float>()[0], -3.0f);
}

// A worker that hangs (SIGSTOP: its connections stay open, nothing answers) is
// declared down by the master's heartbeat within --heartbeat-timeout-ms, and the
// step that needed it fails naming it, long before the step's deadline.
TEST(ClusterProcessTest, AHungWorkerIsDeclaredDownByTheHeartbeatNamingIt) {
  ProcessClusterOptions options;
  options.server_args = {"--heartbeat-timeout-ms", "1000"};
  auto cluster = StartCluster(TestServerBinary(), options);
  ASSERT_NE(cluster, nullptr);
  subprocess::SignalFifo fifo(TestTmpDir() + "/w1_hung.fifo");
  ASSERT_TRUE(fifo.ok()) << fifo.path();

  Scope root = Scope::NewRootScope();
  Scope w0 = root.WithDevice("/job:worker/task:0");
  Scope w1 = root.WithDevice("/job:worker/task:1");
  auto x = Const(w1.WithOpName("x"), 3.0f);
  const Node* started = w1.WithOpName("started").AddNode(
      "TestSignalFifo", {x}, {{"path", AttrValue(fifo.path())}, {"text", AttrValue("w1_started")}});
  const Node* slow = w1.WithOpName("slow").AddNode("TestDelay", {Output(started)},
                                                    {{"delay_ms", AttrValue(int64_t{20000})}});
  Neg(w0.WithOpName("needs_w1"), Output(slow));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = Open(root.graph(), cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);

  RunOptions run;
  run.timeout_in_ms = 30000;
  auto step = std::async(std::launch::async, [&] {
    return session->Run(run, {}, {"needs_w1"}, {}, nullptr, nullptr);
  });
  ASSERT_TRUE(fifo.WaitFor("w1_started", milliseconds(10000))) << "the step never reached worker 1";
  ChildProcess* w1_process = cluster->process("worker", 1);
  ASSERT_NE(w1_process, nullptr);
  ASSERT_TRUE(w1_process->Suspend(milliseconds(10000))) << "worker 1 did not stop";
  const auto hung = Clock::now();
  ASSERT_EQ(step.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the step waited for a hung worker";
  const auto noticed = Clock::now() - hung;
  Status lost = step.get();
  EXPECT_EQ(lost.code(), Code::kUnavailable) << lost;
  EXPECT_THAT(lost.message(), HasSubstr("/job:worker/replica:0/task:1")) << lost;
  EXPECT_THAT(lost.message(), HasSubstr(cluster->Address("worker", 1))) << lost;
  EXPECT_THAT(lost.message(), HasSubstr("no heartbeat answer within 1000 ms")) << lost;
  EXPECT_LT(noticed, std::chrono::seconds(3)) << "noticed the hung worker only late";
  std::cerr << "hung worker noticed after "
            << std::chrono::duration_cast<milliseconds>(noticed).count() << " ms\n";
  w1_process->Kill(SIGCONT);
}

// A worker that answers every heartbeat but never finishes its part of the step is
// not taken for lost: the step deadline bounds it, and the error says so.
TEST(ClusterProcessTest, AWorkerThatAnswersHeartbeatsButNotItsStepMeetsTheStepDeadline) {
  ProcessClusterOptions options;
  options.server_args = {"--heartbeat-timeout-ms", "500"};
  auto cluster = StartCluster(TestServerBinary(), options);
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  Scope w0 = root.WithDevice("/job:worker/task:0");
  Scope w1 = root.WithDevice("/job:worker/task:1");
  const Node* slow = w1.WithOpName("slow").AddNode("TestDelay", {Const(w1.WithOpName("x"), 3.0f)},
                                                    {{"delay_ms", AttrValue(int64_t{20000})}});
  Neg(w0.WithOpName("needs_w1"), Output(slow));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = Open(root.graph(), cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  RunOptions run;
  run.timeout_in_ms = 2000;  // four heartbeat timeouts
  const auto start = Clock::now();
  Status s = session->Run(run, {}, {"needs_w1"}, {}, nullptr, nullptr);
  const auto took = Clock::now() - start;
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr("/job:worker/replica:0/task:1")) << s;
  EXPECT_THAT(s.message(), HasSubstr("still answer heartbeats")) << s;
  EXPECT_GE(took, milliseconds(1900)) << s;
  EXPECT_LT(took, std::chrono::seconds(10)) << s;
}

// The client's own master hangs: the client's heartbeat (SessionOptions) ends the
// step with Unavailable naming the target.
TEST(ClusterProcessTest, AClientWhoseMasterHangsGetsUnavailableWithinItsHeartbeat) {
  auto cluster = StartCluster(TestServerBinary());
  ASSERT_NE(cluster, nullptr);
  subprocess::SignalFifo fifo(TestTmpDir() + "/w0_hung.fifo");
  ASSERT_TRUE(fifo.ok()) << fifo.path();
  Scope root = Scope::NewRootScope();
  Scope w0 = root.WithDevice("/job:worker/task:0");
  auto x = Const(w0.WithOpName("x"), 3.0f);
  const Node* started = w0.WithOpName("started").AddNode(
      "TestSignalFifo", {x}, {{"path", AttrValue(fifo.path())}, {"text", AttrValue("w0_started")}});
  w0.WithOpName("slow").AddNode("TestDelay", {Output(started)},
                                {{"delay_ms", AttrValue(int64_t{20000})}});
  ASSERT_TRUE(root.ok()) << root.status();
  SessionOptions options;
  options.target = cluster->Target("worker", 0);
  options.heartbeat_timeout_in_ms = 1000;
  auto session = NewSession(root.graph(), options);
  ASSERT_TRUE(session.ok()) << session.status();

  RunOptions run;
  run.timeout_in_ms = 30000;
  auto step = std::async(std::launch::async, [&] {
    return (*session)->Run(run, {}, {"slow"}, {}, nullptr, nullptr);
  });
  ASSERT_TRUE(fifo.WaitFor("w0_started", milliseconds(10000))) << "the step never started";
  ChildProcess* w0_process = cluster->process("worker", 0);
  ASSERT_NE(w0_process, nullptr);
  ASSERT_TRUE(w0_process->Suspend(milliseconds(10000))) << "worker 0 did not stop";
  const auto hung = Clock::now();
  ASSERT_EQ(step.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the client waited for a hung master";
  const auto noticed = Clock::now() - hung;
  Status lost = step.get();
  EXPECT_EQ(lost.code(), Code::kUnavailable) << lost;
  EXPECT_THAT(lost.message(), HasSubstr(cluster->Target("worker", 0) + " is down")) << lost;
  EXPECT_LT(noticed, std::chrono::seconds(3));
  std::cerr << "hung master noticed after "
            << std::chrono::duration_cast<milliseconds>(noticed).count() << " ms\n";
  w0_process->Kill(SIGCONT);
  session->reset();  // before the cluster: closing asks the (resumed) master
}

TEST(ClusterProcessTest, AnUnreachableTaskIsUnavailableWithinTheDeadlineNamingIt) {
  ProcessClusterOptions options;
  options.not_started = {{"ps", 0}};  // in the spec, but no process listens there
  auto cluster = StartCluster(ActorflowBinary(), options);
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice("/job:ps/task:0").WithOpName("on_ps"), Const(root, 1.0f));
  auto session = Open(root.graph(), cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  RunOptions run_options;
  run_options.timeout_in_ms = 500;
  const auto start = Clock::now();
  Status s = session->Run(run_options, {}, {"on_ps"}, {}, nullptr, nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("/job:ps/task:0")) << s;
  EXPECT_THAT(s.message(), HasSubstr(cluster->Address("ps", 0))) << s;
}

// A task that worker 0's process reached before and that was killed since: a new
// session whose graph uses it fails within 3 s naming the task, its address and the
// cause, rather than after the 30 s step deadline (a task that refuses connections
// after answering is gone, not starting).
TEST(ClusterProcessTest, ANewSessionOnAKilledTaskFailsWithinThreeSecondsNamingIt) {
  auto cluster = StartCluster(ActorflowBinary());
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice("/job:worker/task:1").WithOpName("on_w1"), Const(root, 1.0f));
  ASSERT_TRUE(root.ok()) << root.status();
  RunOptions run;
  run.timeout_in_ms = 30000;
  {
    auto first = Open(root.graph(), cluster->Target("worker", 0));
    ASSERT_NE(first, nullptr);
    Status ran = first->Run(run, {}, {"on_w1"}, {}, nullptr, nullptr);
    ASSERT_TRUE(ran.ok()) << ran;
  }
  ASSERT_TRUE(cluster->Kill("worker", 1).ok());

  const auto start = Clock::now();
  auto second = Open(root.graph(), cluster->Target("worker", 0));
  ASSERT_NE(second, nullptr);
  Status s = second->Run(run, {}, {"on_w1"}, {}, nullptr, nullptr);
  const auto took = Clock::now() - start;
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("/job:worker/task:1")) << s;
  EXPECT_THAT(s.message(), HasSubstr(cluster->Address("worker", 1))) << s;
  EXPECT_THAT(s.message(), HasSubstr("Connection refused")) << s;
  EXPECT_LT(took, std::chrono::seconds(3)) << s;
  std::cerr << "the killed task was named after "
            << std::chrono::duration_cast<milliseconds>(took).count() << " ms: " << s << "\n";
}

// The same when no session ever used the task: the server looked for every other
// task once at startup, so a task that refuses later is down, not still starting.
TEST(ClusterProcessTest, ATaskKilledBeforeAnySessionUsedItIsNamedWithinThreeSeconds) {
  auto cluster = StartCluster(ActorflowBinary());
  ASSERT_NE(cluster, nullptr);
  std::string line;
  ASSERT_TRUE(cluster->process("worker", 0)
                  ->WaitForErrLine("actorflow server: all 2 other tasks of the cluster have "
                                   "answered",
                                   std::chrono::seconds(20), &line));
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice("/job:worker/task:1").WithOpName("on_w1"), Const(root, 1.0f));
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_TRUE(cluster->Kill("worker", 1).ok());

  RunOptions run;
  run.timeout_in_ms = 30000;
  const auto start = Clock::now();
  auto session = Open(root.graph(), cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  Status s = session->Run(run, {}, {"on_w1"}, {}, nullptr, nullptr);
  const auto took = Clock::now() - start;
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("/job:worker/task:1")) << s;
  EXPECT_THAT(s.message(), HasSubstr(cluster->Address("worker", 1))) << s;
  EXPECT_THAT(s.message(), HasSubstr("Connection refused")) << s;
  EXPECT_LT(took, std::chrono::seconds(3)) << s;
}

// A 4 MiB tensor from worker 0's process to worker 1's: over the bulk channel (the
// default, actors/transport/bulk_channel.h) and over CAF's transport alone (--bulk-min-bytes 0),
// the same sums, step after step.
TEST(ClusterProcessTest, ALargeTensorCrossesProcessesWithTheBulkChannelOnAndOff) {
  constexpr int64_t kElements = int64_t{1} << 20;
  Scope root = Scope::NewRootScope();
  Output ones = Fill(root.WithDevice("/job:worker/task:0").WithOpName("ones"), Shape{kElements},
                     0.5f);
  Sum(root.WithDevice("/job:worker/task:1").WithOpName("total"), ones);
  ASSERT_TRUE(root.ok()) << root.status();
  for (const auto& args : {std::vector<std::string>{},
                           std::vector<std::string>{"--bulk-min-bytes", "0"}}) {
    ProcessClusterOptions options;
    options.server_args = args;
    auto cluster = StartCluster(ActorflowBinary(), options);
    ASSERT_NE(cluster, nullptr);
    auto session = Open(root.graph(), cluster->Target("worker", 0));
    ASSERT_NE(session, nullptr);
    for (int step = 0; step < 3; ++step) {
      std::vector<Tensor> out;
      Status s = session->Run({}, {"total"}, {}, &out);
      ASSERT_TRUE(s.ok()) << s << (args.empty() ? " (bulk channel on)" : " (off)");
      EXPECT_EQ(out[0].data<float>()[0], 0.5f * kElements);
    }
  }
}

// ---- Bad input: the server refuses it with a one-line reason and a non-zero exit.

TEST(ClusterProcessBadInputTest, ANegativeBulkMinBytesEndsTheServerNamingTheFlag) {
  const std::string path = WriteTmpFile("one_worker.json", "{\"worker\": [\"127.0.0.1:1\"]}");
  auto server = RunToEnd(ActorflowBinary(), {"server", "--cluster", path, "--job", "worker",
                                             "--task", "0", "--bulk-min-bytes", "-1"});
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->exited());
  EXPECT_EQ(server->exit_code(), 2) << server->err();
  EXPECT_THAT(server->err(), HasSubstr("--bulk-min-bytes")) << server->err();
}

TEST(ClusterProcessBadInputTest, AMalformedClusterFileEndsTheServerWithLineAndColumn) {
  const std::string path = WriteTmpFile("malformed_cluster.json", "{\"ps\": [\"127.0.0.1:1\",\n  ]");
  auto server = RunToEnd(ActorflowBinary(),
                         {"server", "--cluster", path, "--job", "ps", "--task", "0"});
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->exited());
  EXPECT_EQ(server->exit_code(), 2) << server->err();
  EXPECT_THAT(server->err(), HasSubstr("malformed_cluster.json")) << server->err();
  EXPECT_THAT(server->err(), HasSubstr("line 2, column 3")) << server->err();
  EXPECT_EQ(server->out(), "") << "a server that cannot start must not claim to be ready";
}

TEST(ClusterProcessBadInputTest, ATaskIndexOutOfRangeEndsTheServerSayingTheTaskCount) {
  const std::string path = WriteTmpFile(
      "two_workers.json", "{\"worker\": [\"127.0.0.1:1\", \"127.0.0.1:2\"]}");
  auto server = RunToEnd(ActorflowBinary(),
                         {"server", "--cluster", path, "--job", "worker", "--task", "5"});
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->exited());
  EXPECT_EQ(server->exit_code(), 2) << server->err();
  EXPECT_THAT(server->err(), HasSubstr("/job:worker/task:5")) << server->err();
  EXPECT_THAT(server->err(), HasSubstr("2 tasks")) << server->err();
}

TEST(ClusterProcessBadInputTest, APortAlreadyInUseEndsTheServerNamingIt) {
  subprocess::PortHolder taken;
  ASSERT_NE(taken.port(), 0);
  const std::string address = "127.0.0.1:" + std::to_string(taken.port());
  const std::string path = WriteTmpFile("taken_port.json", "{\"worker\": [\"" + address + "\"]}");
  auto server = RunToEnd(ActorflowBinary(),
                         {"server", "--cluster", path, "--job", "worker", "--task", "0"});
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->exited());
  EXPECT_EQ(server->exit_code(), 1) << server->err();
  EXPECT_THAT(server->err(), HasSubstr("Unavailable")) << server->err();
  EXPECT_THAT(server->err(), HasSubstr(address)) << server->err();
  EXPECT_EQ(server->out(), "");
}

// A port where something else answers (it writes bytes that are not CAF's
// handshake and hangs up): the client gets an error naming the address within its
// connect timeout, never a hang or a crash.
TEST(ClusterProcessBadInputTest, AClientOfAPortThatIsNotAnActorflowServerFailsInBoundedTime) {
  subprocess::GarbageListener impostor("HTTP/1.1 400 Bad Request\r\n\r\n" + std::string(512, '\x7f'));
  ASSERT_NE(impostor.port(), 0);
  const std::string address = "127.0.0.1:" + std::to_string(impostor.port());
  Scope root = Scope::NewRootScope();
  Neg(root.WithOpName("n"), Const(root, 1.0f));
  SessionOptions options;
  options.target = "actorflow://" + address;
  const auto start = Clock::now();
  auto session = NewRemoteSession(root.graph(), options, /*connect_timeout_ms=*/2000);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(session.ok());
  EXPECT_TRUE(session.status().code() == Code::kUnavailable ||
              session.status().code() == Code::kFailedPrecondition)
      << session.status();
  EXPECT_THAT(session.status().message(), HasSubstr(address)) << session.status();
  EXPECT_GE(impostor.connections(), 1);
}

// The same impostor as a task of the cluster: a worker's master that needs it fails
// the step with Unavailable naming the task, within the step's deadline.
TEST(ClusterProcessBadInputTest, ATaskAddressWhereSomethingElseListensFailsTheStepNamingIt) {
  subprocess::GarbageListener impostor(std::string(256, '\x01'));
  ASSERT_NE(impostor.port(), 0);
  ProcessClusterOptions options;
  options.fixed_ports = {{{"ps", 0}, impostor.port()}};
  options.not_started = {{"ps", 0}};
  auto cluster = StartCluster(ActorflowBinary(), options);
  ASSERT_NE(cluster, nullptr);
  Scope root = Scope::NewRootScope();
  Neg(root.WithDevice("/job:ps/task:0").WithOpName("on_ps"), Const(root, 1.0f));
  auto session = Open(root.graph(), cluster->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  RunOptions run_options;
  run_options.timeout_in_ms = 1000;
  const auto start = Clock::now();
  Status s = session->Run(run_options, {}, {"on_ps"}, {}, nullptr, nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(8));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("/job:ps/task:0")) << s;
  EXPECT_THAT(s.message(), HasSubstr(cluster->Address("ps", 0))) << s;
  // The worker survived the impostor.
  EXPECT_FALSE(cluster->process("worker", 0)->HasExited());
}

}  // namespace
}  // namespace actorflow
