// End-to-end tests of `actorflow serve` under load: a burst of raw connections is
// answered with 200 or 503 while another client still gets its answer (asking again
// after a 503), and batching
// merges concurrent requests and splits the answers back (checked by its metrics).
// The server is a child process on 127.0.0.1 (tests/serve_cli_testing.h); its
// answers: serve_cli_test.cc.
//
// Every wait is bounded: the server's first line (ChildProcess), poll() on the burst's
// sockets until a deadline, client timeouts. Each test starts its own server, so the
// counts it checks are its own; the server is stopped with SIGTERM and must exit 0.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/serve_cli_testing.h"

namespace actorflow {
namespace {

using nlohmann::json;
using serve_testing::ExportAffine;
using serve_testing::kBody12;
using serve_testing::kHalfPlusTwoOf12;
using serve_testing::kPredict;
using serve_testing::NewClient;
using serve_testing::Post;
using serve_testing::Reply;
using serve_testing::Sample;
using serve_testing::ServeProcess;
using serve_testing::TestDir;
using Clock = std::chrono::steady_clock;

// One raw connection of the burst below: a request written and the answer read to
// the end (the request asks the server to close).
struct RawConnection {
  int fd = -1;
  size_t sent = 0;
  std::string received;
  bool done = false;
  std::string error;  // why it got no answer
};

TEST(ServeCliTest, ABurstOfConnectionsIsAnsweredWith200Or503AndAnotherClientStillGetsItsAnswer) {
  const std::string dir = TestDir("burst");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  // Descriptors for the burst (the server raises its own limit to the hard one).
  struct rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t wanted = 10000 + 256;
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(limit.rlim_max, wanted);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
  const int connections = static_cast<int>(std::min<rlim_t>(10000, limit.rlim_cur - 256));
  ASSERT_GE(connections, 500) << "RLIMIT_NOFILE's hard limit " << limit.rlim_max << " is too low";
  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base});
  ASSERT_NE(server, nullptr);

  const std::string request = std::string("POST ") + kPredict +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              "Connection: close\r\nContent-Length: " +
                              std::to_string(std::string(kBody12).size()) + "\r\n\r\n" + kBody12;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(server->port()));
  std::vector<RawConnection> conns(connections);
  for (RawConnection& c : conns) {
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      c.done = true;
      c.error = std::string("socket: ") + std::strerror(errno);
    } else if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
               errno != EINPROGRESS) {
      c.done = true;
      c.error = std::string("connect: ") + std::strerror(errno);
    } else {
      // The request goes at once where the socket takes it: the server closes a
      // connection that sends nothing within its keep-alive timeout (2 s), and on a
      // loaded machine the poll loop below may reach the last of 10000 sockets
      // later than that. Where it does not take it yet, the loop sends it.
      const ssize_t n = send(c.fd, request.data(), request.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.sent = static_cast<size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN &&
                 errno != EINPROGRESS) {
        c.done = true;
        c.error = std::string("send: ") + std::strerror(errno);
      }
    }
  }
  // Another client, while the burst is in flight. Connections get threads of their
  // own up to --max-connections + 64; this one may wait behind the burst's excess
  // (served in accept order, each quickly: it asked to close), and while the burst
  // fills the replicas (or --max-connections) it may be told 503, as any client may,
  // and asks again, as a client should, until it has its answer. On a loaded 2-core
  // machine that took up to 10 s, hence the bound of 20.
  Reply other;
  int other_overloaded = 0;
  Clock::duration other_took{};
  std::thread other_client([&] {
    auto client = NewClient(server->port());
    const auto start = Clock::now();
    do {
      other = Post(*client, kPredict, R"({"instances": [5.0]})");
      if (other.code == 503) ++other_overloaded;
    } while (other.code == 503 && Clock::now() - start < std::chrono::seconds(20));
    other_took = Clock::now() - start;
  });

  const auto deadline = Clock::now() + std::chrono::seconds(30);
  std::vector<pollfd> fds;
  std::vector<RawConnection*> polled;
  while (Clock::now() < deadline) {
    fds.clear();
    polled.clear();
    for (RawConnection& c : conns) {
      if (c.done) continue;
      fds.push_back({c.fd, static_cast<short>(c.sent < request.size() ? POLLOUT : POLLIN), 0});
      polled.push_back(&c);
    }
    if (fds.empty()) break;
    if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      RawConnection& c = *polled[i];
      if (fds[i].revents == 0) continue;
      if (c.sent < request.size()) {
        const ssize_t n = send(c.fd, request.data() + c.sent, request.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          c.done = true;
          c.error = std::string("send: ") + std::strerror(errno);
        }
        continue;
      }
      char buffer[4096];
      for (;;) {
        const ssize_t n = read(c.fd, buffer, sizeof(buffer));
        if (n > 0) {
          c.received.append(buffer, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) c.done = true;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          c.done = true;
          c.error = std::string("read: ") + std::strerror(errno);
        }
        break;
      }
    }
  }
  other_client.join();

  int ok = 0, overloaded = 0, no_answer = 0, wrong = 0;
  std::string example;
  for (RawConnection& c : conns) {
    if (c.fd >= 0) close(c.fd);
    const size_t body_at = c.received.find("\r\n\r\n");
    const std::string status_line = c.received.substr(0, c.received.find("\r\n"));
    const json body = body_at == std::string::npos
                          ? json()
                          : json::parse(c.received.substr(body_at + 4), nullptr, false);
    if (!c.done || !c.error.empty() || body_at == std::string::npos) {
      ++no_answer;
      if (example.empty()) example = c.done ? c.error + " after: " + c.received : "no answer in 30 s";
    } else if (status_line == "HTTP/1.1 200 OK" && body == kHalfPlusTwoOf12) {
      ++ok;
    } else if (status_line.rfind("HTTP/1.1 503", 0) == 0 && body.contains("error")) {
      ++overloaded;
    } else {
      ++wrong;
      if (example.empty()) example = c.received;
    }
  }
  EXPECT_EQ(no_answer, 0) << example;
  EXPECT_EQ(wrong, 0) << example;
  EXPECT_EQ(ok + overloaded, connections);
  EXPECT_GT(ok, 0);
  std::cerr << "the other client was told 503 " << other_overloaded << " times, answered after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(other_took).count()
            << " ms\n";
  EXPECT_EQ(other.code, 200) << other;
  EXPECT_EQ(other.body, json::parse(R"({"predictions":[4.5]})")) << other;
  EXPECT_LT(other_took, std::chrono::seconds(20));
  ASSERT_FALSE(server->child().HasExited()) << server->child().err();
  EXPECT_EQ(server->Post(kPredict, kBody12).body, kHalfPlusTwoOf12);
  server->Stop();
}

