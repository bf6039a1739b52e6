// The training kernels (ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyAdagrad)
// run through a DirectSession for several steps and compared with the update rules
// computed here in double precision; plus the errors that name the variable.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = t.ElementAsDouble(i);
  return out;
}

Tensor Scalar(DType dtype, double value) { return MakeTensor(dtype, Shape{}, {value}); }

const Shape kVarShape{2, 2};
const std::vector<double> kInitialVar = {1.0, -2.0, 0.5, 3.0};
// One gradient per step [2,2].
const std::vector<std::vector<double>> kGrads = {
    {0.5, -1.0, 2.0, 0.0}, {-0.25, 0.75, 1.5, -3.0}, {1.0, 1.0, -0.5, 0.125}};

// A graph with a variable "var" [2,2] and slot variables with the given initial
// values ("var_init", "<slot>_init", all of them "init"), and a gradient placeholder "grad"
// (unknown shape, so that a wrong shape reaches the kernel).
class ApplyGraph {
 public:
  ApplyGraph(DType dtype, const std::vector<std::string>& slots, double slot_initial)
      : dtype_(dtype), root_(Scope::NewRootScope()) {
    var_ = Variable(root_.WithOpName("var"), kVarShape, dtype);
    std::vector<Output> inits = {
        Assign(root_.WithOpName("var_init"), var_, MakeTensor(dtype, kVarShape, kInitialVar))};
    for (const std::string& name : slots) {
      Output slot = Variable(root_.WithOpName(name), kVarShape, dtype);
      slots_.push_back(slot);
      inits.push_back(Assign(root_.WithOpName(name + "_init"), slot,
                             MakeTensor(dtype, kVarShape, std::vector<double>(4, slot_initial))));
    }
    NoOp(root_.WithOpName("init").WithControlDependencies(inits));
    grad_ = Placeholder(root_.WithOpName("grad"), dtype);
  }

  const Scope& root() const { return root_; }
  Output var() const { return var_; }
  Output slot(int i) const { return slots_[i]; }
  Output grad() const { return grad_; }
  Tensor S(double value) const { return Scalar(dtype_, value); }

  void StartSession() {
    ASSERT_TRUE(root_.ok()) << root_.status();
    auto session = NewDirectSession(root_.graph());
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(session).value();
  }
  Session* session() const { return session_.get(); }
  Status Init() { return session_->Run({}, {}, {"init"}, nullptr); }
  // Runs `apply` with the gradient; returns its output (the variable's new value).
  StatusOr<Tensor> Step(const std::string& apply, const std::vector<double>& grad,
                        const Shape& grad_shape = kVarShape) {
    std::vector<Tensor> out;
    Status s = session_->Run({{"grad", MakeTensor(dtype_, grad_shape, grad)}}, {apply}, {}, &out);
    if (!s.ok()) return s;
    return out[0];
  }
  std::vector<double> Fetch(const std::string& name) {
    std::vector<Tensor> out;
    Status s = session_->Run({}, {name}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? ToDoubles(out[0]) : std::vector<double>{};
  }

 private:
  DType dtype_;
  Scope root_;
  Output var_;
  std::vector<Output> slots_;
  Output grad_;
  std::unique_ptr<Session> session_;
};

class TrainingKernelsTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  double tol() const { return dtype() == DType::kFloat32 ? 1e-5 : 1e-12; }

  void ExpectNear(const std::vector<double>& want, const std::vector<double>& got,
                  const std::string& what) {
    ASSERT_EQ(want.size(), got.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], tol() * (1.0 + std::fabs(want[i]))) << what << " element " << i;
    }
  }
};

TEST_P(TrainingKernelsTest, GradientDescentSubtractsAlphaTimesDelta) {
  ApplyGraph g(dtype(), {}, 0.0);
  ApplyGradientDescent(g.root().WithOpName("apply"), g.var(), g.S(0.1), g.grad());
  g.StartSession();
  ASSERT_TRUE(g.Init().ok());
  // Hand-computed first step: var - 0.1 * grad.
  auto first = g.Step("apply", kGrads[0]);
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectNear({0.95, -1.9, 0.3, 3.0}, ToDoubles(*first), "step 1 output");

  std::vector<double> var = {0.95, -1.9, 0.3, 3.0};
  for (size_t step = 1; step < kGrads.size(); ++step) {
    for (int i = 0; i < 4; ++i) var[i] -= 0.1 * kGrads[step][i];
    auto out = g.Step("apply", kGrads[step]);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear(var, ToDoubles(*out), "output of step " + std::to_string(step + 1));
  }
  ExpectNear(var, g.Fetch("var"), "variable");
}

