// `actorflow server --help`: what it says about where the cluster comes from.
#include "tools/server_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <CLI/CLI.hpp>

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

TEST(ServerHelpTest, SaysThatTheClusterMayComeFromTfConfig) {
  CLI::App app{"test"};
  Subcommand server = AddServerSubcommand(&app);
  const std::string help = server.app->help();
  EXPECT_THAT(help, HasSubstr("without it: the TF_CONFIG environment variable")) << help;
  EXPECT_THAT(help, HasSubstr("\"task\": {\"type\": \"ps\", \"index\": 0}")) << help;
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
