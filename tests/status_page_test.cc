// The live status page in a real browser: `actorflow train --cluster
// local:ps=1,worker=2 --status-port 0` trains while headless Chromium (Debian's
// `chromium`, installed by tools/setup.sh) loads the page, runs its script against
// /status.json and dumps the DOM it rendered. Waits are bounded (ChildProcess,
// RunProcess); the training is killed when the test ends.
#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/child_process.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using subprocess::ChildProcess;

constexpr char kChromium[] = "/usr/bin/chromium";

std::string Data(const std::string& file) { return subprocess::Runfile("examples/data/" + file); }

TEST(StatusPageTest, HeadlessChromiumShowsTheTasksWorkersAndLossCurvesOfARunningTraining) {
  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << kChromium << " missing: run tools/setup.sh";
  std::string error;
  // Far more epochs than the test needs: it is killed once the page has been read.
  auto train = ChildProcess::Start(
      subprocess::Runfile("tools/actorflow"),
      {"train", "--cluster", "local:ps=1,worker=2", "--train", Data("iris_training.csv"), "--test",
       Data("iris_test.csv"), "--epochs", "1000000", "--status-port", "0", "--json"},
      &error);
  ASSERT_NE(train, nullptr) << error;
  std::string line;
  ASSERT_TRUE(train->WaitForErrLine("status page: http://127.0.0.1:", std::chrono::seconds(60),
                                    &line))
      << train->err();
  const std::string url = line.substr(line.find("http://"));
  // Both workers have reported steps before the browser looks: /status.json is read
  // (bounded) until it says so.
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool both_stepped = false;
  while (!both_stepped && std::chrono::steady_clock::now() < deadline) {
    auto res = client.Get("/status.json");
    if (!res || res->status != 200) continue;
    const nlohmann::json s = nlohmann::json::parse(res->body, nullptr, false);
    both_stepped = s.is_object() && s["workers"].size() == 2 &&
                   s["workers"][0]["step"].get<int64_t>() > 0 &&
                   s["workers"][1]["step"].get<int64_t>() > 0;
  }
  ASSERT_TRUE(both_stepped) << train->err();
  const std::string profile = std::string(std::getenv("TEST_TMPDIR")) + "/chromium";
  const subprocess::ProcessResult page = subprocess::RunProcess(
      kChromium, {"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile,
                  "--virtual-time-budget=5000", "--dump-dom", url});
  ASSERT_TRUE(page.exited) << page.error;
  ASSERT_EQ(page.exit_code, 0) << page.err;
  const std::string& dom = page.out;
  EXPECT_THAT(dom, HasSubstr("id=\"state\">running<"));
  for (const char* task : {"ps:0", "worker:0", "worker:1"}) {
    EXPECT_THAT(dom, HasSubstr(std::string("data-task=\"") + task + "\"")) << task;
  }
  EXPECT_THAT(dom, HasSubstr("data-worker=\"worker:0\""));
  EXPECT_THAT(dom, HasSubstr("data-worker=\"worker:1\""));
  // The rendered loss curves: one polyline per worker with real points (the
  // script's own template has none).
  for (const char* worker : {"worker:0", "worker:1"}) {
    const std::regex curve(std::string("<polyline data-worker=\"") + worker +
                           "\"[^>]*points=\"[0-9.]+,[0-9.]+ [0-9.]+,[0-9.]+");
    EXPECT_TRUE(std::regex_search(dom, curve)) << worker << ":\n" << dom;
  }
  // A step count greater than zero in the workers table.
  EXPECT_TRUE(std::regex_search(dom, std::regex("class=\"step\">[1-9][0-9]*/")));
  train->Kill(SIGKILL);
}

TEST(StatusPageTest, AServerTaskServesItsTaskDevicesAndTheClusterAsJson) {
  const int port = subprocess::FreeLoopbackPort();
  const std::string cluster = std::string(std::getenv("TEST_TMPDIR")) + "/cluster.json";
  {
    std::ofstream(cluster) << "{\"ps\": [\"127.0.0.1:" << port
                           << "\"], \"worker\": [\"127.0.0.1:1\"]}\n";
  }
  std::string error;
  auto server = ChildProcess::Start(subprocess::Runfile("tools/actorflow"),
                                    {"server", "--cluster", cluster, "--job", "ps", "--task", "0",
                                     "--devices", "cpu=2", "--status-port", "0"},
                                    &error);
  ASSERT_NE(server, nullptr) << error;
  std::string line;
  ASSERT_TRUE(server->WaitForErrLine("status page: http://127.0.0.1:", std::chrono::seconds(60),
                                     &line))
      << server->err();
  const std::string url = line.substr(line.find("http://"));
  httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  auto res = client.Get("/status.json");
  ASSERT_TRUE(res);
  const nlohmann::json s = nlohmann::json::parse(res->body);
  EXPECT_EQ(s["state"], "serving");
  ASSERT_EQ(s["tasks"].size(), 2u);
  EXPECT_EQ(s["tasks"][0]["name"], "ps:0");
  EXPECT_EQ(s["tasks"][0]["health"], "up");
  EXPECT_EQ(s["tasks"][0]["devices"].size(), 2u);
  EXPECT_EQ(s["tasks"][1]["health"], "unknown");
  server->Kill(SIGKILL);
}

}  // namespace
}  // namespace actorflow
