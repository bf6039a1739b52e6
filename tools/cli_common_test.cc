// The pieces every subcommand shares: the flags with one meaning everywhere
// (--timeout-ms, --devices, --cluster local:...) and the frame that turns errors
// into one stderr line and an exit code.
#include "tools/cli_common.h"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

namespace actorflow {
namespace cli {
namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

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
  EXPECT_TRUE(Contains(unknown.status().message(), "--devices 'cpu=1,tpu=2': bad entry 'tpu=2'"))
      << unknown.status();
  EXPECT_TRUE(Contains(ParseDeviceCounts("cpu=0").status().message(), "at least one CPU"));
  EXPECT_TRUE(Contains(ParseDeviceCounts("cpu=1,cpu=2").status().message(), "CPU given twice"));
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
  EXPECT_TRUE(Contains(err.str(), "data.csv")) << err.str();
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

}  // namespace
}  // namespace cli
}  // namespace actorflow
