// End-to-end test of `actorflow tune`: the built binary, as a child process, runs a
// 4-configuration grid on a simulated cluster of two worker tasks and ends with the
// table and the --json line; a grid that does not parse is a usage error (exit 2)
// with one stderr line.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/subprocess.h"

namespace actorflow {
namespace {

using subprocess::ProcessResult;

ProcessResult RunActorflow(const std::vector<std::string>& args) {
  ProcessResult r = subprocess::RunProcess(subprocess::Runfile("tools/actorflow"), args);
  EXPECT_TRUE(r.started) << r.error;
  return r;
}

std::string LastLine(const std::string& text) {
  std::string trimmed = text.substr(0, text.find_last_not_of('\n') + 1);
  return trimmed.substr(trimmed.rfind('\n') + 1);
}

TEST(TuneCliTest, GridOnTwoLocalWorkersPrintsTableAndJson) {
  ProcessResult r = RunActorflow({"tune", "--cluster", "local:worker=2", "--grid",
                                  "lr=0.01|0.1;hidden=10,10|32", "--steps", "150", "--json"});
  ASSERT_TRUE(r.exited) << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("best: "), std::string::npos) << r.err;  // --json: the table on stderr
  auto j = nlohmann::json::parse(LastLine(r.out));
  ASSERT_EQ(j["results"].size(), 4u);
  std::set<std::string> tasks;
  for (const auto& result : j["results"]) {
    EXPECT_TRUE(result["params"].contains("lr"));
    EXPECT_TRUE(result["params"].contains("hidden"));
    tasks.insert(result["task"].get<std::string>());
  }
  EXPECT_LE(tasks.size(), 2u);
  EXPECT_TRUE(j["best"].contains("params"));
}

TEST(TuneCliTest, GridThatDoesNotParseExitsWithAUsageError) {
  ProcessResult r = RunActorflow({"tune", "--grid", "lr"});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no '='"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace actorflow
