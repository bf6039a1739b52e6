#include "tests/cli_failure.h"

#include <algorithm>
#include <optional>

namespace actorflow {
namespace subprocess {
namespace {

::testing::AssertionResult Failed(const ProcessResult& r, std::optional<int> exit_code,
                                  const std::vector<std::string>& needles) {
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  bool failed = false;
  auto fail = [&]() -> ::testing::AssertionResult& {
    if (!failed) result = ::testing::AssertionFailure() << "stderr: " << r.err << ";";
    failed = true;
    return result;
  };
  if (!r.exited) fail() << " killed by signal " << r.signal << ";";
  if (!exit_code && r.exit_code == 0) fail() << " exit code 0; stdout: " << r.out << ";";
  if (exit_code && r.exit_code != *exit_code) {
    fail() << " exit code " << r.exit_code << ", expected " << *exit_code << ";";
  }
  if (exit_code && !r.out.empty()) fail() << " stdout is not empty: " << r.out << ";";
  if (r.err.rfind("actorflow: ", 0) != 0) fail() << " stderr does not start with 'actorflow: ';";
  const auto lines = std::count(r.err.begin(), r.err.end(), '\n');
  if (lines != 1) fail() << " stderr has " << lines << " lines, expected 1;";
  for (const std::string& needle : needles) {
    if (r.err.find(needle) == std::string::npos) {
      fail() << " stderr does not mention \"" << needle << "\";";
    }
  }
  return result;
}

}  // namespace

::testing::AssertionResult FailedWith(const ProcessResult& r,
                                      const std::vector<std::string>& needles) {
  return Failed(r, std::nullopt, needles);
}

::testing::AssertionResult FailedWith(const ProcessResult& r, int exit_code,
                                      const std::vector<std::string>& needles) {
  return Failed(r, exit_code, needles);
}

}  // namespace subprocess
}  // namespace actorflow
