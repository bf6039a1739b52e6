// The pieces every subcommand shares: the flags with one meaning everywhere
// (--timeout-ms, --devices, --cluster local:...) and the frame that turns errors
// into one stderr line and an exit code; the usage errors for a command line that
// does not parse.
#include "tools/cli/cli_common.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

TEST(ParseDeviceCountsTest, AnAbsentFlagLeavesEveryDeviceTypeAtItsDefault) {
  auto counts = ParseDeviceCounts("");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_TRUE(counts->empty());
}

TEST(ParseDeviceCountsTest, ReadsCpuAndGpuCountsInAnyCase) {
  auto counts = ParseDeviceCounts("cpu=2,GPU=1");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(*counts, (std::map<std::string, int>{{"CPU", 2}, {"GPU", 1}}));
}

TEST(ParseDeviceCountsTest, BadEntriesNameTheFlagAndTheEntry) {
  auto unknown = ParseDeviceCounts("cpu=1,tpu=2");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("--devices 'cpu=1,tpu=2': bad entry 'tpu=2'"))
      << unknown.status();
  EXPECT_THAT(ParseDeviceCounts("cpu=0").status().message(), HasSubstr("at least one CPU"));
  EXPECT_THAT(ParseDeviceCounts("cpu=1,cpu=2").status().message(), HasSubstr("CPU given twice"));
}

TEST(CheckTimeoutMsTest, ZeroMeansNoDeadlineAndNegativeIsNamed) {
  EXPECT_TRUE(CheckTimeoutMs(0).ok());
  EXPECT_TRUE(CheckTimeoutMs(30000).ok());
  Status negative = CheckTimeoutMs(-5);
  EXPECT_EQ(negative.code(), Code::kInvalidArgument);
  EXPECT_EQ(negative.message(), "--timeout-ms -5: must be >= 0 (0 = no deadline)");
}

TEST(ClusterFlagTest, LocalShorthandIsRecognizedAndItsErrorsNameTheFlag) {
  EXPECT_TRUE(IsLocalCluster("local:ps=1,worker=2"));
  EXPECT_FALSE(IsLocalCluster("cluster.json"));
  auto shape = ParseLocalClusterFlag("local:ps=1,worker=2");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->at("worker"), 2);
  auto bad = ParseLocalClusterFlag("local:worker");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("--cluster: ", 0), 0u) << bad.status();
}

TEST(RunCheckedTest, ACheckErrorIsAUsageErrorAndRunIsNotCalled) {
  std::ostringstream out, err;
  bool ran = false;
  const int code = RunChecked(
      out, err, [] { return InvalidArgument("--batch 0: must be >= 1"); },
      [&] {
        ran = true;
        return Status::OK();
      });
  EXPECT_EQ(code, kExitUsageError);
  EXPECT_FALSE(ran);
  EXPECT_EQ(err.str(), "actorflow: InvalidArgument: --batch 0: must be >= 1\n");
}

TEST(RunCheckedTest, ARunErrorIsARuntimeErrorUnlessTheCallerMapsIt) {
  std::ostringstream out, err;
  auto fail = [] { return NotFound("data.csv"); };
  EXPECT_EQ(RunChecked(out, err, [] { return Status::OK(); }, fail), kExitRuntimeError);
  EXPECT_THAT(err.str(), HasSubstr("data.csv")) << err.str();
  EXPECT_EQ(RunChecked(out, err, [] { return Status::OK(); }, fail,
                       [](const Status&) { return kExitUsageError; }),
            kExitUsageError);
  EXPECT_EQ(RunChecked(out, err, [] { return Status::OK(); }, [] { return Status::OK(); }),
            kExitOk);
}

TEST(RunCheckedTest, AnEscapingExceptionIsOneInternalErrorLine) {
  std::ostringstream out, err;
  const int code = RunChecked(
      out, err, [] { return Status::OK(); },
      []() -> Status { throw std::runtime_error("boom\nagain"); });
  EXPECT_EQ(code, kExitRuntimeError);
  EXPECT_EQ(err.str(), "actorflow: Internal: unexpected exception: boom again\n");
}

// Two subcommands as tools/actorflow.cc declares them.
struct FakeCommandLine {
  CLI::App app{"test"};
  int64_t epochs = 0;
  int64_t steps = 0;
  std::vector<Subcommand> subcommands;

  FakeCommandLine() {
    CLI::App* train = app.add_subcommand("train", "");
    train->add_option("--epochs", epochs, "");
    train->add_option("--steps", steps, "");
    subcommands.push_back(Subcommand{train, [] { return kExitOk; }});
    subcommands.push_back(Subcommand{app.add_subcommand("run", ""), [] { return kExitOk; }});
  }
};

TEST(DescribeParseErrorTest, AnUnknownSubcommandIsNamedWithTheValidOnes) {
  FakeCommandLine cli;
  Status status = DescribeParseError(cli.subcommands, {"trian", "--steps", "3"}, "CLI11 says");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "unknown subcommand 'trian' (did you mean 'train'?): expected one of train, run");
  EXPECT_EQ(DescribeParseError(cli.subcommands, {"serve"}, "").message(),
            "unknown subcommand 'serve': expected one of train, run");
  EXPECT_EQ(DescribeParseError(cli.subcommands, {}, "").message(),
            "no subcommand given: expected one of train, run");
}

TEST(DescribeParseErrorTest, AnUnknownFlagProposesTheNearestFlagOfItsSubcommand) {
  FakeCommandLine cli;
  EXPECT_EQ(DescribeParseError(cli.subcommands, {"train", "--steps=3", "--epoch", "2"}, "")
                .message(),
            "train: unknown flag --epoch (did you mean --epochs?); run 'actorflow train --help' "
            "for the flags");
  EXPECT_EQ(DescribeParseError(cli.subcommands, {"train", "--lr=0.1"}, "").message(),
            "train: unknown flag --lr; run 'actorflow train --help' for the flags");
  // run has no --epochs: the flags of the subcommand given are the candidates.
  EXPECT_EQ(DescribeParseError(cli.subcommands, {"run", "--epochs", "2"}, "").message(),
            "run: unknown flag --epochs; run 'actorflow run --help' for the flags");
}

TEST(DescribeParseErrorTest, OtherErrorsKeepCli11sMessageAndPointToTheUsage) {
  FakeCommandLine cli;
  EXPECT_EQ(DescribeParseError(cli.subcommands, {"train", "--steps", "x"}, "--steps: x is bad")
                .message(),
            "--steps: x is bad (run 'actorflow train --help' for usage)");
}

TEST(DescribeParseErrorTest, TheRealParserFailsOnWhatTheDescriptionNames) {
  FakeCommandLine cli;
  std::vector<std::string> args = {"train", "--epoch", "2"};
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a stack
  try {
    cli.app.parse(reversed);
    FAIL() << "CLI11 accepted --epoch";
  } catch (const CLI::ParseError& e) {
    EXPECT_THAT(DescribeParseError(cli.subcommands, args, e.what()).message(),
                HasSubstr("did you mean --epochs?"));
  }
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