TEST_P(TrainingKernelsTest, MomentumAccumulatesTheGradient) {
  ApplyGraph g(dtype(), {"accum"}, 0.0);
  ApplyMomentum(g.root().WithOpName("apply"), g.var(), g.slot(0), g.S(0.1), g.grad(), g.S(0.9));
  g.StartSession();
  ASSERT_TRUE(g.Init().ok());
  // Hand-computed first step from accum = 0: accum = grad; var -= 0.1 * grad.
  auto first = g.Step("apply", kGrads[0]);
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectNear({0.95, -1.9, 0.3, 3.0}, ToDoubles(*first), "step 1 output");

  std::vector<double> var = {0.95, -1.9, 0.3, 3.0};
  std::vector<double> accum = kGrads[0];
  for (size_t step = 1; step < kGrads.size(); ++step) {
    for (int i = 0; i < 4; ++i) {
      accum[i] = accum[i] * 0.9 + kGrads[step][i];
      var[i] -= 0.1 * accum[i];
    }
    auto out = g.Step("apply", kGrads[step]);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear(var, ToDoubles(*out), "output of step " + std::to_string(step + 1));
  }
  ExpectNear(var, g.Fetch("var"), "variable");
  ExpectNear(accum, g.Fetch("accum"), "accum");
}

TEST_P(TrainingKernelsTest, NesterovMomentumLooksAhead) {
  ApplyGraph g(dtype(), {"accum"}, 0.0);
  ApplyMomentum(g.root().WithOpName("apply"), g.var(), g.slot(0), g.S(0.1), g.grad(), g.S(0.9),
                /*use_nesterov=*/true);
  g.StartSession();
  ASSERT_TRUE(g.Init().ok());
  std::vector<double> var = kInitialVar;
  std::vector<double> accum(4, 0.0);
  for (size_t step = 0; step < kGrads.size(); ++step) {
    for (int i = 0; i < 4; ++i) {
      accum[i] = accum[i] * 0.9 + kGrads[step][i];
      var[i] -= 0.1 * kGrads[step][i] + 0.1 * 0.9 * accum[i];
    }
    auto out = g.Step("apply", kGrads[step]);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear(var, ToDoubles(*out), "output of step " + std::to_string(step + 1));
  }
  ExpectNear(accum, g.Fetch("accum"), "accum");
  // Hand-computed first step of element 0: accum = 0.5, var = 1 - 0.05 - 0.045.
  ApplyGraph h(dtype(), {"accum"}, 0.0);
  ApplyMomentum(h.root().WithOpName("apply"), h.var(), h.slot(0), h.S(0.1), h.grad(), h.S(0.9),
                true);
  h.StartSession();
  ASSERT_TRUE(h.Init().ok());
  auto first = h.Step("apply", kGrads[0]);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_NEAR(ToDoubles(*first)[0], 0.905, tol());
}

