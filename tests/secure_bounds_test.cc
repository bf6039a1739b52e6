// Connection bounds over TLS: an `actorflow server` with a cluster secret counts the
// connections that stall in their TLS handshake against --max-connections, gives a
// stalled one's slot to a real client, closes them after --handshake-timeout-ms
// (naming the peer), and tells a client beyond the limit of real peers that limit,
// not a failed handshake; a peer refused before TLS leaves the other connections
// serving. This process knows the secret too (SetTransportSecurity),
// so its CAF clients are real TLS peers. Real processes on 127.0.0.1; every wait is
// bounded.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include "actors/protocol/messages.h"
#include "actors/transport/cluster_secret.h"
#include "actors/transport/cluster_transport.h"
#include "actors/transport/connect.h"
#include "actors/transport/transport_security.h"
#include "tests/process_cluster.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using std::chrono::milliseconds;
using subprocess::ChildProcess;
using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;
using ::testing::HasSubstr;

constexpr int kMaxConnections = 8;
constexpr milliseconds kWait{15000};
const char kSecret[] = "a cluster secret for the connection bounds over TLS";

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string WriteSecretFile() {
  const std::string path = TmpDir() + "/bounds_secret";
  std::ofstream(path) << kSecret << "\n";
  ::chmod(path.c_str(), 0600);
  return path;
}

int64_t MsLeft(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now())
      .count();
}

// A connection that sends a TLS client hello, waits until the server has answered
// it, and then sends nothing more: a peer stalled in the middle of TLS's handshake.
class StalledTlsPeer {
 public:
  // Null when no connection is made or the server does not answer within `timeout`
  // (*why says what happened).
  static std::unique_ptr<StalledTlsPeer> Open(int port, milliseconds timeout, std::string* why) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return nullptr;
    std::unique_ptr<StalledTlsPeer> peer(new StalledTlsPeer(fd));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      *why = "connect: errno " + std::to_string(errno);
      return nullptr;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    // The hello is made into memory and sent as bytes, so that nothing of the
    // server's answer is ever read: the handshake cannot go on by itself.
    const std::string hello = ClientHello();
    if (hello.empty() || ::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) !=
                             static_cast<ssize_t>(hello.size())) {
      *why = "no hello could be sent";
      return nullptr;
    }
    pollfd p{fd, POLLIN, 0};
    const int64_t left = MsLeft(deadline);
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) != 1) {
      *why = "no answer to the hello";
      return nullptr;
    }
    return peer;
  }
  ~StalledTlsPeer() { ::close(fd_); }

  // A TLS client's first flight (its hello), as OpenSSL makes it.
  static std::string ClientHello() {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL* ssl = SSL_new(ctx);
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, in, out);  // the SSL owns both
    SSL_connect(ssl);           // writes the hello to `out`, then wants to read
    char* data = nullptr;
    const long size = BIO_get_mem_data(out, &data);
    std::string hello = size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return hello;
  }

  // "127.0.0.1:PORT" of this end: what the server names as the peer.
  std::string LocalAddress() const {
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  }

  // Reads (and drops) until the server closes the connection: true when it did
  // within `timeout`.
  bool WaitForClose(milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (true) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        return true;
      }
      if (n > 0) continue;
      pollfd p{fd_, POLLIN, 0};
      const int64_t left = MsLeft(deadline);
      if (left <= 0) return false;
      ::poll(&p, 1, static_cast<int>(left));
    }
  }

 private:
  explicit StalledTlsPeer(int fd) : fd_(fd) {}
  int fd_;
};

// Connects to `port` and closes at once without a byte: to the server, a peer whose
// first bytes start no TLS session (OpenSSL's accept fails on the end of stream).
bool ConnectAndCloseSilently(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return connected;
}

// A CAF client of this process over TLS with the secret.
class TlsClient {
 public:
  TlsClient(int port, milliseconds timeout) {
    ConfigureClusterTransport(cfg_);
    cfg_.set("logger.console", caf::atom("none"));
    system_ = std::make_unique<caf::actor_system>(cfg_);
    auto front =
        ConnectToServer(*system_, "127.0.0.1", static_cast<uint16_t>(port), timeout, "the server");
    status_ = front.status();
    if (front.ok()) front_ = caf::actor_cast<caf::actor>(*front);
  }
  ~TlsClient() { ShutDownClusterSystem(system_); }

  const Status& status() const { return status_; }
  // Whether the server answers a ping over this client's connection.
  bool Pings() {
    if (front_ == nullptr) return false;
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
  Status status_;
};

// Reads the server's refusal lines until one contains `what` (true, the line in
// *line) or kWait passed.
bool WaitForRefusalSaying(ChildProcess* server, const std::string& what, std::string* line) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (true) {
    const int64_t left = MsLeft(deadline);
    if (left <= 0) return false;
    if (!server->WaitForErrLine("actorflow transport: refused", milliseconds(left), line)) {
      return false;
    }
    if (line->find(what) != std::string::npos) return true;
  }
}

class SecureBoundsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto tls = TlsFromClusterSecret(kSecret);
    ASSERT_TRUE(tls.ok()) << tls.status();
    ASSERT_TRUE(SetTransportSecurity(*tls).ok());
  }

  void StartServer(int64_t handshake_timeout_ms) {
    ProcessClusterOptions options;
    options.binary = subprocess::Runfile("tools/actorflow");
    options.shape = {{"worker", 1}};
    options.dir = TmpDir();
    options.server_args = {"--cluster-secret-file",  WriteSecretFile(),
                           "--max-connections",      std::to_string(kMaxConnections),
                           "--handshake-timeout-ms", std::to_string(handshake_timeout_ms)};
    auto cluster = ProcessCluster::Start(std::move(options));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
    server_ = cluster_->process("worker", 0);
    port_ = std::stoi(cluster_->Address("worker", 0).substr(10));
  }

  std::unique_ptr<ProcessCluster> cluster_;
  ChildProcess* server_ = nullptr;
  int port_ = 0;
};

// Peers stalled in TLS's handshake fill --max-connections: a real client still gets
// in, taking the slot of the oldest one (which had kHandshakeGraceMs to go on).
TEST_F(SecureBoundsTest, StalledTlsPeersAtMaxConnectionsGiveWayToARealClient) {
  StartServer(/*handshake_timeout_ms=*/60000);
  std::vector<std::unique_ptr<StalledTlsPeer>> stalled;
  for (int i = 0; i < kMaxConnections; ++i) {
    std::string why;
    stalled.push_back(StalledTlsPeer::Open(port_, kWait, &why));
    ASSERT_NE(stalled.back(), nullptr) << "stalled peer " << i << ": " << why;
  }
  const auto start = std::chrono::steady_clock::now();
  TlsClient client(port_, kWait);
  if (!client.status().ok()) {
    // What the server said of it, for the failure.
    std::string said;
    while (server_->WaitForErrLine("", milliseconds(1000), &said)) std::cerr << said << "\n";
  }
  ASSERT_TRUE(client.status().ok()) << client.status();
  EXPECT_TRUE(client.Pings());
  std::cerr << "a real client with " << kMaxConnections << " stalled TLS peers open got in after "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start)
                   .count()
            << " ms\n";
  EXPECT_TRUE(stalled.front()->WaitForClose(kWait));
  std::string line;
  ASSERT_TRUE(WaitForRefusalSaying(server_, "its slot goes to a new connection", &line))
      << server_->err();
  EXPECT_THAT(line, HasSubstr(stalled.front()->LocalAddress()));
  EXPECT_THAT(line, HasSubstr("--max-connections 8"));
}

// A peer that stops inside TLS's handshake, or never starts it, is closed once
// --handshake-timeout-ms has passed, and the server names it.
TEST_F(SecureBoundsTest, APeerStalledInTheTlsHandshakeIsClosedAfterTheTimeout) {
  StartServer(/*handshake_timeout_ms=*/1000);
  std::string why;
  auto stalled = StalledTlsPeer::Open(port_, kWait, &why);
  ASSERT_NE(stalled, nullptr) << why;
  EXPECT_TRUE(stalled->WaitForClose(kWait));
  std::string line;
  ASSERT_TRUE(
      WaitForRefusalSaying(server_, "no handshake within --handshake-timeout-ms 1000", &line))
      << server_->err();
  EXPECT_THAT(line, HasSubstr(stalled->LocalAddress()));
  // The server still serves.
  TlsClient client(port_, kWait);
  EXPECT_TRUE(client.status().ok()) << client.status();
  EXPECT_TRUE(client.Pings());
}

// Real TLS peers fill --max-connections: the next one is refused, and its
// ConnectToServer names the limit, not a failed TLS handshake.
TEST_F(SecureBoundsTest, AClientBeyondMaxConnectionsOfRealTlsPeersIsToldTheLimit) {
  StartServer(/*handshake_timeout_ms=*/60000);
  std::vector<std::unique_ptr<TlsClient>> peers;
  for (int i = 0; i < kMaxConnections; ++i) {
    peers.push_back(std::make_unique<TlsClient>(port_, kWait));
    ASSERT_TRUE(peers.back()->status().ok()) << "peer " << i << ": " << peers.back()->status();
  }
  TlsClient beyond(port_, milliseconds(1500));
  EXPECT_EQ(beyond.status().code(), Code::kUnavailable) << beyond.status();
  EXPECT_THAT(beyond.status().message(),
              HasSubstr("it refused the connection: it has --max-connections connections open"));
  std::string line;
  EXPECT_TRUE(WaitForRefusalSaying(server_, "--max-connections 8 allows", &line))
      << server_->err();
  for (auto& peer : peers) EXPECT_TRUE(peer->Pings());
}

// A peer refused before TLS (it closed without a byte, as a readiness probe does)
// leaves OpenSSL's error for it in the queue of the server's network thread, which
// serves every other connection too. Read as the next SSL_read's cause, that error
// once turned a read that only had to wait into a fatal one: the server closed a
// healthy client's connection at its next message (a step across TLS tasks then
// stalled until the failure detector named the task down).
TEST_F(SecureBoundsTest, APeerRefusedBeforeTlsLeavesTheOtherConnectionsServing) {
  StartServer(/*handshake_timeout_ms=*/60000);
  TlsClient client(port_, kWait);
  ASSERT_TRUE(client.status().ok()) << client.status();
  ASSERT_TRUE(client.Pings());
  ASSERT_TRUE(ConnectAndCloseSilently(port_));
  std::string line;
  ASSERT_TRUE(WaitForRefusalSaying(server_, "its first bytes start no TLS session", &line))
      << server_->err();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(client.Pings()) << "ping " << i << " after the refused peer; server said:\n"
                                << server_->err();
  }
}

}  // namespace
}  // namespace actorflow
