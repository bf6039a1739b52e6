// An `actorflow server` process against hostile or broken peers: random bytes, an
// HTTP request, forged BASP headers (4 GiB announced, an unknown operation), a
// message just over --max-message-bytes and one of a kind it does not know, a frame
// cut off, a silent connection, a flood of connections, connections that stall
// before their handshake (closed after --handshake-timeout-ms; at --max-connections
// the oldest gives way to a new peer) and more CAF peers than --max-connections (the
// next one is told the limit); and clients over --max-graph-nodes and
// --max-tensor-bytes.
//
// After each: the server still runs, runs a step for a legitimate client
// (`actorflow run --target`), names the peer and the limit on stderr where it
// refused something, and its resident memory stays within kRssSlack of what it was
// idle (after start-up and one warm-up step).
//
// Every wait is bounded; no sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actors/transport/cluster_transport.h"
#include "actors/transport/connect.h"
#include "actors/protocol/messages.h"
#include "tests/process_cluster.h"
#include "tests/raw_peer.h"
#include "tests/subprocess.h"

namespace actorflow {

// A message kind the server does not know (the client registers it, the server not).
struct UnknownKind {
  std::string text;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, UnknownKind& x) {
  return f(caf::meta::type_name("actorflow.test.UnknownKind"), x.text);
}

namespace {

using std::chrono::milliseconds;
using subprocess::ChildProcess;
using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;
using subprocess::RawConnection;
using ::testing::HasSubstr;

constexpr int64_t kMaxMessageBytes = 1 << 20;
constexpr int kMaxConnections = 8;
constexpr milliseconds kWait{10000};
// Longer than any test's waits: only the test that starts its own server with a
// short timeout sees connections closed for it.
constexpr int64_t kHandshakeTimeoutMs = 60000;
// What a stalled stranger sends: part of a BASP header (27 of its 32 bytes).
const std::string kPartialHeader(27, '\x01');
// Resident memory may grow this much over idle: 10% (allocator caches and the
// lazily touched pages of a step differ from run to run by a few hundred KiB).
int64_t RssSlackKiB(int64_t idle_kib) { return idle_kib / 10; }

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ActorflowBinary() { return subprocess::Runfile("tools/actorflow"); }

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = TmpDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// n Neg nodes in a chain after a Const: n + 1 nodes, fetch "n<n>".
std::string ChainGraph(int n) {
  std::string json = R"({"format": "actorflow.graph/1", "nodes": [
    {"name": "n0", "op": "Const",
     "attrs": {"value": {"dtype": "float32", "shape": [], "data": [3]}}})";
  for (int i = 1; i <= n; ++i) {
    json += ",\n    {\"name\": \"n" + std::to_string(i) + "\", \"op\": \"Neg\", \"inputs\": [\"n" +
            std::to_string(i - 1) + "\"]}";
  }
  return json + "]}";
}

// Reads the server's refusal lines until one contains `what` (true, the line in
// *line) or kWait passed.
bool WaitForRefusalSaying(ChildProcess* server, const std::string& what, std::string* line) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (true) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (!server->WaitForErrLine("actorflow transport: refused", left, line)) return false;
    if (line->find(what) != std::string::npos) return true;
  }
}

class HostileInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessClusterOptions options;
    options.binary = ActorflowBinary();
    options.shape = {{"worker", 1}};
    options.dir = TmpDir();
    options.server_args = {"--max-message-bytes", std::to_string(kMaxMessageBytes),
                           "--max-connections",   std::to_string(kMaxConnections),
                           "--handshake-timeout-ms", std::to_string(kHandshakeTimeoutMs),
                           "--max-graph-nodes",   "5",
                           "--max-tensor-bytes",  "1024"};
    auto cluster = ProcessCluster::Start(std::move(options));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
    server_ = cluster_->process("worker", 0);
    port_ = std::stoi(cluster_->Address("worker", 0).substr(10));
    legit_graph_ = WriteFile("legit.json", ChainGraph(1));
    // Idle: after start-up and one step (which loads what every step uses).
    ASSERT_TRUE(RunsALegitStep());
    idle_kib_ = subprocess::ResidentKiB(server_->pid());
    ASSERT_GT(idle_kib_, 0);
  }

  // `actorflow run` of a two-node graph on the server: whether it exited with 0 and
  // printed the value.
  ::testing::AssertionResult RunsALegitStep() {
    auto r = Run({"run", "--graph", legit_graph_, "--fetch", "n1", "--target",
                  cluster_->Target("worker", 0), "--timeout-ms", "10000"});
    if (r->exit_code() != 0) {
      return ::testing::AssertionFailure()
             << "the legitimate step exited with " << r->exit_code() << ": " << r->err();
    }
    if (r->out().find("n1 = float32[] -3") == std::string::npos) {
      return ::testing::AssertionFailure()
             << "the legitimate step did not print \"n1 = float32[] -3\": " << r->out();
    }
    return ::testing::AssertionSuccess();
  }

  std::unique_ptr<ChildProcess> Run(const std::vector<std::string>& args) {
    std::string error;
    auto child = ChildProcess::Start(ActorflowBinary(), args, &error);
    EXPECT_NE(child, nullptr) << error;
    EXPECT_TRUE(child->WaitForExit(milliseconds(30000)));
    child->Kill();
    return child;
  }

  // Whether the server is alive, serves a legitimate client and holds no more memory;
  // a failure starts with "after <after>" and lists what did not hold.
  ::testing::AssertionResult Healthy(const std::string& after) {
    if (server_->HasExited()) {
      return ::testing::AssertionFailure()
             << "after " << after << ": the server exited: " << server_->err();
    }
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    bool failed = false;
    auto fail = [&]() -> ::testing::AssertionResult& {
      if (!failed) result = ::testing::AssertionFailure() << "after " << after << ":";
      failed = true;
      return result;
    };
    const ::testing::AssertionResult step = RunsALegitStep();
    if (!step) fail() << " " << step.message() << ";";
    const int64_t rss = subprocess::ResidentKiB(server_->pid());
    std::cerr << "VmRSS after " << after << ": " << rss << " KiB (idle " << idle_kib_ << ")\n";
    if (rss > idle_kib_ + RssSlackKiB(idle_kib_)) {
      fail() << " VmRSS " << rss << " KiB is over idle " << idle_kib_ << " KiB + "
             << RssSlackKiB(idle_kib_) << " KiB;";
    }
    return result;
  }

  // Whether the next refusal line of the server's stderr names `peer` and says `what`.
  ::testing::AssertionResult RefusalLogged(const std::string& peer, const std::string& what) {
    std::string line;
    if (!server_->WaitForErrLine("actorflow transport: refused", kWait, &line)) {
      return ::testing::AssertionFailure() << "no refusal on the server's stderr within "
                                           << kWait.count() << " ms: " << server_->err();
    }
    for (const std::string& part : {peer, what}) {
      if (line.find(part) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "the refusal does not mention '" << part << "': " << line;
      }
    }
    return ::testing::AssertionSuccess();
  }

  std::unique_ptr<RawConnection> Connect() {
    auto c = RawConnection::Open(port_, kWait);
    EXPECT_NE(c, nullptr);
    return c;
  }

  // Sends `bytes` as a fresh peer (connected into `*peer`); whether the server closes
  // the connection and logs why, naming this peer and saying `what`. The caller holds
  // `*peer` open while it checks the server's health: a server that did not close it
  // would still hold what it allocated for it.
  ::testing::AssertionResult RefusedAfterSending(const std::string& bytes, const std::string& what,
                                                 std::unique_ptr<RawConnection>* peer) {
    *peer = RawConnection::Open(port_, kWait);
    if (*peer == nullptr) {
      return ::testing::AssertionFailure() << "cannot connect to port " << port_;
    }
    (*peer)->Send(bytes);  // the server may close before it all went out
    const bool closed = (*peer)->WaitForClose(kWait);
    const ::testing::AssertionResult logged = RefusalLogged((*peer)->LocalAddress(), what);
    if (closed) return logged;
    ::testing::AssertionResult result = ::testing::AssertionFailure()
                                        << "the server did not close the connection of "
                                        << (*peer)->LocalAddress() << " within " << kWait.count()
                                        << " ms";
    if (!logged) result << "; " << logged.message();
    return result;
  }

  std::unique_ptr<ProcessCluster> cluster_;
  ChildProcess* server_ = nullptr;
  int port_ = 0;
  std::string legit_graph_;
  int64_t idle_kib_ = 0;
};

