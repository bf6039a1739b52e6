#include "placement/device_name.h"

#include <gtest/gtest.h>

namespace actorflow {
namespace {

DeviceSpec Parse(const std::string& spec) {
  auto parsed = ParseDeviceSpec(spec);
  EXPECT_TRUE(parsed.ok()) << spec << ": " << parsed.status();
  return parsed.ok() ? parsed.value() : DeviceSpec{};
}

TEST(DeviceNameTest, ParsesAFullName) {
  DeviceSpec d = Parse("/job:worker/replica:0/task:1/device:GPU:0");
  EXPECT_EQ(d.job, "worker");
  EXPECT_EQ(d.replica, 0);
  EXPECT_EQ(d.task, 1);
  EXPECT_EQ(d.type, "GPU");
  EXPECT_EQ(d.id, 0);
  EXPECT_TRUE(d.IsFullySpecified());
  EXPECT_EQ(d.ToString(), "/job:worker/replica:0/task:1/device:GPU:0");
}

TEST(DeviceNameTest, TheEmptySpecConstrainsNothing) {
  DeviceSpec d = Parse("");
  EXPECT_TRUE(d.IsEmpty());
  EXPECT_EQ(d.ToString(), "");
}

TEST(DeviceNameTest, ParsesPartialSpecs) {
  DeviceSpec ps = Parse("/job:ps");
  EXPECT_EQ(ps.job, "ps");
  EXPECT_FALSE(ps.task.has_value());
  EXPECT_FALSE(ps.type.has_value());

  DeviceSpec ps0 = Parse("/job:ps/task:0");
  EXPECT_EQ(ps0.job, "ps");
  EXPECT_EQ(ps0.task, 0);
  EXPECT_FALSE(ps0.replica.has_value());
  EXPECT_EQ(ps0.ToString(), "/job:ps/task:0");

  DeviceSpec gpu1 = Parse("/device:GPU:1");
  EXPECT_EQ(gpu1.type, "GPU");
  EXPECT_EQ(gpu1.id, 1);
  EXPECT_FALSE(gpu1.job.has_value());
  EXPECT_EQ(gpu1.ToString(), "/device:GPU:1");
}

TEST(DeviceNameTest, AStarIdMeansAnyIdAndPrintsAsStar) {
  DeviceSpec any_cpu = Parse("/device:CPU:*");
  EXPECT_EQ(any_cpu.type, "CPU");
  EXPECT_FALSE(any_cpu.id.has_value());
  EXPECT_EQ(any_cpu.ToString(), "/device:CPU:*");
  EXPECT_EQ(Parse("/device:GPU"), Parse("/device:GPU:*"));
  EXPECT_EQ(Parse("/job:w/task:*"), Parse("/job:w"));
}

TEST(DeviceNameTest, LegacyShortFormsAndAnyCaseNameTheSameDevice) {
  DeviceSpec canonical = Parse("/device:GPU:0");
  EXPECT_EQ(Parse("/gpu:0"), canonical);
  EXPECT_EQ(Parse("/GPU:0"), canonical);
  EXPECT_EQ(Parse("/device:gpu:0"), canonical);
  EXPECT_EQ(Parse("GPU:0"), canonical);
  EXPECT_EQ(Parse("/cpu:0").type, "CPU");
  EXPECT_EQ(Parse("/testdev:2").type, "TESTDEV");
  EXPECT_EQ(Parse("/gpu:0").ToString(), "/device:GPU:0");
}

TEST(DeviceNameTest, JobNamesKeepTheirCase) {
  EXPECT_EQ(Parse("/JOB:Worker").job, "Worker");
}

TEST(DeviceNameTest, ComponentsMayComeInAnyOrder) {
  EXPECT_EQ(Parse("/task:1/job:worker/gpu:0"), Parse("/job:worker/task:1/device:GPU:0"));
}

TEST(DeviceNameTest, ToStringRoundTrips) {
  for (const char* spec : {"/job:worker/replica:0/task:1/device:GPU:0", "/job:ps/task:0",
                           "/device:CPU:*", "/replica:2", "/device:*:1", "/job:a-b_c"}) {
    DeviceSpec d = Parse(spec);
    EXPECT_EQ(Parse(d.ToString()), d) << spec;
    EXPECT_EQ(d.ToString(), spec);
  }
}

// Whether parsing `spec` fails with InvalidArgument and a message that quotes the
// spec and says `what`; a failure names the spec and lists what did not hold.
::testing::AssertionResult RejectedAsInvalid(const std::string& spec, const std::string& what) {
  auto parsed = ParseDeviceSpec(spec);
  if (parsed.ok()) return ::testing::AssertionFailure() << "'" << spec << "' parses";
  const Status& s = parsed.status();
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  bool failed = false;
  auto fail = [&]() -> ::testing::AssertionResult& {
    if (!failed) result = ::testing::AssertionFailure() << "'" << spec << "': " << s << ":";
    failed = true;
    return result;
  };
  if (s.code() != Code::kInvalidArgument) fail() << " not InvalidArgument;";
  for (const std::string& part : {"'" + spec + "'", what}) {
    if (s.message().find(part) == std::string::npos) fail() << " missing \"" << part << "\";";
  }
  return result;
}

TEST(DeviceNameTest, ErrorsNameTheSpecAndWhatIsWrong) {
  EXPECT_TRUE(RejectedAsInvalid("/job:ps/task:x", "task must be a non-negative integer"));
  EXPECT_TRUE(RejectedAsInvalid("/task:-1", "task must be a non-negative integer"));
  EXPECT_TRUE(RejectedAsInvalid("/device:GPU:0:1", "expected device:TYPE:ID"));
  EXPECT_TRUE(RejectedAsInvalid("/job:ps/job:worker", "the job is given twice"));
  EXPECT_TRUE(RejectedAsInvalid("/gpu:0/cpu:0", "the device type is given twice"));
  EXPECT_TRUE(RejectedAsInvalid("/job:ps//task:0", "empty component"));
  EXPECT_TRUE(RejectedAsInvalid("/job:ps/", "empty component"));
  EXPECT_TRUE(RejectedAsInvalid("/", "empty component"));
  EXPECT_TRUE(RejectedAsInvalid("/gpu", "unknown component 'gpu'"));
  EXPECT_TRUE(RejectedAsInvalid("/9gpu:0", "unknown component"));
  EXPECT_TRUE(RejectedAsInvalid("/job:1ps", "bad job"));
  EXPECT_TRUE(RejectedAsInvalid("/device:G PU:0", "bad device type"));
}

TEST(DeviceNameTest, ASpecMatchesTheDevicesThatAgreeOnItsFields) {
  DeviceSpec gpu = Parse("/job:worker/replica:0/task:1/device:GPU:0");
  EXPECT_TRUE(Matches(Parse(""), gpu));
  EXPECT_TRUE(Matches(Parse("/gpu:0"), gpu));
  EXPECT_TRUE(Matches(Parse("/job:worker"), gpu));
  EXPECT_TRUE(Matches(Parse("/job:worker/task:1/device:GPU:*"), gpu));
  EXPECT_TRUE(Matches(Parse("/GPU:0"), gpu));
  EXPECT_FALSE(Matches(Parse("/cpu:0"), gpu));
  EXPECT_FALSE(Matches(Parse("/gpu:1"), gpu));
  EXPECT_FALSE(Matches(Parse("/job:ps"), gpu));
  EXPECT_FALSE(Matches(Parse("/task:0"), gpu));
  // A field the device lacks matches only an absent field.
  EXPECT_FALSE(Matches(Parse("/job:worker"), Parse("/gpu:0")));
}

TEST(DeviceNameTest, CompatibleSpecsAgreeWhereBothSayAnything) {
  EXPECT_TRUE(IsCompatible(Parse("/job:ps"), Parse("/gpu:0")));
  EXPECT_TRUE(IsCompatible(Parse("/gpu:0"), Parse("/device:GPU:*")));
  EXPECT_FALSE(IsCompatible(Parse("/gpu:0"), Parse("/cpu:0")));
  EXPECT_FALSE(IsCompatible(Parse("/job:ps/task:0"), Parse("/job:ps/task:1")));
}

TEST(DeviceNameTest, MergeDefaultsFillsOnlyAbsentFields) {
  DeviceSpec defaults = Parse(kLocalCpuDeviceName);
  EXPECT_EQ(MergeDefaults(Parse(""), defaults), defaults);
  EXPECT_EQ(MergeDefaults(Parse("/job:ps/task:1"), defaults).ToString(),
            "/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(MergeDefaults(Parse("/cpu:1"), defaults).ToString(),
            "/job:localhost/replica:0/task:0/device:CPU:1");
  // Another type keeps "any id" rather than borrowing the default's.
  EXPECT_EQ(MergeDefaults(Parse("/device:GPU:*"), defaults).ToString(),
            "/job:localhost/replica:0/task:0/device:GPU:*");
  EXPECT_EQ(Parse(kLocalTaskName), Parse(kLocalCpuDeviceName).TaskPart());
}

}  // namespace
}  // namespace actorflow
