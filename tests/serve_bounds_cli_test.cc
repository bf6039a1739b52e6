// `actorflow serve` against slow, stalled and oversized clients, as a child process
// on 127.0.0.1 (tests/serve_cli_testing.h): clients that drip their headers or body
// hold only their own connections, connections beyond --max-connections get 503, a
// body not received within --body-timeout-ms gets 408, a declared length over
// --max-body-bytes gets 413 at once, a request over --max-instances gets 413 before
// it is parsed (the server's peak memory stays a small multiple of the body), and a
// Content-Length that is not a byte count gets 400.
//
// Every wait is bounded (poll with a deadline, client timeouts); each test starts its
// own server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/raw_peer.h"
#include "tests/serve_cli_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using serve_testing::ExportAffine;
using serve_testing::kBody12;
using serve_testing::kHalfPlusTwoOf12;
using serve_testing::kPredict;
using serve_testing::Reply;
using serve_testing::ServeProcess;
using serve_testing::TestDir;

// A raw client connection to 127.0.0.1:port that sends what the test says when it
// says so (a slow or stalled client).
class RawHttpClient {
 public:
  explicit RawHttpClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawHttpClient() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // The response's status line once it arrived within `wait`; "" otherwise.
  std::string StatusLine(std::chrono::milliseconds wait) {
    WaitFor("\r\n", wait);
    const size_t end = answer_.find("\r\n");
    return end == std::string::npos ? "" : answer_.substr(0, end);
  }
  const std::string& answer() const { return answer_; }
  // Reads until the answer contains `text` (true) or `wait` passed (false).
  bool WaitFor(const std::string& text, std::chrono::milliseconds wait) {
    const auto give_up = std::chrono::steady_clock::now() + wait;
    while (answer_.find(text) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          give_up - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buffer[512];
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return false;
      answer_.append(buffer, static_cast<size_t>(n));
    }
    return true;
  }

 private:
  int fd_;
  bool connected_ = false;
  std::string answer_;
};

// Sends `request` as it is on a new connection and returns the answer's status
// line ("" when none comes within 3 s).
std::string StatusLineOfRawRequest(int port, const std::string& request) {
  RawHttpClient client(port);
  if (!client.connected() || !client.Send(request)) return "";
  return client.StatusLine(std::chrono::seconds(3));
}

// Headers announcing a 1 MB body, and its first byte: what a client dripping its
// body sends first.
const std::string kDripStart =
    "POST /v1/models/hpt:predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n{";

// Clients that send their body (or their headers) a byte at a time hold a thread
// each, not the server: with 2 warm threads and 20 such clients, a request is
// answered at once.
TEST(ServeCliTest, SlowClientsHoldOnlyTheirOwnConnectionsAndAnotherRequestIsAnsweredAtOnce) {
  const std::string dir = TestDir("slow_clients");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--http-threads", "2"});
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawHttpClient>> drips;
  for (int i = 0; i < 20; ++i) {
    drips.push_back(std::make_unique<RawHttpClient>(server->port()));
    ASSERT_TRUE(drips.back()->connected());
    // Half send their headers and the body's first byte, half only part of the
    // headers.
    ASSERT_TRUE(drips.back()->Send(i % 2 == 0 ? kDripStart : kDripStart.substr(0, 30)));
  }
  const auto start = std::chrono::steady_clock::now();
  const Reply good = server->Post(kPredict, kBody12);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  std::cerr << "a request beside 20 stalled clients took " << took.count() << " ms\n";
  EXPECT_EQ(good.code, 200) << good;
  EXPECT_EQ(good.body, kHalfPlusTwoOf12) << good;
  // Not behind the drips: a pool of 2 threads would free one only when a drip's 5 s
  // read timeout ends it.
  EXPECT_LT(took.count(), 3000);
  // The drips are still being read, not answered.
  EXPECT_EQ(drips.front()->StatusLine(std::chrono::milliseconds(100)), "");
}

// Beyond --max-connections open connections, a request gets 503 naming the flag;
// once they close, requests are served again.
TEST(ServeCliTest, RequestsBeyondMaxConnectionsGet503NamingTheFlag) {
  const std::string dir = TestDir("max_connections");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base,
                                     "--http-threads", "2", "--max-connections", "4"});
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawHttpClient>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawHttpClient>(server->port()));
    ASSERT_TRUE(held.back()->connected() && held.back()->Send(kDripStart));
  }
  // The server starts serving a connection when it accepts it: wait (bounded) until
  // the fifth one is refused.
  Reply refused;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    refused = server->Post(kPredict, kBody12);
  } while (refused.code == 200 && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(refused.code, 503) << refused;
  EXPECT_THAT(refused.body.dump(), HasSubstr("the most --max-connections 4 allows")) << refused;
  held.clear();
  Reply good;
  do {
    good = server->Post(kPredict, kBody12);
  } while (good.code == 503 && std::chrono::steady_clock::now() < deadline + std::chrono::seconds(10));
  EXPECT_EQ(good.code, 200) << good;
}

