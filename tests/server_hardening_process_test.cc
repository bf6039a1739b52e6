// `actorflow server` processes on 127.0.0.1 hardened against what clients send and
// against failing devices:
// - file-reading ops (CsvReaderRead) open only files under --data-root, and none
//   without it: a graph that names /etc/passwd, a "..", or a symlink out of the root
//   gets PermissionDenied naming the path and the root, never the file's contents;
// - a kernel that throws (TestThrow, tests/throwing_op.cc) fails its step, and the
//   next step on the same device runs; a killed device actor is restarted (logged)
//   and later steps run; a device that keeps dying makes the process exit non-zero.
//
// Every wait is bounded; no sleeps, no fixed ports.

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <caf/io/all.hpp>

#include "actors/transport/connect.h"
#include "actors/cluster/session_factory.h"
#include "actors/protocol/wire.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/test_files.h"
#include "tests/process_cluster.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;

std::unique_ptr<ProcessCluster> StartServer(std::vector<std::string> args) {
  ProcessClusterOptions options;
  options.binary = subprocess::Runfile("tests/test_server");
  options.shape = {{"worker", 1}};
  options.dir = TestTempRoot();
  options.server_args = std::move(args);
  auto cluster = ProcessCluster::Start(std::move(options));
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? std::move(cluster).value() : nullptr;
}

