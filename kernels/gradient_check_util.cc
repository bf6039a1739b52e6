// The numeric gradient check (see gradient_check_util.h).
#include "kernels/gradient_check_util.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "gtest/gtest.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace gradient_check {
namespace {

// The worst error over every check in this binary, reported at exit.
double g_worst_error = 0;
std::string g_worst_case;
int64_t g_checked_elements = 0;

class ReportWorstError : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "[ gradient ] max error over " << g_checked_elements
              << " numerically checked gradient elements: " << g_worst_error << " (" << g_worst_case
              << ")" << std::endl;
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportWorstError);

std::string Name(int i) { return "x" + std::to_string(i); }

// Runs `fetch` with the inputs fed; an output that was never set is an error too.
// With fresh_session_per_run the run gets a new session over `graph` instead.
StatusOr<Tensor> RunWith(Session* session, const std::vector<Tensor>& inputs,
                         const std::string& fetch, const Graph* graph = nullptr) {
  if (graph != nullptr) {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> fresh, NewDirectSession(graph));
    return RunWith(fresh.get(), inputs, fetch);
  }
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace_back(Name(i), inputs[i]);
  std::vector<Tensor> out;
  Status s = session->Run(feeds, {fetch}, {}, &out);
  if (!s.ok()) return s;
  if (out.empty() || !out[0].IsInitialized()) return Internal(fetch + " was never set");
  return out[0];
}

// The check of gradient_check_util.h, with the inputs' shapes known or not. A failure
// starts with `what` and names the step that failed, or lists the first elements
// whose error exceeds kMaxError.
::testing::AssertionResult GradientsMatchOnce(const std::string& what,
                                              const std::vector<Tensor>& inputs, const Fn& f,
                                              bool unknown_shapes, uint64_t seed,
                                              const CheckOptions& options) {
  auto fail = [&what]() { return ::testing::AssertionFailure() << what << ": "; };
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(Placeholder(root.WithOpName(Name(i)), DType::kFloat64,
                             unknown_shapes ? Shape::UnknownRank() : inputs[i].shape()));
  }
  const Output y = f(root, xs);
  if (!root.ok()) return fail() << root.status();
  auto session_or = NewDirectSession(root.graph());
  if (!session_or.ok()) return fail() << session_or.status();
  std::unique_ptr<Session> session = std::move(session_or).value();
  const Graph* fresh = options.fresh_session_per_run ? root.graph() : nullptr;
  const StatusOr<Tensor> value = RunWith(session.get(), inputs, y.name(), fresh);
  if (!value.ok()) return fail() << "computing f: " << value.status();
  Rng rng(seed);
  const Output loss = Sum(root, Mul(root, y, Const(root, rng.Uniform(value->shape(), -1, 1))));
  auto grads = Gradients(root, {loss}, xs);
  if (!grads.ok()) return fail() << grads.status();
  int64_t checked = 0;
  int64_t mismatches = 0;
  std::ostringstream details;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!(*grads)[i].valid()) return fail() << "no gradient for input " << i;
    const StatusOr<Tensor> symbolic = RunWith(session.get(), inputs, (*grads)[i].name(), fresh);
    if (!symbolic.ok()) return fail() << "gradient of input " << i << ": " << symbolic.status();
    if (symbolic->dtype() != DType::kFloat64 || symbolic->shape() != inputs[i].shape()) {
      return fail() << "gradient of input " << i << " is " << DTypeName(symbolic->dtype())
                    << symbolic->shape().ToString() << ", expected float64"
                    << inputs[i].shape().ToString();
    }
    for (int64_t j = 0; j < inputs[i].NumElements(); ++j) {
      std::vector<Tensor> moved = inputs;
      moved[i] = inputs[i].DeepCopy();
      double* e = moved[i].data<double>() + j;
      const double x = *e;
      const double h = 1e-6 * std::max(1.0, std::abs(x));
      double loss_at[2];  // L(x + h), L(x - h)
      for (int side = 0; side < 2; ++side) {
        *e = side == 0 ? x + h : x - h;
        const StatusOr<Tensor> moved_loss = RunWith(session.get(), moved, loss.name(), fresh);
        if (!moved_loss.ok()) {
          return fail() << "loss with input " << i << " element " << j
                        << " moved: " << moved_loss.status();
        }
        loss_at[side] = moved_loss->data<double>()[0];
      }
      const double numeric = (loss_at[0] - loss_at[1]) / (2 * h);
      const double error = ErrorOf(symbolic->data<double>()[j], numeric);
      Record(error, what);
      ++checked;
      if (error <= kMaxError) continue;  // NaN is a mismatch too
      if (++mismatches <= 5) {
        details << "\n  input " << i << " element " << j << ": symbolic "
                << symbolic->data<double>()[j] << ", numeric " << numeric << ", error " << error;
      }
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return fail() << mismatches << " of " << checked << " gradient elements have an error above "
                << kMaxError << ":" << details.str();
}

}  // namespace

double ErrorOf(double symbolic, double numeric) {
  return std::abs(symbolic - numeric) / std::max({1.0, std::abs(symbolic), std::abs(numeric)});
}

void Record(double error, const std::string& what) {
  ++g_checked_elements;
  if (error > g_worst_error) {
    g_worst_error = error;
    g_worst_case = what;
  }
}

::testing::AssertionResult GradientsMatch(const std::string& what,
                                          const std::vector<Tensor>& inputs, const Fn& f,
                                          const CheckOptions& options) {
  static uint64_t seed = 1;
  const ::testing::AssertionResult known = GradientsMatchOnce(
      what + " (known shapes)", inputs, f, /*unknown_shapes=*/false, seed, options);
  const ::testing::AssertionResult unknown = GradientsMatchOnce(
      what + " (unknown shapes)", inputs, f, /*unknown_shapes=*/true, seed++, options);
  if (known && unknown) return ::testing::AssertionSuccess();
  if (known) return unknown;
  if (unknown) return known;
  return ::testing::AssertionFailure() << known.message() << "\n" << unknown.message();
}

std::string ShapesOf(const std::vector<Tensor>& inputs) {
  std::string s;
  for (const Tensor& t : inputs) s += (s.empty() ? "" : ", ") + t.shape().ToString();
  return s;
}

}  // namespace gradient_check
}  // namespace actorflow