TEST(ServeCliTest, BatchingMergesConcurrentRequestsAndSplitsTheAnswersBack) {
  const std::string dir = TestDir("batching");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base,
                                     "--enable-batching", "--max-batch-size", "8",
                                     "--batch-timeout-micros", "5000"});
  ASSERT_NE(server, nullptr);
  // 16 clients, released together, each posting 10 single instances of its own
  // values; every answer must be its own 0.5 * v + 2.
  constexpr int kClients = 16, kRequests = 10;
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::vector<std::string> wrong;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = NewClient(server->port());
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return go; });
      }
      for (int i = 0; i < kRequests; ++i) {
        const int v = c * 100 + i;
        const Reply r = Post(*client, kPredict, "{\"instances\": [" + std::to_string(v) + "]}");
        const json expected = {{"predictions", json::array({0.5 * v + 2})}};
        if (r.code != 200 || r.body != expected) {
          std::ostringstream s;
          s << "value " << v << ": " << r;
          std::lock_guard<std::mutex> lock(mu);
          wrong.push_back(s.str());
        }
      }
    });
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    go = true;
  }
  cv.notify_all();
  for (std::thread& t : clients) t.join();
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " wrong answers, e.g. " << wrong[0];

  const Reply m = server->Get("/monitoring/prometheus/metrics");
  ASSERT_EQ(m.code, 200) << m;
  const std::string labels = R"({model="hpt",version="1")";
  const long long batches = Sample(m.text, "actorflow_serving_batch_size_count" + labels + "}");
  const long long single_row = Sample(m.text, "actorflow_serving_batch_size_bucket" + labels + R"(,le="1"})");
  // Every row went through exactly one batch, none over --max-batch-size, and with
  // 16 clients inside a 5 ms window some batches held more than one row.
  EXPECT_EQ(Sample(m.text, "actorflow_serving_batch_size_sum" + labels + "}"), kClients * kRequests)
      << m.text;
  EXPECT_EQ(Sample(m.text, "actorflow_serving_batch_size_bucket" + labels + R"(,le="8"})"), batches);
  EXPECT_GT(batches, 0) << m.text;
  EXPECT_LT(single_row, batches) << "no batch held more than one row:\n" << m.text;
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_requests_total{model="hpt",version="1",api="predict",code="200"})"),
            kClients * kRequests);
  server->Stop();
}

}  // namespace
}  // namespace actorflow