TEST_P(TrainingKernelsTest, AdamFollowsTheBiasCorrectedUpdate) {
  ApplyGraph g(dtype(), {"m", "v"}, 0.0);
  const double lr = 0.01, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  // The beta powers are fed per step, as the optimizer's variables would hold them.
  auto beta1_power = Placeholder(g.root().WithOpName("beta1_power"), dtype());
  auto beta2_power = Placeholder(g.root().WithOpName("beta2_power"), dtype());
  ApplyAdam(g.root().WithOpName("apply"), g.var(), g.slot(0), g.slot(1), beta1_power, beta2_power,
            g.S(lr), g.S(beta1), g.S(beta2), g.S(epsilon), g.grad());
  g.StartSession();
  ASSERT_TRUE(g.Init().ok());

  std::vector<double> var = kInitialVar, m(4, 0.0), v(4, 0.0);
  double b1p = beta1, b2p = beta2;
  for (size_t step = 0; step < kGrads.size(); ++step) {
    const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
    for (int i = 0; i < 4; ++i) {
      const double grad = kGrads[step][i];
      m[i] = beta1 * m[i] + (1 - beta1) * grad;
      v[i] = beta2 * v[i] + (1 - beta2) * grad * grad;
      var[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
    }
    std::vector<Tensor> out;
    Status s = g.session()->Run({{"grad", MakeTensor(dtype(), kVarShape, kGrads[step])},
                                 {"beta1_power", Scalar(dtype(), b1p)},
                                 {"beta2_power", Scalar(dtype(), b2p)}},
                                {"apply"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    ExpectNear(var, ToDoubles(out[0]), "var after step " + std::to_string(step + 1));
    if (step == 0) {
      // Hand-computed: from m = v = 0, the first step moves each element by lr
      // against its gradient's sign (up to epsilon); a zero gradient leaves it.
      for (int i = 0; i < 4; ++i) {
        const double g0 = kGrads[0][i];
        const double want = kInitialVar[i] - (g0 > 0 ? lr : g0 < 0 ? -lr : 0.0);
        EXPECT_NEAR(out[0].ElementAsDouble(i), want, 1e-6) << "element " << i;
      }
    }
    // A separate run: within one step, a read of a slot is not ordered with the update.
    ExpectNear(m, g.Fetch("m"), "m after step " + std::to_string(step + 1));
    ExpectNear(v, g.Fetch("v"), "v after step " + std::to_string(step + 1));
    b1p *= beta1;
    b2p *= beta2;
  }
}

// The FTRL-proximal rule written out in double, independently of FtrlUpdate.
TEST_P(TrainingKernelsTest, FtrlFollowsTheProximalRuleAndL1ZeroesSmallWeights) {
  ApplyGraph g(dtype(), {"accum", "linear"}, 0.1);
  const double lr = 0.5, l1 = 0.3, l2 = 0.01;
  ApplyFtrl(g.root().WithOpName("apply"), g.var(), g.slot(0), g.slot(1), g.grad(), g.S(lr),
            g.S(l1), g.S(l2), g.S(-0.5));
  g.StartSession();
  ASSERT_TRUE(g.Init().ok());
  std::vector<double> var = kInitialVar, accum(4, 0.1), linear(4, 0.1);
  int zeros = 0;
  for (size_t step = 0; step < kGrads.size(); ++step) {
    for (int i = 0; i < 4; ++i) {
      const double gr = kGrads[step][i];
      const double next = accum[i] + gr * gr;
      linear[i] += gr - (std::sqrt(next) - std::sqrt(accum[i])) / lr * var[i];
      const double quadratic = std::sqrt(next) / lr + 2 * l2;
      var[i] = std::fabs(linear[i]) > l1
                   ? ((linear[i] > 0 ? l1 : -l1) - linear[i]) / quadratic
                   : 0.0;
      accum[i] = next;
      zeros += var[i] == 0.0;
    }
    auto out = g.Step("apply", kGrads[step]);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear(var, ToDoubles(*out), "output of step " + std::to_string(step + 1));
  }
  EXPECT_GT(zeros, 0) << "l1 zeroed no weight: the case does not test the shrinkage";
  ExpectNear(linear, g.Fetch("linear"), "linear");
  ExpectNear(accum, g.Fetch("accum"), "accum");
}

TEST_P(TrainingKernelsTest, AdagradScalesByTheAccumulatedSquares) {
  ApplyGraph g(dtype(), {"accum"}, 0.1);
  ApplyAdagrad(g.root().WithOpName("apply"), g.var(), g.slot(0), g.S(0.5), g.grad());
  g.StartSession();
  ASSERT_TRUE(g.Init().ok());
  // Hand-computed first step of element 0: accum = 0.1 + 0.25, var = 1 - 0.25/sqrt(0.35).
  auto first = g.Step("apply", kGrads[0]);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_NEAR(ToDoubles(*first)[0], 1.0 - 0.25 / std::sqrt(0.35), tol());

  std::vector<double> var = kInitialVar, accum(4, 0.1);
  for (int i = 0; i < 4; ++i) {
    accum[i] += kGrads[0][i] * kGrads[0][i];
    var[i] -= 0.5 * kGrads[0][i] / std::sqrt(accum[i]);
  }
  for (size_t step = 1; step < kGrads.size(); ++step) {
    for (int i = 0; i < 4; ++i) {
      accum[i] += kGrads[step][i] * kGrads[step][i];
      var[i] -= 0.5 * kGrads[step][i] / std::sqrt(accum[i]);
    }
    auto out = g.Step("apply", kGrads[step]);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear(var, ToDoubles(*out), "output of step " + std::to_string(step + 1));
  }
  ExpectNear(accum, g.Fetch("accum"), "accum");
}

TEST_P(TrainingKernelsTest, AnUninitializedVariableIsAFailedPreconditionNamingIt) {
  ApplyGraph g(dtype(), {}, 0.0);
  ApplyGradientDescent(g.root().WithOpName("apply"), g.var(), g.S(0.1), g.grad());
  g.StartSession();
  auto out = g.Step("apply", kGrads[0]);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kFailedPrecondition) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("'var'")) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("'apply'")) << out.status();
}

