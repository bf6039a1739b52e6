#include "tools/cli/status_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "graph/status_testing.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

TEST(StatusServerTest, ServesThePageAndTheBoardAsJson) {
  StatusBoard board("a run");
  board.AddTask("ps:0", "127.0.0.1:1", {});
  board.Step(0, 7, 10, 0.5, 7, true);
  ASSERT_OK_AND_ASSIGN(auto server, StatusServer::Start(&board, "127.0.0.1", 0));
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->url(), "http://127.0.0.1:" + std::to_string(server->port()) + "/");
  httplib::Client client("127.0.0.1", server->port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_THAT(page->body, HasSubstr("/status.json"));
  EXPECT_THAT(page->body, ::testing::Not(HasSubstr("http://")));  // no external resource
  auto json = client.Get("/status.json");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 200);
  const nlohmann::json s = nlohmann::json::parse(json->body);
  EXPECT_EQ(s["title"], "a run");
  EXPECT_EQ(s["workers"][0]["step"], 7);
}

TEST(StatusServerTest, APortInUseIsUnavailableNamingIt) {
  StatusBoard board("run");
  ASSERT_OK_AND_ASSIGN(auto first, StatusServer::Start(&board, "127.0.0.1", 0));
  auto second = StatusServer::Start(&board, "127.0.0.1", first->port());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr(std::to_string(first->port())));
  EXPECT_THAT(second.status().message(), HasSubstr("in use"));
}

TEST(StatusServerTest, AServerDestroyedRightAfterStartStops) {
  StatusBoard board("run");
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK_AND_ASSIGN(auto server, StatusServer::Start(&board, "127.0.0.1", 0));
  }
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
