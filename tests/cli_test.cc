// End-to-end tests of `actorflow run`: the built binary runs as a child process on
// the example graphs and on bad input; stdout, stderr and the exit status are
// checked. Bad input must end in a non-zero exit (never a signal) with one stderr
// line that names the culprit.
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace {

using nlohmann::json;

struct ProcessResult {
  bool exited = false;   // ended through exit(); false when killed by a signal
  int exit_code = -1;
  int signal = 0;
  std::string out;
  std::string err;
};

std::string Runfile(const std::string& relative) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  std::string base = srcdir ? srcdir : ".";
  base += "/";
  base += workspace ? workspace : "actorflow";
  return base + "/" + relative;
}

std::string Example(const std::string& name) { return Runfile("examples/graphs/" + name); }
std::string TestData(const std::string& name) { return Runfile("tests/testdata/" + name); }

// Runs the actorflow binary with `args`, collecting both pipes until they close.
ProcessResult RunActorflow(const std::vector<std::string>& args) {
  ProcessResult result;
  const std::string binary = Runfile("tools/actorflow");
  std::vector<std::string> argv_storage = {binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The child must not resolve paths against a `bazel run` working directory.
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "BUILD_WORKING_DIRECTORY=", 24) != 0) env_storage.push_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn " << binary << ": " << std::strerror(rc);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return result;
  }

  // Read both pipes together so that neither can fill up and stall the child.
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      ADD_FAILURE() << "poll: " << std::strerror(errno);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

// Runs with --json and returns the parsed line; fails the test unless the command
// succeeded with exactly one line on stdout and nothing on stderr.
json RunJson(std::vector<std::string> args) {
  args.push_back("--json");
  const ProcessResult r = RunActorflow(args);
  EXPECT_TRUE(r.exited) << "killed by signal " << r.signal;
  EXPECT_EQ(r.exit_code, 0) << "stderr: " << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "stdout: " << r.out;
  json parsed = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << "stdout is not JSON: " << r.out;
  return parsed;
}

// Checks a failed run: the expected exit code, no signal, nothing on stdout, one
// stderr line "actorflow: ..." containing every one of `needles`.
void ExpectFailure(const ProcessResult& r, int exit_code,
                   const std::vector<std::string>& needles) {
  EXPECT_TRUE(r.exited) << "killed by signal " << r.signal << "; stderr: " << r.err;
  EXPECT_EQ(r.exit_code, exit_code) << "stderr: " << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("actorflow: ", 0), 0u) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
  for (const std::string& needle : needles) {
    EXPECT_NE(r.err.find(needle), std::string::npos)
        << "stderr does not mention \"" << needle << "\": " << r.err;
  }
}

std::vector<std::string> Executed(const json& result) {
  return result.at("executed").get<std::vector<std::string>>();
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

constexpr int kRuntimeError = 1;
constexpr int kUsageError = 2;

// ---- The guide's programs -------------------------------------------------------

TEST(CliRunTest, AddOfThreeAndFiveIsEight) {
  json r = RunJson({"run", "--graph", Example("add.json"), "--fetch", "add"});
  EXPECT_EQ(r.at("fetches").at("add"), json::parse(R"({"dtype":"int32","shape":[],"data":[8]})"));
}

TEST(CliRunTest, JsonLineIsCompactWithFetchesFirst) {
  ProcessResult r =
      RunActorflow({"run", "--graph", Example("add.json"), "--fetch", "add", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(R"({"fetches":{"add":{"dtype":"int32","shape":[],"data":[8]}},"executed":[)",
                        0),
            0u)
      << r.out;
}

TEST(CliRunTest, WithoutJsonPrintsOneLinePerFetchInOrder) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("add.json"), "--fetch", "add,a"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "add = int32[] 8\na = int32[] 3\n");
}

