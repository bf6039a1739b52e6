// What the end-to-end tests of the command line expect of a command that fails: it
// exits (no signal) non-zero and says why in exactly one stderr line that starts
// with "actorflow: ". For EXPECT_TRUE / ASSERT_TRUE: a failure lists every
// expectation that did not hold, and the stderr.
#ifndef ACTORFLOW_TESTS_CLI_FAILURE_H_
#define ACTORFLOW_TESTS_CLI_FAILURE_H_

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/subprocess.h"

namespace actorflow {
namespace subprocess {

// The line holds every one of `needles`.
::testing::AssertionResult FailedWith(const ProcessResult& r,
                                      const std::vector<std::string>& needles);

// The same with exactly `exit_code`, and nothing on stdout.
::testing::AssertionResult FailedWith(const ProcessResult& r, int exit_code,
                                      const std::vector<std::string>& needles);

}  // namespace subprocess
}  // namespace actorflow

#endif  // ACTORFLOW_TESTS_CLI_FAILURE_H_