std::unique_ptr<Session> Open(const Graph* graph, const std::string& target) {
  SessionOptions options;
  options.target = target;
  auto session = NewSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

// Reads the first record of `path` (two float32 columns) on the server; returns the
// step's status and, through `row`, the record.
Status ReadFirstRecordOnServer(const std::string& target, const std::string& path,
                               std::vector<float>* row = nullptr) {
  Scope root = Scope::NewRootScope();
  Queue files = FIFOQueue(root.WithOpName("files"), {DType::kInt32}, {Shape{}}, 10);
  QueueEnqueue(root.WithOpName("enqueue"), files, {Const(root.WithOpName("first"), int32_t{0})});
  auto read = CsvReaderRead(root.WithOpName("read"), {path}, files,
                            {DType::kFloat32, DType::kFloat32});
  if (!root.ok()) return root.status();
  auto session = Open(root.graph(), target);
  if (session == nullptr) return Internal("no session");
  AF_RETURN_IF_ERROR(session->Run({}, {}, {"enqueue"}, nullptr));
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(session->Run({}, {read[0].name(), read[1].name()}, {}, &out));
  if (row != nullptr) {
    for (const Tensor& t : out) row->push_back(t.data<float>()[0]);
  }
  return Status::OK();
}

TEST(ServerHardeningProcessTest, FileOpsReadOnlyUnderTheDataRoot) {
  ScopedTempDir dir("data_root");
  ASSERT_TRUE(dir.ok());
  const std::string root = dir.File("root");
  fs::create_directories(root);
  ASSERT_TRUE(WriteTestFile(root + "/points.csv", "1.5,2.5\n"));
  ASSERT_TRUE(WriteTestFile(dir.File("outside.csv"), "7,8\n"));
  fs::create_symlink(dir.File("outside.csv"), root + "/link.csv");
  auto server = StartServer({"--data-root", root});
  ASSERT_NE(server, nullptr);
  const std::string target = server->Target("worker", 0);

  std::vector<float> row;
  Status inside = ReadFirstRecordOnServer(target, root + "/points.csv", &row);
  ASSERT_TRUE(inside.ok()) << inside;
  EXPECT_EQ(row, (std::vector<float>{1.5f, 2.5f}));
  row.clear();
  ASSERT_TRUE(ReadFirstRecordOnServer(target, "points.csv", &row).ok()) << "relative to the root";
  EXPECT_EQ(row, (std::vector<float>{1.5f, 2.5f}));

  for (const std::string& path : {std::string("/etc/passwd"), dir.File("outside.csv"),
                                  root + "/../outside.csv", root + "/link.csv"}) {
    Status refused = ReadFirstRecordOnServer(target, path);
    EXPECT_EQ(refused.code(), Code::kPermissionDenied) << path << ": " << refused;
    EXPECT_THAT(refused.message(), HasSubstr(path));
    EXPECT_THAT(refused.message(), HasSubstr("data root '" + fs::canonical(root).string() + "'"));
    EXPECT_THAT(refused.message(), Not(HasSubstr("root:x:")));
  }
}

// Two clients' graphs with a reader of the same name on one server: without a
// shared_name each reads its own files from its own position; with one they share it.
TEST(ServerHardeningProcessTest, AReaderIsPrivateToItsSessionUnlessItNamesASharedName) {
  ScopedTempDir dir("reader_scope");
  ASSERT_TRUE(dir.ok());
  const std::string root = dir.File("root");
  fs::create_directories(root);
  ASSERT_TRUE(WriteTestFile(root + "/a.csv", "1,2\n3,4\n5,6\n"));
  ASSERT_TRUE(WriteTestFile(root + "/b.csv", "7,8\n9,10\n"));
  auto server = StartServer({"--data-root", root});
  ASSERT_NE(server, nullptr);
  const std::string target = server->Target("worker", 0);

  struct Client {
    Scope root = Scope::NewRootScope();
    std::vector<Output> read;
    std::unique_ptr<Session> session;
    // The next record, or {} after an error (reported).
    std::vector<float> Next() {
      std::vector<Tensor> out;
      Status s = session->Run({}, {read[0].name(), read[1].name()}, {}, &out);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok()) return {};
      return {out[0].data<float>()[0], out[1].data<float>()[0]};
    }
  };
  auto client = [&](const std::string& file, const std::string& queue,
                    const std::string& shared_name) {
    auto c = std::make_unique<Client>();
    Queue files = FIFOQueue(c->root.WithOpName(queue), {DType::kInt32}, {Shape{}}, 10);
    QueueEnqueue(c->root.WithOpName("enqueue"), files,
                 {Const(c->root.WithOpName("first"), int32_t{0})});
    c->read = CsvReaderRead(c->root.WithOpName("read"), {file}, files,
                            {DType::kFloat32, DType::kFloat32}, 0, shared_name);
    EXPECT_TRUE(c->root.ok()) << c->root.status();
    c->session = Open(c->root.graph(), target);
    if (c->session != nullptr) {
      EXPECT_TRUE(c->session->Run({}, {}, {"enqueue"}, nullptr).ok());
    }
    return c;
  };
  auto first = client("a.csv", "files_a", "");
  auto second = client("b.csv", "files_b", "");
  ASSERT_TRUE(first->session != nullptr && second->session != nullptr);
  EXPECT_EQ(first->Next(), (std::vector<float>{1, 2}));
  EXPECT_EQ(second->Next(), (std::vector<float>{7, 8})) << "not the first client's next line";
  EXPECT_EQ(first->Next(), (std::vector<float>{3, 4})) << "its own position, kept";
  EXPECT_EQ(second->Next(), (std::vector<float>{9, 10}));
  // A session that closes drops its reader; a new one starts from the file's top.
  EXPECT_TRUE(first->session->Close().ok());
  first = client("a.csv", "files_a2", "");
  EXPECT_EQ(first->Next(), (std::vector<float>{1, 2}));

  // Named alike, shared: one position over the file, whichever client reads.
  auto shared_one = client("a.csv", "files_s", "lines");
  auto shared_two = client("a.csv", "files_t", "lines");
  EXPECT_EQ(shared_one->Next(), (std::vector<float>{1, 2}));
  EXPECT_EQ(shared_two->Next(), (std::vector<float>{3, 4}));
}

// A FIFO under the data root (no writer: a blocking open would never return) is
// refused at once naming it, and the server goes on serving.
TEST(ServerHardeningProcessTest, AFifoUnderTheDataRootIsRefusedAndTheServerGoesOnServing) {
  ScopedTempDir dir("fifo_root");
  ASSERT_TRUE(dir.ok());
  const std::string root = dir.File("root");
  fs::create_directories(root);
  ASSERT_EQ(::mkfifo((root + "/pipe.csv").c_str(), 0600), 0);
  ASSERT_TRUE(WriteTestFile(root + "/points.csv", "1.5,2.5\n"));
  auto server = StartServer({"--data-root", root});
  ASSERT_NE(server, nullptr);
  const std::string target = server->Target("worker", 0);
  Status refused = ReadFirstRecordOnServer(target, "pipe.csv");
  EXPECT_EQ(refused.code(), Code::kInvalidArgument) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("pipe.csv is a FIFO, not a regular file"));
  std::vector<float> row;
  Status inside = ReadFirstRecordOnServer(target, "points.csv", &row);
  ASSERT_TRUE(inside.ok()) << inside;
  EXPECT_EQ(row, (std::vector<float>{1.5f, 2.5f}));
}