TEST_F(HostileInputTest, RandomBytesAreRefusedAsNotAHandshake) {
  std::mt19937 random(42);
  std::string bytes(64 << 10, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  bytes[1] = '\x5a';  // not a handshake's padding, whatever the seed gives
  std::unique_ptr<RawConnection> peer;
  EXPECT_TRUE(RefusedAfterSending(bytes, "not a BASP handshake", &peer));
  EXPECT_TRUE(Healthy("random bytes"));
}

TEST_F(HostileInputTest, AnHttpRequestIsRefusedAsHttp) {
  std::unique_ptr<RawConnection> peer;
  EXPECT_TRUE(RefusedAfterSending(
      "GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/7.88.1\r\n"
      "Accept: */*\r\n\r\n",
      "looks like HTTP", &peer));
  EXPECT_TRUE(Healthy("an HTTP request"));
}

TEST_F(HostileInputTest, AHeaderAnnouncingFourGibibytesIsRefusedBeforeAllocating) {
  std::unique_ptr<RawConnection> peer;
  EXPECT_TRUE(RefusedAfterSending(subprocess::BaspHeader(/*client handshake*/ 1, 0xffffffffu),
                                  "announces 4294967295 bytes", &peer));
  EXPECT_TRUE(Healthy("a 4 GiB header"));
}

TEST_F(HostileInputTest, AFrameWithAnUnknownOperationIsRefused) {
  std::unique_ptr<RawConnection> peer;
  EXPECT_TRUE(RefusedAfterSending(subprocess::BaspHeader(0x2a, 16) + std::string(16, 'x'),
                                  "its first byte is 0x2a", &peer));
  EXPECT_TRUE(Healthy("an unknown operation"));
}

TEST_F(HostileInputTest, AFrameCutInTheMiddleAndClosedLeavesNothingBehind) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(subprocess::BaspHeader(1, 1000) + std::string(500, '\0')));
  c->Close();
  EXPECT_TRUE(Healthy("a cut frame"));
}

TEST_F(HostileInputTest, ASilentConnectionDoesNotKeepOthersOut) {
  auto silent = Connect();
  ASSERT_NE(silent, nullptr);
  EXPECT_TRUE(silent->WaitForGreeting(kWait));
  EXPECT_TRUE(Healthy("a silent connection (still open)"));
}

TEST_F(HostileInputTest, AThousandConnectionsOpenedAndClosedAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    auto c = RawConnection::Open(port_, kWait);
    ASSERT_NE(c, nullptr) << "connection " << i;
  }
  std::cerr
      << "1000 connections in "
      << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start).count()
      << " ms\n";
  EXPECT_TRUE(Healthy("1000 connections"));
}

// Raw peers that stall inside their first header fill --max-connections: a real
// client still gets in, because a new connection takes the slot of the oldest one
// that has gone kHandshakeGraceMs without a handshake (a busy refusal before that
// makes the client retry).
TEST_F(HostileInputTest, StalledConnectionsAtMaxConnectionsGiveWayToARealClient) {
  std::vector<std::unique_ptr<RawConnection>> stalled;
  for (int i = 0; i < kMaxConnections; ++i) {
    stalled.push_back(Connect());
    ASSERT_NE(stalled.back(), nullptr);
    ASSERT_TRUE(stalled.back()->WaitForGreeting(kWait)) << "connection " << i;
    ASSERT_TRUE(stalled.back()->Send(kPartialHeader));
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(RunsALegitStep());
  std::cerr << "a legitimate step with " << kMaxConnections << " stalled connections open took "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start)
                   .count()
            << " ms\n";
  // The oldest stalled one was closed for it, and the server said why.
  EXPECT_TRUE(stalled.front()->WaitForClose(kWait));
  std::string line;
  ASSERT_TRUE(WaitForRefusalSaying(server_, "its slot goes to a new connection", &line))
      << server_->err();
  EXPECT_THAT(line, HasSubstr(stalled.front()->LocalAddress()));
  EXPECT_THAT(line, HasSubstr("--max-connections 8"));
  stalled.clear();
  EXPECT_TRUE(Healthy("stalled connections at --max-connections"));
}

