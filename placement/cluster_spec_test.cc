#include "placement/cluster_spec.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "placement/device_name.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr char kExample[] = R"({"ps": ["host:port"], "worker": ["host:port", "host:port"]})";
constexpr char kCluster[] =
    R"({"ps": ["ps0.example.com:2222"], "worker": ["w0.example.com:2222", "w1.example.com:2223"]})";

ClusterSpec Parse(const std::string& text) {
  auto spec = ClusterSpec::FromJson(text);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? spec.value() : ClusterSpec();
}

// The Status of FromJson(text), expected to fail.
Status FromJsonError(const std::string& text) {
  auto spec = ClusterSpec::FromJson(text, "cluster.json");
  EXPECT_FALSE(spec.ok()) << text << " was accepted";
  return spec.ok() ? Status::OK() : spec.status();
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// Reading cluster JSON ------------------------------------------------------------

TEST(ClusterSpecTest, ThePlaceholderHostPortIsNotAnAddress) {
  // The documented shape with its placeholders kept: "port" is not a number.
  Status status = FromJsonError(kExample);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("port \"port\" is not a number"));
}

TEST(ClusterSpecTest, ReadsJobsTasksAndAddresses) {
  ClusterSpec spec = Parse(kCluster);
  EXPECT_EQ(spec.jobs(), (std::vector<std::string>{"ps", "worker"}));
  EXPECT_EQ(spec.num_tasks("ps"), 1);
  EXPECT_EQ(spec.num_tasks("worker"), 2);
  EXPECT_EQ(spec.num_tasks("chief"), 0);

  auto w1 = spec.Address({"worker", 1});
  ASSERT_TRUE(w1.ok()) << w1.status();
  EXPECT_EQ(w1->host, "w1.example.com");
  EXPECT_EQ(w1->port, 2223);
  EXPECT_EQ(w1->ToString(), "w1.example.com:2223");
  EXPECT_EQ(spec.Address({"ps", 0})->ToString(), "ps0.example.com:2222");
}

TEST(ClusterSpecTest, JobNamesAreFreeAndListedSorted) {
  ClusterSpec spec = Parse(
      R"({"worker": ["a:1"], "chief": ["b:1"], "evaluator": ["c:1"], "my-job_2": ["d:1", "d:2"]})");
  EXPECT_EQ(spec.jobs(), (std::vector<std::string>{"chief", "evaluator", "my-job_2", "worker"}));
  EXPECT_EQ(spec.num_tasks("my-job_2"), 2);
}

TEST(ClusterSpecTest, AllTasksComeInJobOrderThenIndex) {
  ClusterSpec spec = Parse(R"({"worker": ["a:1", "a:2"], "ps": ["b:1"]})");
  EXPECT_EQ(spec.AllTasks(),
            (std::vector<TaskId>{{"ps", 0}, {"worker", 0}, {"worker", 1}}));
}

TEST(ClusterSpecTest, AcceptsIpAddressesIncludingBracketedIpv6) {
  ClusterSpec spec = Parse(R"({"w": ["127.0.0.1:1", "[::1]:65535"]})");
  EXPECT_EQ(spec.Address({"w", 0})->host, "127.0.0.1");
  EXPECT_EQ(spec.Address({"w", 1})->host, "[::1]");
  EXPECT_EQ(spec.Address({"w", 1})->port, 65535);
}

TEST(ClusterSpecTest, ToJsonRoundTrips) {
  ClusterSpec spec = Parse(kCluster);
  const std::string json = spec.ToJson();
  EXPECT_EQ(json,
            R"({"ps":["ps0.example.com:2222"],"worker":["w0.example.com:2222","w1.example.com:2223"]})");
  EXPECT_EQ(Parse(json), spec);
}

TEST(ClusterSpecTest, NamesTasksTheTensorFlowWay) {
  TaskId task{"worker", 1};
  EXPECT_EQ(task.ToString(), "/job:worker/task:1");
  EXPECT_EQ(ClusterSpec::TaskName(task), "/job:worker/replica:0/task:1");
}