TEST(ServerHardeningProcessTest, WithoutADataRootFileOpsAreRefusedSayingHowToAllowThem) {
  auto server = StartServer({});
  ASSERT_NE(server, nullptr);
  Status refused = ReadFirstRecordOnServer(server->Target("worker", 0), "/etc/passwd");
  EXPECT_EQ(refused.code(), Code::kPermissionDenied) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("--data-root DIR"));
  EXPECT_THAT(refused.message(), Not(HasSubstr("root:x:")));
}

// A client actor system that lists the server's devices and kills one.
class DeviceKiller {
 public:
  DeviceKiller() {
    cfg_.load<caf::io::middleman>();
    cfg_.set("scheduler.policy", caf::atom("sharing"));
    cfg_.set("logger.console", caf::atom("none"));
    RegisterMessageTypes(cfg_);
    system_ = std::make_unique<caf::actor_system>(cfg_);
  }
  ~DeviceKiller() { ShutDownClusterSystem(system_); }

  // Kills the task's first device actor; false when the devices cannot be listed.
  bool KillFirstDevice(const std::string& target) {
    std::string host;
    uint16_t port = 0;
    if (!ParseTarget(target, &host, &port).ok()) return false;
    auto front = ConnectToServer(*system_, host, port, std::chrono::seconds(10), target);
    if (!front.ok()) return false;
    caf::scoped_actor self{*system_};
    bool killed = false;
    self->request(*front, std::chrono::seconds(10), devices_atom::value)
        .receive(
            [&](std::vector<DevicePeer>& devices) {
              if (devices.empty()) return;
              caf::anon_send_exit(devices.front().actor, caf::exit_reason::kill);
              killed = true;
            },
            [&](caf::error&) {});
    return killed;
  }

 private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
};

TEST(ServerHardeningProcessTest, AThrowingKernelOrAKilledDeviceLeavesTheServerServing) {
  auto server = StartServer({});
  ASSERT_NE(server, nullptr);
  const std::string target = server->Target("worker", 0);
  Scope root = Scope::NewRootScope();
  auto one = Const(root.WithOpName("one"), 1.0f);
  root.WithOpName("starved").AddNode("TestThrow", {one}, {{"what", AttrValue("bad_alloc")}});
  Neg(root.WithOpName("fine"), one);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = Open(root.graph(), target);
  ASSERT_NE(session, nullptr);

  std::vector<Tensor> out;
  Status starved = session->Run({}, {"starved"}, {}, &out);
  EXPECT_EQ(starved.code(), Code::kResourceExhausted) << starved;
  EXPECT_THAT(starved.message(), HasSubstr("node 'starved' (TestThrow)"));
  Status fine = session->Run({}, {"fine"}, {}, &out);
  ASSERT_TRUE(fine.ok()) << fine;
  EXPECT_EQ(out[0].data<float>()[0], -1.0f);

  DeviceKiller killer;
  ASSERT_TRUE(killer.KillFirstDevice(target));
  std::string line;
  ASSERT_TRUE(server->process("worker", 0)
                  ->WaitForErrLine("actorflow server /job:worker/replica:0/task:0: device",
                                   milliseconds(10000), &line));
  EXPECT_THAT(line, HasSubstr("restarted it"));
  // At most one step meets the old actor (Unavailable naming the device); then they run.
  Status after = session->Run({}, {"fine"}, {}, &out);
  if (!after.ok()) {
    EXPECT_EQ(after.code(), Code::kUnavailable) << after;
    after = session->Run({}, {"fine"}, {}, &out);
  }
  ASSERT_TRUE(after.ok()) << after;
  EXPECT_EQ(out[0].data<float>()[0], -1.0f);
}

TEST(ServerHardeningProcessTest, ADeviceThatKeepsFailingMakesTheServerExitNonZero) {
  auto server = StartServer({"--max-device-restarts", "0"});
  ASSERT_NE(server, nullptr);
  DeviceKiller killer;
  ASSERT_TRUE(killer.KillFirstDevice(server->Target("worker", 0)));
  auto* process = server->process("worker", 0);
  ASSERT_TRUE(process->WaitForExit(milliseconds(20000))) << "the failed server kept running";
  EXPECT_TRUE(process->exited());
  EXPECT_EQ(process->exit_code(), 1) << process->err();
  EXPECT_THAT(process->err(), HasSubstr("the server has failed"));
}

}  // namespace
}  // namespace actorflow