TEST_P(TrainingKernelsTest, AnUninitializedSlotIsAFailedPreconditionNamingIt) {
  ApplyGraph g(dtype(), {"accum"}, 0.0);
  ApplyMomentum(g.root().WithOpName("apply"), g.var(), g.slot(0), g.S(0.1), g.grad(), g.S(0.9));
  g.StartSession();
  // Initialize the variable only.
  ASSERT_TRUE(g.session()->Run({}, {}, {"var_init"}, nullptr).ok());
  auto out = g.Step("apply", kGrads[0]);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kFailedPrecondition) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("'accum'")) << out.status();
}

TEST_P(TrainingKernelsTest, AGradientOfAnotherShapeIsInvalidArgumentNamingTheVariable) {
  ApplyGraph g(dtype(), {"accum"}, 0.1);
  ApplyAdagrad(g.root().WithOpName("apply"), g.var(), g.slot(0), g.S(0.5), g.grad());
  g.StartSession();
  ASSERT_TRUE(g.Init().ok());
  auto out = g.Step("apply", {1, 2, 3}, Shape{3});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("'var'")) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("[3]")) << out.status();
  // The failed step left the variable unchanged.
  ExpectNear(kInitialVar, g.Fetch("var"), "variable after the failed step");
}

TEST_P(TrainingKernelsTest, AKnownGradientShapeMismatchFailsAtGraphBuildTime) {
  Scope root = Scope::NewRootScope();
  auto var = Variable(root.WithOpName("w"), Shape{2}, dtype());
  ApplyGradientDescent(root.WithOpName("apply"), var, Scalar(dtype(), 0.1),
                       MakeTensor(dtype(), Shape{3}, {1, 2, 3}));
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("'apply'")) << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("delta")) << root.status();
}

TEST_P(TrainingKernelsTest, TheVariableMustComeFromAVariableNode) {
  Scope root = Scope::NewRootScope();
  auto not_a_var = Const(root.WithOpName("c"), MakeTensor(dtype(), Shape{2}, {1, 2}));
  ApplyGradientDescent(root.WithOpName("apply"), not_a_var, Scalar(dtype(), 0.1),
                       MakeTensor(dtype(), Shape{2}, {1, 2}));
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(root.status().message(), HasSubstr("must be a Variable node")) << root.status();
}

TEST_P(TrainingKernelsTest, AReaderKeepsTheValueItReadBeforeTheUpdate) {
  ApplyGraph g(dtype(), {}, 0.0);
  ApplyGradientDescent(g.root().WithOpName("apply"), g.var(), g.S(1.0), g.grad());
  g.StartSession();
  ASSERT_TRUE(g.Init().ok());
  std::vector<Tensor> before;
  ASSERT_TRUE(g.session()->Run({}, {"var"}, {}, &before).ok());
  std::vector<Tensor> after;
  ASSERT_TRUE(
      g.session()
          ->Run({{"grad", MakeTensor(dtype(), kVarShape, kGrads[0])}}, {"apply"}, {}, &after)
          .ok());
  ExpectNear(kInitialVar, ToDoubles(before[0]), "value read before the update");
  ExpectNear({0.5, -1.0, -1.5, 3.0}, ToDoubles(after[0]), "value after the update");
}

TEST(TrainingKernelsDTypeTest, IntegerVariablesAreRejectedAtGraphBuildTime) {
  Scope root = Scope::NewRootScope();
  auto var = Variable(root.WithOpName("w"), Shape{2}, DType::kInt32);
  ApplyGradientDescent(root.WithOpName("apply"), var, 1, Tensor::FromVector<int32_t>({1, 2}));
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("int32")) << root.status();
}

TEST(TrainingKernelsDTypeTest, HyperParametersOfAnotherDTypeAreRejected) {
  Scope root = Scope::NewRootScope();
  auto var = Variable(root.WithOpName("w"), Shape{2}, DType::kFloat64);
  // 0.1f is a float32 literal.
  ApplyGradientDescent(root.WithOpName("apply"), var, 0.1f, Tensor::FromVector<double>({1, 2}));
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(root.status().message(), HasSubstr("alpha")) << root.status();
}

INSTANTIATE_TEST_SUITE_P(FloatDTypes, TrainingKernelsTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat64),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace actorflow
