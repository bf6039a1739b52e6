// End-to-end tests of `actorflow serve` as model versions come and go under its
// model base path (polled every second): a new version takes over under load without
// a failed request, a corrupt version ends with its error while the previous one
// serves, a missing base path says why until a version is exported there, a deleted
// version ends while the others keep serving. The server is a child process on
// 127.0.0.1 (tests/serve_cli_testing.h); its answers: serve_cli_test.cc.
//
// Every wait is bounded: the server's first line (ChildProcess), status polls until
// a deadline, client timeouts. Each test starts its own server, so the counts it
// checks are its own; the server is stopped with SIGTERM and must exit 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/serve_cli_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using serve_testing::ExportAffine;
using serve_testing::kBody12;
using serve_testing::kHalfPlusThreeOf12;
using serve_testing::kHalfPlusTwoOf12;
using serve_testing::kPredict;
using serve_testing::kStateDeadline;
using serve_testing::NewClient;
using serve_testing::Post;
using serve_testing::ReadFile;
using serve_testing::Reply;
using serve_testing::Sample;
using serve_testing::ServeProcess;
using serve_testing::StatusJson;
using serve_testing::TestDir;
using serve_testing::WriteDamagedVersion;
using serve_testing::WriteFile;

TEST(ServeCliTest, ANewVersionTakesOverUnderLoadWithoutAFailedRequest) {
  const std::string dir = TestDir("swap");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--file-system-poll-wait-seconds", "1"});
  ASSERT_NE(server, nullptr);

  // Each client posts [1, 2] back to back and keeps what each answer was: 1 (v1's
  // values), 2 (v2's) or 0 (anything else: another code or body).
  constexpr int kClients = 4;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<int>> seen(kClients);
  std::vector<std::string> unexpected;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = NewClient(server->port());
      while (!stop.load()) {
        const Reply r = Post(*client, kPredict, kBody12);
        const int which = r.code != 200 ? 0 : r.body == kHalfPlusTwoOf12 ? 1 : r.body == kHalfPlusThreeOf12 ? 2 : 0;
        std::lock_guard<std::mutex> lock(mu);
        seen[c].push_back(which);
        if (which == 0 && unexpected.size() < 10) {
          std::ostringstream s;
          s << r;
          unexpected.push_back(s.str());
        }
        cv.notify_all();
      }
    });
  }
  auto every_client_saw = [&](int which) {
    for (const auto& answers : seen)
      if (std::find(answers.begin(), answers.end(), which) == answers.end()) return false;
    return true;
  };
  bool loaded_before_swap = false, swapped = false;
  {
    std::unique_lock<std::mutex> lock(mu);
    loaded_before_swap = cv.wait_for(lock, kStateDeadline, [&] { return every_client_saw(1); });
  }
  Reply r;
  if (loaded_before_swap) {
    ExportAffine(dir, base, 2, "0.5", "3");
    // Version 1 ends once its last request finished: it was UNLOADING until then.
    EXPECT_TRUE(server->WaitForStatus("/v1/models/hpt", StatusJson({{2, "AVAILABLE"}, {1, "END"}}), &r))
        << r;
    std::unique_lock<std::mutex> lock(mu);
    swapped = cv.wait_for(lock, kStateDeadline, [&] { return every_client_saw(2); });
  }
  stop = true;
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(loaded_before_swap) << "the clients got no answer from version 1";
  EXPECT_TRUE(swapped) << "not every client got an answer from version 2";
  EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " unexpected answers, e.g. " << unexpected[0];
  for (int c = 0; c < kClients; ++c) {
    // Each client's answers: version 1's, then version 2's, never back.
    const std::vector<int>& answers = seen[c];
    const auto first_v2 = std::find(answers.begin(), answers.end(), 2);
    EXPECT_TRUE(std::all_of(answers.begin(), first_v2, [](int w) { return w == 1; })) << "client " << c;
    EXPECT_TRUE(std::all_of(first_v2, answers.end(), [](int w) { return w == 2; })) << "client " << c;
  }
  r = server->Get("/monitoring/prometheus/metrics");
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(Sample(r.text, R"(actorflow_serving_request_errors_total{model="hpt",version="1",api="predict",code="503"})"), -1);
  EXPECT_EQ(Sample(r.text, R"(actorflow_serving_request_errors_total{model="hpt",version="2",api="predict",code="503"})"), -1);
  server->Stop();
}