// A CAF client in this process: what a peer that completed BASP's handshake can send.
class CafClient {
 public:
  explicit CafClient(int port) {
    ConfigureClusterTransport(cfg_);
    cfg_.add_message_type<UnknownKind>("actorflow.test.UnknownKind");
    cfg_.set("logger.console", caf::atom("none"));
    system_ = std::make_unique<caf::actor_system>(cfg_);
    auto front =
        ConnectToServer(*system_, "127.0.0.1", static_cast<uint16_t>(port), kWait, "the server");
    EXPECT_TRUE(front.ok()) << front.status();
    if (front.ok()) front_ = caf::actor_cast<caf::actor>(*front);
  }
  ~CafClient() { ShutDownClusterSystem(system_); }

  bool connected() const { return front_ != nullptr; }
  template <class T>
  void Send(T message) {
    caf::anon_send(front_, std::move(message));
  }
  // Whether the server still answers a ping over this client's connection.
  bool Pings() {
    caf::scoped_actor self{*system_};
    bool answered = false;
    self->request(front_, kWait, ping_atom::value)
        .receive([&](const std::string&) { answered = true; }, [&](caf::error&) {});
    return answered;
  }

 private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  caf::actor front_;
};

TEST_F(HostileInputTest, AMessageJustOverMaxMessageBytesClosesItsConnection) {
  CafClient client(port_);
  ASSERT_TRUE(client.connected());
  EXPECT_TRUE(client.Pings());
  client.Send(std::string(kMaxMessageBytes + 1, 'o'));
  EXPECT_TRUE(RefusalLogged("127.0.0.1:", "over --max-message-bytes 1048576"));
  EXPECT_FALSE(client.Pings());
  EXPECT_TRUE(Healthy("a message over --max-message-bytes"));
}

// Legitimate traffic up to the limit passes (no memory bound here: a message of
// 1 MiB is allocated, and CAF keeps its read buffer while the connection lives).
TEST_F(HostileInputTest, AMessageJustUnderMaxMessageBytesIsDelivered) {
  CafClient client(port_);
  ASSERT_TRUE(client.connected());
  // The front has no use for a string and drops it; the connection stays.
  client.Send(std::string(kMaxMessageBytes - 4096, 'u'));
  EXPECT_TRUE(client.Pings());
  EXPECT_TRUE(RunsALegitStep());
}

TEST_F(HostileInputTest, AMessageOfAnUnknownKindIsDropped) {
  CafClient client(port_);
  ASSERT_TRUE(client.connected());
  client.Send(UnknownKind{"what is this"});
  client.Pings();  // whatever became of the connection, the server answered or not in time
  EXPECT_TRUE(Healthy("a message of an unknown kind"));
}

TEST_F(HostileInputTest, AGraphOverMaxGraphNodesIsResourceExhaustedNamingTheFlag) {
  const std::string big = WriteFile("six_nodes.json", ChainGraph(5));
  auto r = Run({"run", "--graph", big, "--fetch", "n5", "--target", cluster_->Target("worker", 0),
                "--timeout-ms", "10000"});
  EXPECT_NE(r->exit_code(), 0);
  EXPECT_THAT(r->err(), HasSubstr("ResourceExhausted"));
  EXPECT_THAT(r->err(), HasSubstr("graph has 6 nodes, over --max-graph-nodes 5"));
  EXPECT_TRUE(Healthy("a graph over --max-graph-nodes"));
}