TEST(ClusterSpecTest, EveryTaskNameParsesAsADeviceSpec) {
  ClusterSpec spec = Parse(R"({"my-job_2": ["a:1", "a:2"], "ps": ["b:1"]})");
  for (const TaskId& task : spec.AllTasks()) {
    auto parsed = ParseDeviceSpec(ClusterSpec::TaskName(task));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->job, task.job);
    EXPECT_EQ(parsed->replica, 0);
    EXPECT_EQ(parsed->task, task.index);
  }
}

// Looking tasks up ----------------------------------------------------------------

TEST(ClusterSpecTest, AddressOfAnUnknownJobListsTheJobs) {
  auto address = Parse(kCluster).Address({"chief", 0});
  ASSERT_FALSE(address.ok());
  EXPECT_EQ(address.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(address.status().message(), HasSubstr("unknown job \"chief\""));
  EXPECT_THAT(address.status().message(), HasSubstr("ps, worker"));
}

TEST(ClusterSpecTest, AddressOfAnIndexOutOfRangeSaysTheTaskCount) {
  ClusterSpec spec = Parse(kCluster);
  for (int index : {2, -1}) {
    auto address = spec.Address({"worker", index});
    ASSERT_FALSE(address.ok()) << index;
    EXPECT_EQ(address.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(address.status().message(),
                HasSubstr("task index " + std::to_string(index)));
    EXPECT_THAT(address.status().message(), HasSubstr("job \"worker\" has 2 tasks"));
  }
}

// Bad cluster JSON ----------------------------------------------------------------

TEST(ClusterSpecTest, MalformedJsonNamesTheSourceLineAndColumn) {
  Status status = FromJsonError("{\n  \"ps\": [\"a:1\"],\n  \"worker\" [\"b:1\"]\n}");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("cluster.json: malformed JSON at line 3, column"));
}

TEST(ClusterSpecTest, TheDefaultSourceIsCalledClusterSpec) {
  auto spec = ClusterSpec::FromJson("[");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("cluster spec: malformed JSON at line 1"));
}

TEST(ClusterSpecTest, RejectsAValueThatIsNotAnObject) {
  Status status = FromJsonError(R"(["a:1"])");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("expected a JSON object"));
  EXPECT_THAT(status.message(), HasSubstr("got array"));
}

TEST(ClusterSpecTest, RejectsAClusterWithoutJobs) {
  Status status = FromJsonError("{}");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("no jobs"));
}

TEST(ClusterSpecTest, RejectsAJobThatIsNotAList) {
  Status status = FromJsonError(R"({"ps": ["a:1"], "worker": "b:1"})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("job \"worker\" must be a list"));
  EXPECT_THAT(status.message(), HasSubstr("got string \"b:1\""));
}

TEST(ClusterSpecTest, RejectsAnEntryThatIsNotAStringNamingJobAndIndex) {
  Status status = FromJsonError(R"({"worker": ["a:1", 2222]})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("job \"worker\" task 1 must be a \"host:port\" string"));
  EXPECT_THAT(status.message(), HasSubstr("got number 2222"));
}

TEST(ClusterSpecTest, RejectsAnEmptyJob) {
  Status status = FromJsonError(R"({"ps": [], "worker": ["a:1"]})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("job \"ps\" has no tasks"));
}

TEST(ClusterSpecTest, RejectsAJobNameThatCannotAppearInATaskName) {
  Status status = FromJsonError(R"({"work/er": ["a:1"]})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("job \"work/er\" is not a valid job name"));
}

TEST(ClusterSpecTest, RejectsAJobGivenTwice) {
  Status status = FromJsonError(R"({"worker": ["a:1"], "worker": ["b:1"]})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("key \"worker\" appears more than once"));
}

TEST(ClusterSpecTest, RejectsAnEmptyHostNamingTheEntry) {
  Status status = FromJsonError(R"({"worker": ["a:1", ":2222"]})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("job \"worker\" task 1: bad address \":2222\": empty host"));
}