// A request over --max-instances is refused before it is parsed: a body of 2.9
// million Iris instances (52 MB) leaves the server's peak memory a small multiple of
// the body, not the 2.8 GB parsing and answering it took.
TEST(ServeCliTest, ARequestOverMaxInstancesIsRefusedBeforeItIsParsed) {
  const std::string dir = TestDir("max_instances");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base,
                                     "--max-instances", "1000"});
  ASSERT_NE(server, nullptr);
  std::string big = R"({"instances": [1.0)";
  for (int i = 1; i < 1001; ++i) big += ", 1.0";
  Reply r = server->Post(kPredict, big + "]}");
  EXPECT_EQ(r.code, 413) << r;
  EXPECT_THAT(r.body.dump(), HasSubstr("request has 1001 instances, over --max-instances 1000"));
  // 60 MB of instances: refused with the server's peak memory under 4x the body.
  std::string huge = R"({"instances": [1.0)";
  huge.reserve(61u << 20);
  while (huge.size() < (60u << 20)) huge += ",1.0";
  huge += "]}";
  r = server->Post(kPredict, huge);
  EXPECT_EQ(r.code, 413) << r;
  const int64_t peak_kib = subprocess::PeakResidentKiB(server->child().pid());
  std::cerr << "peak memory after a " << (huge.size() >> 20) << " MiB request: " << (peak_kib >> 10)
            << " MiB\n";
  EXPECT_GT(peak_kib, 0);
  EXPECT_LT(peak_kib, 4 * static_cast<int64_t>(huge.size() >> 10));
  std::string fits = R"({"instances": [1.0)";
  for (int i = 1; i < 1000; ++i) fits += ", 1.0";
  r = server->Post(kPredict, fits + "]}");
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body.at("predictions").size(), 1000u);
}

// A body that keeps trickling in is cut off at --body-timeout-ms with 408.
TEST(ServeCliTest, ABodyNotReceivedWithinTheBodyTimeoutGets408) {
  const std::string dir = TestDir("body_timeout");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base,
                                     "--body-timeout-ms", "1000"});
  ASSERT_NE(server, nullptr);
  RawHttpClient drip(server->port());
  ASSERT_TRUE(drip.connected() && drip.Send(kDripStart));
  const auto start = std::chrono::steady_clock::now();
  std::string status;
  // A byte every 200 ms (each wait bounded), until the server answers or 10 s pass.
  while (status.empty() && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    status = drip.StatusLine(std::chrono::milliseconds(200));
    if (status.empty()) drip.Send(" ");
  }
  EXPECT_THAT(status, HasSubstr(" 408 ")) << drip.answer();
  EXPECT_TRUE(drip.WaitFor("--body-timeout-ms 1000", std::chrono::milliseconds(5000)))
      << drip.answer();
  const Reply good = server->Post(kPredict, kBody12);
  EXPECT_EQ(good.code, 200) << good;
}

TEST(ServeCliTest, AContentLengthThatIsNotAByteCountIsABadRequest) {
  const std::string dir = TestDir("declared_length");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--max-body-bytes", "1000000"});
  ASSERT_NE(server, nullptr);
  const std::string head = "POST /v1/models/hpt:predict HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  // Not a byte count: the client's error.
  EXPECT_THAT(StatusLineOfRawRequest(server->port(), head + "Content-Length: -5\r\n\r\n"),
              HasSubstr(" 400 "));
  EXPECT_THAT(StatusLineOfRawRequest(server->port(), head + "Content-Length: 12x\r\n\r\n"),
              HasSubstr(" 400 "));
  // Over --max-body-bytes: answered at once (not after waiting for the body) and
  // the connection closed.
  RawHttpClient huge(server->port());
  ASSERT_TRUE(huge.connected() && huge.Send(head + "Content-Length: 100000000000\r\n\r\n{"));
  EXPECT_THAT(huge.StatusLine(std::chrono::milliseconds(2000)), HasSubstr(" 413 "));
  EXPECT_TRUE(huge.WaitFor("Connection: close", std::chrono::milliseconds(2000))) << huge.answer();
  const Reply good = server->Post(kPredict, kBody12);
  EXPECT_EQ(good.code, 200) << good;
  EXPECT_EQ(good.body, kHalfPlusTwoOf12) << good;
}

}  // namespace
}  // namespace actorflow