TEST(ServeCliTest, ACorruptVersionEndsWithItsErrorWhileThePreviousOneServes) {
  const std::string dir = TestDir("corrupt");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  ExportAffine(dir, base, 2, "0.5", "3");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--file-system-poll-wait-seconds", "1"});
  ASSERT_NE(server, nullptr);
  Reply r = server->Get("/v1/models/hpt");
  EXPECT_EQ(r.body, StatusJson({{2, "AVAILABLE"}})) << r;

  // Version 3: its graph.json cut in half.
  WriteDamagedVersion(base, 2, 3, [](const std::string& version_dir) {
    const std::string graph = ReadFile(version_dir + "/graph.json");
    WriteFile(version_dir + "/graph.json", graph.substr(0, graph.size() / 2));
  });
  ASSERT_TRUE(server->WaitForStatus(
      "/v1/models/hpt/versions/3",
      [](const json& s) { return s["model_version_status"].size() == 1 && s["model_version_status"][0]["state"] == "END"; },
      &r))
      << r;
  const json& v3 = r.body["model_version_status"][0];
  EXPECT_EQ(v3["status"]["error_code"], "INVALID_ARGUMENT");
  EXPECT_THAT(v3["status"]["error_message"].get<std::string>(), HasSubstr(base + "/3"));
  EXPECT_THAT(v3["status"]["error_message"].get<std::string>(), HasSubstr("graph JSON: malformed JSON"));
  r = server->Get("/v1/models/hpt/versions/2");
  EXPECT_EQ(r.body, StatusJson({{2, "AVAILABLE"}})) << r;
  r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.body, kHalfPlusThreeOf12) << r;
  r = server->Post("/v1/models/hpt/versions/3:predict", kBody12);
  EXPECT_EQ(r.code, 404) << r;

  // A good version 4 replaces version 2.
  ExportAffine(dir, base, 4, "0.5", "2");
  ASSERT_TRUE(server->WaitForStatus(
      "/v1/models/hpt",
      [](const json& s) {
        return s["model_version_status"].size() == 3 && s["model_version_status"][0]["state"] == "AVAILABLE" &&
               s["model_version_status"][2]["state"] == "END";
      },
      &r))
      << r;
  EXPECT_EQ(r.body["model_version_status"][0], StatusJson({{4, "AVAILABLE"}})["model_version_status"][0]);
  EXPECT_EQ(r.body["model_version_status"][1]["version"], "3");
  EXPECT_EQ(r.body["model_version_status"][1]["state"], "END");
  EXPECT_EQ(r.body["model_version_status"][2], StatusJson({{2, "END"}})["model_version_status"][0]);
  r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  server->Stop();
}

TEST(ServeCliTest, AModelWhoseBasePathIsMissingSaysWhyUntilAVersionIsExportedThere) {
  const std::string dir = TestDir("missing_base");
  const std::string base = dir + "/models/hpt";
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--file-system-poll-wait-seconds", "1"});
  ASSERT_NE(server, nullptr);
  std::string line;
  EXPECT_TRUE(server->child().WaitForErrLine("actorflow serve: model hpt is not available yet",
                                             std::chrono::seconds(10), &line))
      << server->child().err();
  EXPECT_THAT(line, HasSubstr(base));
  for (const std::string path : {"/v1/models/hpt", "/v1/models/hpt/metadata"}) {
    const Reply r = server->Get(path);
    EXPECT_EQ(r.code, 503) << path << ": " << r;
    EXPECT_THAT(r.body.value("error", ""), HasSubstr("model base path '" + base + "' does not exist"))
        << path;
  }
  Reply r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.code, 503) << r;
  EXPECT_THAT(r.body.value("error", ""), HasSubstr(base));

  ExportAffine(dir, base, 1, "0.5", "2");
  ASSERT_TRUE(server->WaitForStatus("/v1/models/hpt", StatusJson({{1, "AVAILABLE"}}), &r)) << r;
  r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  server->Stop();
}

TEST(ServeCliTest, ADeletedVersionEndsAndTheOthersKeepServing) {
  const std::string dir = TestDir("deleted");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  ExportAffine(dir, base, 2, "0.5", "3");
  const std::string config = dir + "/models.json";
  WriteFile(config, json({{"model_config_list",
                           {{{"name", "hpt"},
                             {"base_path", base},
                             {"model_version_policy", {{"all", json::object()}}},
                             {"version_labels", {{"stable", 1}}}}}}})
                        .dump());
  auto server = ServeProcess::Start(
      {"--model-config-file", config, "--file-system-poll-wait-seconds", "1"});
  ASSERT_NE(server, nullptr);
  Reply r = server->Get("/v1/models/hpt");
  EXPECT_EQ(r.body, StatusJson({{2, "AVAILABLE"}, {1, "AVAILABLE"}})) << r;
  EXPECT_EQ(server->Post(kPredict, kBody12).body, kHalfPlusThreeOf12);
  EXPECT_EQ(server->Post("/v1/models/hpt/versions/2:predict", kBody12).body, kHalfPlusThreeOf12);
  EXPECT_EQ(server->Post("/v1/models/hpt/versions/1:predict", kBody12).body, kHalfPlusTwoOf12);
  EXPECT_EQ(server->Post("/v1/models/hpt/labels/stable:predict", kBody12).body, kHalfPlusTwoOf12);
  r = server->Get("/v1/models/hpt/labels/stable");
  EXPECT_EQ(r.body, StatusJson({{1, "AVAILABLE"}})) << r;

  std::filesystem::remove_all(base + "/2");
  ASSERT_TRUE(server->WaitForStatus("/v1/models/hpt", StatusJson({{2, "END"}, {1, "AVAILABLE"}}), &r)) << r;
  r = server->Post("/v1/models/hpt/versions/2:predict", kBody12);
  EXPECT_EQ(r.code, 404) << r;
  EXPECT_THAT(r.body.value("error", ""), HasSubstr("hpt, 2"));
  r = server->Get("/v1/models/hpt/versions/2");
  EXPECT_EQ(r.body, StatusJson({{2, "END"}})) << r;
  r = server->Post(kPredict, kBody12);
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  EXPECT_EQ(server->Post("/v1/models/hpt/labels/stable:predict", kBody12).body, kHalfPlusTwoOf12);
  server->Stop();
}

}  // namespace
}  // namespace actorflow