TEST(ClusterSpecTest, RejectsBadPortsNamingTheEntry) {
  struct Case {
    const char* entry;
    const char* reason;
  };
  for (const Case& c : {Case{"host:abc", "port \"abc\" is not a number"},
                        Case{"host:-1", "port \"-1\" is not a number"},
                        Case{"host:0", "port 0 is not a valid port"},
                        Case{"host:65536", "port 65536 is out of range"},
                        Case{"host:99999999999", "port 99999999999 is out of range"},
                        Case{"host:", "missing port"},
                        Case{"host", "missing \":port\""}}) {
    Status status = FromJsonError(std::string(R"({"ps": [")") + c.entry + R"("]})");
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << c.entry;
    EXPECT_THAT(status.message(),
                HasSubstr(std::string("job \"ps\" task 0: bad address \"") + c.entry + "\""));
    EXPECT_THAT(status.message(), HasSubstr(c.reason));
  }
}

TEST(ClusterSpecTest, RejectsAnUnbracketedIpv6Host) {
  Status status = FromJsonError(R"({"w": ["::1:2222"]})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("in brackets"));
}

// The one "host:port" parser: cluster specs, client targets and bulk endpoints.
TEST(ParseHostPortTest, KeepsTheHostAsWrittenAndReadsThePort) {
  StatusOr<TaskAddress> v4 = ParseHostPort("10.0.0.7:2222");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->host, "10.0.0.7");
  EXPECT_EQ(v4->port, 2222);
  StatusOr<TaskAddress> v6 = ParseHostPort("[::1]:65535");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "[::1]");
  EXPECT_EQ(v6->port, 65535);
}

TEST(ParseHostPortTest, SaysWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"localhost", "missing \":port\""},  {":2222", "empty host"},
      {"[]:2222", "empty host"},            {"host:", "missing port"},
      {"host:22a", "not a number"},         {"host:70000", "out of range"},
      {"host:0", "port 0"},                 {"::1:2222", "in brackets"},
      {"my host:2222", "whitespace"},
  };
  for (const auto& [text, why] : cases) {
    StatusOr<TaskAddress> parsed = ParseHostPort(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << text;
    EXPECT_THAT(parsed.status().message(), ::testing::HasSubstr(why)) << text;
  }
}

TEST(ClusterSpecTest, RejectsADuplicateAddressNamingBothTasks) {
  Status status = FromJsonError(R"({"ps": ["h:2222"], "worker": ["h:2223", "H:2222"]})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("duplicate address H:2222"));
  EXPECT_THAT(status.message(), HasSubstr("/job:ps/task:0 and /job:worker/task:1"));
}

TEST(ClusterSpecTest, TheSameHostWithDifferentPortsIsFine) {
  EXPECT_EQ(Parse(R"({"w": ["localhost:1", "localhost:2"]})").num_tasks("w"), 2);
}

// Files ---------------------------------------------------------------------------

TEST(ClusterSpecTest, LoadsAFile) {
  const std::string path = TempPath("cluster_ok.json");
  WriteFile(path, kCluster);
  auto spec = ClusterSpec::FromFile(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec.value(), Parse(kCluster));
}

TEST(ClusterSpecTest, AMissingFileIsNotFoundNamingThePath) {
  const std::string path = TempPath("no_such_cluster.json");
  auto spec = ClusterSpec::FromFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Code::kNotFound);
  EXPECT_THAT(spec.status().message(), HasSubstr(path));
}

TEST(ClusterSpecTest, ADirectoryIsNotFoundNamingThePath) {
  const std::string path = TempPath("");
  auto spec = ClusterSpec::FromFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Code::kNotFound);
  EXPECT_THAT(spec.status().message(), HasSubstr(path));
}

TEST(ClusterSpecTest, ErrorsInAFileNameTheFileLineAndColumn) {
  const std::string path = TempPath("cluster_bad.json");
  WriteFile(path, "{\"ps\": [\"a:1\"],\n\"worker\": [\"b:1\",]}");
  auto spec = ClusterSpec::FromFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr(path + ": malformed JSON at line 2, column"));
}

// TF_CONFIG -----------------------------------------------------------------------

constexpr char kTfConfig[] =
    R"({"cluster": {"ps": ["p:1"], "worker": ["w:1", "w:2"]},
        "task": {"type": "worker", "index": 1}, "environment": "cloud"})";

TEST(TfConfigTest, ReadsTheClusterAndTheTask) {
  auto config = ParseTfConfig(kTfConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster, Parse(R"({"ps": ["p:1"], "worker": ["w:1", "w:2"]})"));
  EXPECT_EQ(config->task, (TaskId{"worker", 1}));
  EXPECT_EQ(config->cluster.Address(config->task)->ToString(), "w:2");
}