TEST_F(HostileInputTest, AFeedOverMaxTensorBytesIsResourceExhaustedNamingTheFlag) {
  const std::string graph = WriteFile("feed.json", R"({"format": "actorflow.graph/1", "nodes": [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1]}},
    {"name": "y", "op": "Neg", "inputs": ["x"]}]})");
  std::string values = "[0";
  for (int i = 1; i < 300; ++i) values += ",1";
  values += "]";  // 300 float32: 1200 bytes
  auto r = Run({"run", "--graph", graph, "--fetch", "y", "--feed", "x=" + values, "--target",
                cluster_->Target("worker", 0), "--timeout-ms", "10000"});
  EXPECT_NE(r->exit_code(), 0);
  EXPECT_THAT(r->err(), HasSubstr("ResourceExhausted"));
  EXPECT_THAT(r->err(), HasSubstr("feed 'x' has 1200 bytes, over --max-tensor-bytes 1024"));
  EXPECT_TRUE(Healthy("a feed over --max-tensor-bytes"));
}

// CAF peers that completed their handshake fill --max-connections: the next one is
// refused, and its ConnectToServer names the limit, not a failed handshake.
TEST_F(HostileInputTest, APeerBeyondMaxConnectionsOfRealPeersIsToldTheLimit) {
  std::vector<std::unique_ptr<CafClient>> peers;
  for (int i = 0; i < kMaxConnections; ++i) {
    peers.push_back(std::make_unique<CafClient>(port_));
    ASSERT_TRUE(peers.back()->connected()) << "peer " << i;
  }
  caf::actor_system_config cfg;
  ConfigureClusterTransport(cfg);
  cfg.set("logger.console", caf::atom("none"));
  auto system = std::make_unique<caf::actor_system>(cfg);
  auto front = ConnectToServer(*system, "127.0.0.1", static_cast<uint16_t>(port_),
                               milliseconds(1500), "the server");
  EXPECT_EQ(front.status().code(), Code::kUnavailable) << front.status();
  EXPECT_THAT(front.status().message(),
              HasSubstr("it refused the connection: it has --max-connections connections open"));
  ShutDownClusterSystem(system);
  EXPECT_TRUE(RefusalLogged("127.0.0.1:", "--max-connections 8 allows"));
  // Every peer still talks to the server.
  for (auto& peer : peers) EXPECT_TRUE(peer->Pings());
  peers.clear();
  EXPECT_TRUE(Healthy("a peer beyond --max-connections"));
}

// A connection that sends part of a header and stalls is closed once
// --handshake-timeout-ms has passed, and the server says so naming it.
TEST(HandshakeTimeoutTest, AConnectionStalledBeforeItsHandshakeIsClosedAfterTheTimeout) {
  ProcessClusterOptions options;
  options.binary = ActorflowBinary();
  options.shape = {{"worker", 1}};
  options.dir = TmpDir();
  options.server_args = {"--handshake-timeout-ms", "1000"};
  auto cluster = ProcessCluster::Start(std::move(options));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ChildProcess* server = (*cluster)->process("worker", 0);
  const int port = std::stoi((*cluster)->Address("worker", 0).substr(10));
  for (const std::string& sent : {kPartialHeader, std::string()}) {
    auto stalled = RawConnection::Open(port, kWait);
    ASSERT_NE(stalled, nullptr);
    ASSERT_TRUE(stalled->WaitForGreeting(kWait));
    if (!sent.empty()) {
      ASSERT_TRUE(stalled->Send(sent));
    }
    EXPECT_TRUE(stalled->WaitForClose(kWait)) << sent.size() << " bytes sent";
    std::string line;
    ASSERT_TRUE(WaitForRefusalSaying(server, "no handshake within --handshake-timeout-ms 1000",
                                     &line))
        << server->err();
    EXPECT_THAT(line, HasSubstr(stalled->LocalAddress()));
  }
}

}  // namespace
}  // namespace actorflow
