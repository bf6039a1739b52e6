// The numeric gradient check (see gradient_check_util.h).
#include "kernels/gradient_check_util.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
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

// Runs `fetch` with the inputs fed.
Tensor RunWith(Session* session, const std::vector<Tensor>& inputs, const std::string& fetch) {
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace_back(Name(i), inputs[i]);
  std::vector<Tensor> out;
  Status s = session->Run(feeds, {fetch}, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0] : Tensor();
}

// The check of gradient_check_util.h, with the inputs' shapes known or not.
void CheckGradientsOnce(const std::string& what, const std::vector<Tensor>& inputs, const Fn& f,
                        bool unknown_shapes, uint64_t seed) {
  SCOPED_TRACE(what);
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(Placeholder(root.WithOpName(Name(i)), DType::kFloat64,
                             unknown_shapes ? Shape::UnknownRank() : inputs[i].shape()));
  }
  const Output y = f(root, xs);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session_or = NewDirectSession(root.graph());
  ASSERT_TRUE(session_or.ok()) << session_or.status();
  std::unique_ptr<Session> session = std::move(session_or).value();
  const Tensor value = RunWith(session.get(), inputs, y.name());
  ASSERT_TRUE(value.IsInitialized());
  Rng rng(seed);
  const Output loss = Sum(root, Mul(root, y, Const(root, rng.Uniform(value.shape(), -1, 1))));
  auto grads = Gradients(root, {loss}, xs);
  ASSERT_TRUE(grads.ok()) << grads.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE((*grads)[i].valid()) << "no gradient for input " << i;
    const Tensor symbolic = RunWith(session.get(), inputs, (*grads)[i].name());
    ASSERT_EQ(symbolic.dtype(), DType::kFloat64);
    ASSERT_EQ(symbolic.shape(), inputs[i].shape()) << "gradient of input " << i;
    for (int64_t j = 0; j < inputs[i].NumElements(); ++j) {
      std::vector<Tensor> moved = inputs;
      moved[i] = inputs[i].DeepCopy();
      double* e = moved[i].data<double>() + j;
      const double x = *e;
      const double h = 1e-6 * std::max(1.0, std::abs(x));
      *e = x + h;
      const double up = RunWith(session.get(), moved, loss.name()).data<double>()[0];
      *e = x - h;
      const double down = RunWith(session.get(), moved, loss.name()).data<double>()[0];
      const double numeric = (up - down) / (2 * h);
      const double error = ErrorOf(symbolic.data<double>()[j], numeric);
      Record(error, what);
      EXPECT_LE(error, kMaxError) << "input " << i << " element " << j << ": symbolic "
                                  << symbolic.data<double>()[j] << ", numeric " << numeric;
    }
  }
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

void CheckGradients(const std::string& what, const std::vector<Tensor>& inputs, const Fn& f) {
  static uint64_t seed = 1;
  CheckGradientsOnce(what + " (known shapes)", inputs, f, /*unknown_shapes=*/false, seed);
  CheckGradientsOnce(what + " (unknown shapes)", inputs, f, /*unknown_shapes=*/true, seed++);
}

std::string ShapesOf(const std::vector<Tensor>& inputs) {
  std::string s;
  for (const Tensor& t : inputs) s += (s.empty() ? "" : ", ") + t.shape().ToString();
  return s;
}

}  // namespace gradient_check
}  // namespace actorflow