TEST(TfConfigTest, AMissingIndexMeansTaskZero) {
  auto config = ParseTfConfig(R"({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief"}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task, (TaskId{"chief", 0}));
}

TEST(TfConfigTest, ReadsTheEnvironmentVariable) {
  ASSERT_EQ(setenv("ACTORFLOW_TEST_TF_CONFIG", kTfConfig, 1), 0);
  auto config = TfConfigFromEnv("ACTORFLOW_TEST_TF_CONFIG");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task, (TaskId{"worker", 1}));
}

TEST(TfConfigTest, AnUnsetVariableIsNotFound) {
  ASSERT_EQ(unsetenv("ACTORFLOW_TEST_UNSET_TF_CONFIG"), 0);
  auto config = TfConfigFromEnv("ACTORFLOW_TEST_UNSET_TF_CONFIG");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), Code::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("ACTORFLOW_TEST_UNSET_TF_CONFIG"));
}

TEST(TfConfigTest, ErrorsFromTheEnvironmentNameTheVariable) {
  ASSERT_EQ(setenv("ACTORFLOW_TEST_BAD_TF_CONFIG", "{\"cluster\": ", 1), 0);
  auto config = TfConfigFromEnv("ACTORFLOW_TEST_BAD_TF_CONFIG");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(config.status().message(),
              HasSubstr("ACTORFLOW_TEST_BAD_TF_CONFIG: malformed JSON at line 1, column"));
}

// The error ParseTfConfig gives for `text`, expected to fail.
Status TfConfigError(const std::string& text) {
  auto config = ParseTfConfig(text);
  EXPECT_FALSE(config.ok()) << text << " was accepted";
  return config.ok() ? Status::OK() : config.status();
}

TEST(TfConfigTest, MalformedJsonSaysWhere) {
  Status status = TfConfigError("{\"cluster\": {\"w\": [\"a:1\"]},\n \"task\": {\"type\": }}");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("TF_CONFIG: malformed JSON at line 2, column"));
}

TEST(TfConfigTest, ErrorsNameTheField) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (const Case& c : {
           Case{R"([1])", "TF_CONFIG: expected an object"},
           Case{R"({"task": {"type": "w"}})", "TF_CONFIG: missing field \"cluster\""},
           Case{R"({"cluster": {"w": ["a:1", "a:1"]}, "task": {"type": "w"}})",
                "TF_CONFIG: cluster: duplicate address a:1"},
           Case{R"({"cluster": ["a:1"], "task": {"type": "w"}})",
                "TF_CONFIG: cluster: expected a JSON object"},
           Case{R"({"cluster": {"w": ["a:1"]}})", "TF_CONFIG: missing field \"task\""},
           Case{R"({"cluster": {"w": ["a:1"]}, "task": "w"})", "TF_CONFIG: task must be an object"},
           Case{R"({"cluster": {"w": ["a:1"]}, "task": {"index": 0}})",
                "TF_CONFIG: missing field task.type (one of the cluster's jobs: w)"},
           Case{R"({"cluster": {"w": ["a:1"]}, "task": {"type": 3}})",
                "TF_CONFIG: task.type must be a string"},
           Case{R"({"cluster": {"ps": ["a:1"], "w": ["b:1"]}, "task": {"type": "chief"}})",
                "TF_CONFIG: task.type \"chief\" is not a job of the cluster (jobs: ps, w)"},
           Case{R"({"cluster": {"w": ["a:1"]}, "task": {"type": "w", "index": -1}})",
                "TF_CONFIG: task.index must be a non-negative integer, got number -1"},
           Case{R"({"cluster": {"w": ["a:1"]}, "task": {"type": "w", "index": "0"}})",
                "TF_CONFIG: task.index must be a non-negative integer"},
           Case{R"({"cluster": {"w": ["a:1"]}, "task": {"type": "w", "index": 0.5}})",
                "TF_CONFIG: task.index must be a non-negative integer"},
           Case{R"({"cluster": {"w": ["a:1"]}, "task": {"type": "w"}, "task": {"type": "w"}})",
                "TF_CONFIG: key \"task\" appears more than once"},
       }) {
    Status status = TfConfigError(c.text);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << c.text;
    EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.text;
  }
}

