// GoogleTest assertions for Status and StatusOr<T>, for the tests of every layer
// (graph/ is the lowest one, so nothing here depends upward):
//
//   ASSERT_OK(session->Run(...));                 // a Status or a StatusOr<T>
//   EXPECT_OK(SaveCheckpoint(...)) << "step " << step;
//   ASSERT_OK_AND_ASSIGN(auto graph, GraphFromJson(text));
//   ASSERT_OK_AND_ASSIGN(outputs, session->Run(...));   // a declared variable
//
// On failure they print the expression and the Status (code and message), which a
// bare ASSERT_TRUE(x.ok()) does not. ASSERT_OK and ASSERT_OK_AND_ASSIGN return from
// the enclosing function, so (like every ASSERT_*) they belong in void functions;
// ASSERT_OK_AND_ASSIGN expands to more than one statement: do not use it as the
// body of an unbraced if/else.
#ifndef ACTORFLOW_GRAPH_STATUS_TESTING_H_
#define ACTORFLOW_GRAPH_STATUS_TESTING_H_

#include <gtest/gtest.h>

#include <utility>

#include "graph/status.h"

namespace actorflow {
namespace status_testing {

// The predicate-formatters behind the macros (overloaded, so one macro takes both
// a Status and a StatusOr<T>).
inline ::testing::AssertionResult IsOk(const char* expression, const Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "Expected " << expression << " to be OK, but it is: " << status;
}

template <typename T>
::testing::AssertionResult IsOk(const char* expression, const StatusOr<T>& status_or) {
  return IsOk(expression, status_or.status());
}

}  // namespace status_testing
}  // namespace actorflow

#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::actorflow::status_testing::IsOk, expr)
#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::actorflow::status_testing::IsOk, expr)

// `lhs` is a declaration (`auto x`, `std::vector<Tensor> out`) or an lvalue; `rexpr`
// yields a StatusOr<T>. On error: a fatal failure naming `rexpr` and its Status.
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  AF_ASSERT_OK_AND_ASSIGN_IMPL_(AF_CONCAT_(af_status_testing_, __LINE__), lhs, rexpr)
#define AF_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr)                               \
  auto statusor = (rexpr);                                                                \
  GTEST_ASSERT_(::actorflow::status_testing::IsOk(#rexpr, statusor), GTEST_FATAL_FAILURE_); \
  lhs = std::move(statusor).value()

#endif  // ACTORFLOW_GRAPH_STATUS_TESTING_H_