TEST(CliRunTest, PowOfSumAndProductIs15625AndSkipsTheUselessNode) {
  json r = RunJson({"run", "--graph", Example("pow.json"), "--fetch", "pow_op"});
  EXPECT_EQ(r.at("fetches").at("pow_op").at("data"), json::parse("[15625]"));
  EXPECT_EQ(r.at("fetches").at("pow_op").at("dtype"), "int32");
  const std::vector<std::string> executed = Executed(r);
  EXPECT_FALSE(Contains(executed, "useless"));
  for (const std::string node : {"x", "y", "add_op", "mul_op", "pow_op"}) {
    EXPECT_EQ(std::count(executed.begin(), executed.end(), node), 1) << node;
  }
  EXPECT_EQ(executed.size(), 5u);
}

TEST(CliRunTest, ScalarFeedsConvertToTheFloatPlaceholders) {
  json r = RunJson({"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed",
                    "x=3", "--feed", "y=4.5"});
  EXPECT_EQ(r.at("fetches").at("sum"),
            json::parse(R"({"dtype":"float32","shape":[],"data":[7.5]})"));
}

TEST(CliRunTest, ListFeedsAddElementwise) {
  json r = RunJson({"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed",
                    "x=[1,3]", "--feed", "y=[2,4]"});
  EXPECT_EQ(r.at("fetches").at("sum"),
            json::parse(R"({"dtype":"float32","shape":[2],"data":[3,7]})"));
}

TEST(CliRunTest, HumanReadableVectorFetch) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("placeholders.json"), "--fetch",
                                  "sum", "--feed", "x=[1,3]", "--feed", "y=[2,4]"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "sum = float32[2] [3, 7]\n");
}

TEST(CliRunTest, FeedAndFetchNamesMayCarryAnOutputIndex) {
  json r = RunJson({"run", "--graph", Example("placeholders.json"), "--fetch", "sum:0",
                    "--feed", "x:0=3", "--feed", "y=4"});
  EXPECT_EQ(r.at("fetches").at("sum:0").at("data"), json::parse("[7]"));
}

TEST(CliRunTest, AnyNodesOutputMayBeFedNotOnlyPlaceholders) {
  json r = RunJson({"run", "--graph", Example("add.json"), "--fetch", "add", "--feed", "a=10"});
  EXPECT_EQ(r.at("fetches").at("add").at("data"), json::parse("[15]"));
  EXPECT_FALSE(Contains(Executed(r), "a"));
}

TEST(CliRunTest, BeforeStepInitializesTheVariableForMatMul) {
  // p [2,2] x w [2,3] with w = [[1,2,3],[4,5,6]].
  json r = RunJson({"run", "--graph", Example("variables.json"), "--before", "init", "--feed",
                    "p=[[1,2],[3,4]]", "--fetch", "m", "--timeout-ms", "10000"});
  EXPECT_EQ(r.at("fetches").at("m"),
            json::parse(R"({"dtype":"float32","shape":[2,3],"data":[9,12,15,19,26,33]})"));
  EXPECT_FALSE(Contains(Executed(r), "init"));
  EXPECT_TRUE(Contains(Executed(r), "m"));
}

TEST(CliRunTest, HumanReadableMatrixIsNested) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("variables.json"), "--before",
                                  "init", "--feed", "p=[[1,0],[0,1]]", "--fetch", "m"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "m = float32[2,3] [[1, 2, 3], [4, 5, 6]]\n");
}

// ---- Bad input ------------------------------------------------------------------

TEST(CliRunErrorTest, MissingFeedNamesThePlaceholder) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed", "x=3"});
  ExpectFailure(r, kRuntimeError, {"InvalidArgument", "'y'"});
}

TEST(CliRunErrorTest, FeedOfWrongShapeNamesThePlaceholder) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("variables.json"), "--before",
                                  "init", "--feed", "p=[[1,2,3]]", "--fetch", "m"});
  ExpectFailure(r, kRuntimeError, {"InvalidArgument", "'p'"});
}

TEST(CliRunErrorTest, NonIntegerIntoInt32PlaceholderNamesIt) {
  ProcessResult r = RunActorflow({"run", "--graph", TestData("int_placeholder.json"), "--fetch",
                                  "doubled", "--feed", "count=2.5"});
  ExpectFailure(r, kRuntimeError, {"InvalidArgument", "'count'"});
}

TEST(CliRunErrorTest, RaggedFeedNamesThePlaceholder) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("placeholders.json"), "--fetch",
                                  "sum", "--feed", "x=[[1,2],[3]]", "--feed", "y=1"});
  ExpectFailure(r, kRuntimeError, {"InvalidArgument", "'x'"});
}