TEST(TfConfigTest, AnIndexOutOfRangeSaysTheJobsTaskCount) {
  Status status = TfConfigError(
      R"({"cluster": {"worker": ["a:1", "a:2"]}, "task": {"type": "worker", "index": 2}})");
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("TF_CONFIG: task.index 2 is out of range: job \"worker\" has 2 tasks"));
  Status huge = TfConfigError(
      R"({"cluster": {"w": ["a:1"]}, "task": {"type": "w", "index": 18446744073709551615}})");
  EXPECT_THAT(huge.message(), HasSubstr("task.index 18446744073709551615 is out of range"));
}

// The local cluster shorthand -----------------------------------------------------

// Found by fuzzing with deep inputs (tools/fuzz/): a job's value or TF_CONFIG's task
// type nested 200000 lists deep overflowed the stack while the error message quoted it.
TEST(ClusterSpecTest, DeeplyNestedValuesAreRefusedNotQuoted) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  Status spec = ClusterSpec::FromJson("{\"ps\": " + deep + "}", "c.json").status();
  EXPECT_EQ(spec.code(), Code::kInvalidArgument);
  EXPECT_THAT(spec.message(), HasSubstr("c.json: JSON nested deeper than 256 levels"));
  Status tf = ParseTfConfig("{\"cluster\": {\"ps\": [\"a:1\"]}, \"task\": {\"type\": " + deep + "}}")
                  .status();
  EXPECT_EQ(tf.code(), Code::kInvalidArgument);
  EXPECT_THAT(tf.message(), HasSubstr("TF_CONFIG: JSON nested deeper than 256 levels"));
}

TEST(LocalClusterShapeTest, ReadsJobsAndTaskCounts) {
  auto shape = ParseLocalClusterShape("local:ps=1,worker=2");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape.value(), (std::map<std::string, int>{{"ps", 1}, {"worker", 2}}));
}

TEST(LocalClusterShapeTest, AcceptsOneJobAndTheLargestCount) {
  auto shape = ParseLocalClusterShape("local:worker=64");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape.value(), (std::map<std::string, int>{{"worker", kMaxLocalTasksPerJob}}));
}

TEST(LocalClusterShapeTest, BadSyntaxNamesTheOffendingPart) {
  struct Case {
    const char* spec;
    const char* expected;
  };
  for (const Case& c : {
           Case{"ps=1,worker=2", "missing the \"local:\" prefix"},
           Case{"remote:ps=1", "missing the \"local:\" prefix"},
           Case{"local:", "no jobs"},
           Case{"local:ps=1,,worker=2", "empty entry"},
           Case{"local:ps=1,", "empty entry"},
           Case{"local:ps=1,worker", "entry \"worker\" is not JOB=COUNT"},
           Case{"local:=2", "entry \"=2\": \"\" is not a valid job name"},
           Case{"local:1ps=2", "entry \"1ps=2\": \"1ps\" is not a valid job name"},
           Case{"local:ps=x", "entry \"ps=x\": task count \"x\" is not a positive integer"},
           Case{"local:ps=", "entry \"ps=\": task count \"\" is not a positive integer"},
           Case{"local:ps=-1", "entry \"ps=-1\": task count \"-1\" is not a positive integer"},
           Case{"local:ps= 1", "task count \" 1\" is not a positive integer"},
           Case{"local:ps=1,ps=2", "entry \"ps=2\": job \"ps\" is given twice"},
       }) {
    auto shape = ParseLocalClusterShape(c.spec);
    ASSERT_FALSE(shape.ok()) << c.spec;
    EXPECT_EQ(shape.status().code(), Code::kInvalidArgument) << c.spec;
    EXPECT_THAT(shape.status().message(), HasSubstr(c.expected)) << c.spec;
  }
}

TEST(LocalClusterShapeTest, CountsMustBeFromOneTo64) {
  for (const char* spec : {"local:ps=0", "local:worker=65", "local:worker=99999999999999"}) {
    auto shape = ParseLocalClusterShape(spec);
    ASSERT_FALSE(shape.ok()) << spec;
    EXPECT_EQ(shape.status().code(), Code::kInvalidArgument) << spec;
    EXPECT_THAT(shape.status().message(), HasSubstr("is out of range (1 to 64)")) << spec;
    EXPECT_THAT(shape.status().message(), HasSubstr(std::string(spec).substr(6))) << spec;
  }
}

}  // namespace
}  // namespace actorflow