TEST(CliRunErrorTest, FeedOfUnknownNodeNamesIt) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("add.json"), "--fetch", "add",
                                  "--feed", "no_such_node=1"});
  ExpectFailure(r, kRuntimeError, {"InvalidArgument", "no_such_node"});
}

TEST(CliRunErrorTest, FeedingOneTensorTwiceNamesIt) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("placeholders.json"), "--fetch",
                                  "sum", "--feed", "x=1", "--feed", "x:0=2", "--feed", "y=1"});
  ExpectFailure(r, kRuntimeError, {"InvalidArgument", "x:0"});
}

TEST(CliRunErrorTest, UnknownFetchNamesIt) {
  ProcessResult r =
      RunActorflow({"run", "--graph", Example("add.json"), "--fetch", "no_such_fetch"});
  ExpectFailure(r, kRuntimeError, {"NotFound", "no_such_fetch"});
}

TEST(CliRunErrorTest, ReadingAnUninitializedVariableIsFailedPreconditionNamingIt) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("variables.json"), "--feed", "p=[[1,2]]", "--fetch", "m"});
  ExpectFailure(r, kRuntimeError, {"FailedPrecondition", "'w'"});
}

TEST(CliRunErrorTest, MalformedGraphFileGivesLineAndColumn) {
  ProcessResult r = RunActorflow({"run", "--graph", TestData("malformed.json"), "--fetch", "a"});
  ExpectFailure(r, kRuntimeError, {"malformed.json", "line 4", "column"});
}

TEST(CliRunErrorTest, MatMulShapeMismatchIsABuildTimeErrorNamingTheNode) {
  ProcessResult r =
      RunActorflow({"run", "--graph", TestData("matmul_mismatch.json"), "--fetch", "a"});
  ExpectFailure(r, kRuntimeError, {"InvalidArgument", "bad_matmul", "MatMul shape mismatch"});
}

TEST(CliRunErrorTest, IntegerDivisionByZeroNamesTheNode) {
  ProcessResult r =
      RunActorflow({"run", "--graph", TestData("int_div_zero.json"), "--fetch", "quotient"});
  ExpectFailure(r, kRuntimeError, {"InvalidArgument", "quotient"});
}

TEST(CliRunErrorTest, UnknownOpNamesTheOpAndTheNode) {
  ProcessResult r =
      RunActorflow({"run", "--graph", TestData("unknown_op.json"), "--fetch", "mystery"});
  ExpectFailure(r, kRuntimeError, {"FrobnicateTensor", "mystery"});
}

TEST(CliRunErrorTest, NonexistentGraphFileNamesThePath) {
  ProcessResult r =
      RunActorflow({"run", "--graph", TestData("does_not_exist.json"), "--fetch", "a"});
  ExpectFailure(r, kRuntimeError, {"does_not_exist.json"});
}

// ---- Usage errors ---------------------------------------------------------------

TEST(CliUsageTest, MissingFetchIsAUsageError) {
  ProcessResult r = RunActorflow({"run", "--graph", Example("add.json")});
  ExpectFailure(r, kUsageError, {"--fetch"});
}

TEST(CliUsageTest, FeedWithoutEqualsSignIsAUsageError) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed", "x"});
  ExpectFailure(r, kUsageError, {"--feed", "NAME=JSON"});
}

TEST(CliUsageTest, MalformedFeedJsonIsAUsageErrorNamingTheFeed) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("placeholders.json"), "--fetch", "sum", "--feed", "x=[1,"});
  ExpectFailure(r, kUsageError, {"--feed x"});
}

TEST(CliUsageTest, NonNumericTimeoutIsAUsageError) {
  ProcessResult r = RunActorflow(
      {"run", "--graph", Example("add.json"), "--fetch", "add", "--timeout-ms", "soon"});
  ExpectFailure(r, kUsageError, {"--timeout-ms"});
}

TEST(CliUsageTest, NoSubcommandIsAUsageError) {
  ProcessResult r = RunActorflow({});
  ExpectFailure(r, kUsageError, {});
}

}  // namespace
