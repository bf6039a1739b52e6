// The sparse in-place updates against their dense counterparts: Scatter* against rows
// computed here, each SparseApply* against the dense Apply* of the same gradient made
// dense (touched rows bit-identical, every other row and slot untouched), with their
// errors; and GradientsWithSlices against Gradients().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/sparse_ops.h"
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

std::unique_ptr<Session> StartSession(const Scope& root) {
  EXPECT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph());
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

Tensor Fetch(Session* session, const std::string& name) {
  std::vector<Tensor> out;
  const Status s = session->Run({}, {name}, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0] : Tensor();
}

// --- Scatter* ----------------------------------------------------------------------

class ScatterKernelTest : public ::testing::TestWithParam<DType> {};

INSTANTIATE_TEST_SUITE_P(NumericDTypes, ScatterKernelTest, ::testing::ValuesIn(kNumericDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST_P(ScatterKernelTest, AddSubAndUpdateWriteOnlyTheNamedRows) {
  const DType dtype = GetParam();
  const std::vector<double> initial = {1, 2, 3, 4, 5, 6, 7, 8};  // [4,2]
  const std::vector<double> rows = {10, 20, 30, 40, 50, 60};    // [3,2] for ids {3,0,3}
  const std::vector<int64_t> ids = {3, 0, 3};
  for (const std::string op : {"ScatterAdd", "ScatterSub", "ScatterUpdate"}) {
    Scope root = Scope::NewRootScope();
    const Output var = Variable(root.WithOpName("var"), Shape{4, 2}, dtype);
    Assign(root.WithOpName("init"), var, MakeTensor(dtype, {4, 2}, initial));
    const Tensor id_tensor = Tensor::FromVector<int64_t>(ids);
    const Tensor updates = MakeTensor(dtype, {3, 2}, rows);
    if (op == "ScatterAdd") ScatterAdd(root.WithOpName("scatter"), var, id_tensor, updates);
    if (op == "ScatterSub") ScatterSub(root.WithOpName("scatter"), var, id_tensor, updates);
    if (op == "ScatterUpdate") ScatterUpdate(root.WithOpName("scatter"), var, id_tensor, updates);
    auto session = StartSession(root);
    ASSERT_NE(session, nullptr);
    ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {"scatter"}, {}, &out).ok()) << op;
    std::vector<double> want = initial;
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int j = 0; j < 2; ++j) {
        double& w = want[ids[i] * 2 + j];
        const double u = rows[i * 2 + j];
        w = op == "ScatterAdd" ? w + u : op == "ScatterSub" ? w - u : u;  // last id wins
      }
    }
    EXPECT_EQ(ToDoubles(out[0]), want) << op;
    EXPECT_EQ(ToDoubles(Fetch(session.get(), "var")), want) << op;
  }
}

TEST(ScatterKernelErrorTest, AnIdOutsideTheVariableChangesNothing) {
  Scope root = Scope::NewRootScope();
  const Output var = Variable(root.WithOpName("var"), Shape{3, 1}, DType::kFloat32);
  Assign(root.WithOpName("init"), var, Tensor::FromVector<float>({1, 2, 3}, Shape{3, 1}));
  ScatterAdd(root.WithOpName("scatter"), var, Tensor::FromVector<int32_t>({0, 3}),
             Tensor::FromVector<float>({5, 5}, Shape{2, 1}));
  auto session = StartSession(root);
  ASSERT_NE(session, nullptr);
  const Status uninitialized = session->Run({}, {}, {"scatter"}, nullptr);
  EXPECT_EQ(uninitialized.code(), Code::kFailedPrecondition) << uninitialized;
  EXPECT_THAT(uninitialized.message(), HasSubstr("'var'"));
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  const Status s = session->Run({}, {}, {"scatter"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("scatter"));
  EXPECT_THAT(s.message(), HasSubstr("indices[1] = 3 is not in [0, 3)"));
  EXPECT_EQ(ToDoubles(Fetch(session.get(), "var")), (std::vector<double>{1, 2, 3}));
}

// --- SparseApply* against Apply* ----------------------------------------------------

constexpr int64_t kRows = 6;
constexpr int64_t kCols = 3;
// Two steps, each touching rows {0, 1, 4} (4 twice), so that the dense update's rows
// 0, 1 and 4 see exactly the steps the sparse update applies.
const std::vector<std::vector<int64_t>> kStepIds = {{4, 1, 4, 0}, {0, 4, 1, 1}};
const std::set<int64_t> kTouched = {0, 1, 4};

enum class Rule { kGradientDescent, kAdagrad, kAdam, kFtrl };

struct RuleCase {
  Rule rule;
  std::string name;
  std::vector<std::string> slots;
  double slot_initial;
};

const std::vector<RuleCase> kRules = {{Rule::kGradientDescent, "GradientDescent", {}, 0.0},
                                      {Rule::kAdagrad, "Adagrad", {"accum"}, 0.1},
                                      {Rule::kAdam, "Adam", {"m", "v"}, 0.0},
                                      {Rule::kFtrl, "Ftrl", {"accum", "linear"}, 0.1}};

class SparseApplyTest : public ::testing::TestWithParam<DType> {};

INSTANTIATE_TEST_SUITE_P(FloatDTypes, SparseApplyTest, ::testing::ValuesIn(kFloatDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

// Builds "dense" (Apply* on var "a" with the gradient made dense) and "sparse"
// (SparseApply* on var "b") from the fed rows "grad" and ids "ids".
void BuildUpdates(const Scope& root, DType dtype, const RuleCase& rc,
                  const std::vector<double>& initial) {
  const Shape shape{kRows, kCols};
  auto scalar = [dtype](double v) { return MakeTensor(dtype, {}, {v}); };
  std::vector<Output> inits;
  std::map<std::string, Output> vars;
  for (const std::string side : {"a", "b"}) {
    for (const std::string& slot : [&] {
           std::vector<std::string> names = {""};
           for (const std::string& s : rc.slots) names.push_back("_" + s);
           return names;
         }()) {
      const std::string name = side + slot;
      vars[name] = Variable(root.WithOpName(name), shape, dtype);
      const std::vector<double> value =
          slot.empty() ? initial : std::vector<double>(kRows * kCols, rc.slot_initial);
      inits.push_back(Assign(root.WithOpName(name + "_init"), vars[name],
                             MakeTensor(dtype, shape, value)));
    }
  }
  NoOp(root.WithOpName("init").WithControlDependencies(inits));
  const Output grad = Placeholder(root.WithOpName("grad"), dtype);
  const Output ids = Placeholder(root.WithOpName("ids"), DType::kInt64);
  const Output dense = DenseFromSlices(
      root, {grad, ids, Const(root, Tensor::FromVector<int64_t>({kRows, kCols}))});
  const Scope d = root.WithOpName("dense");
  const Scope sp = root.WithOpName("sparse");
  switch (rc.rule) {
    case Rule::kGradientDescent:
      ApplyGradientDescent(d, vars["a"], scalar(0.25), dense);
      SparseApplyGradientDescent(sp, vars["b"], scalar(0.25), grad, ids);
      break;
    case Rule::kAdagrad:
      ApplyAdagrad(d, vars["a"], vars["a_accum"], scalar(0.5), dense);
      SparseApplyAdagrad(sp, vars["b"], vars["b_accum"], scalar(0.5), grad, ids);
      break;
    case Rule::kAdam:
      ApplyAdam(d, vars["a"], vars["a_m"], vars["a_v"], scalar(0.9), scalar(0.999),
                scalar(0.01), scalar(0.9), scalar(0.999), scalar(1e-8), dense);
      SparseApplyAdam(sp, vars["b"], vars["b_m"], vars["b_v"], scalar(0.9), scalar(0.999),
                      scalar(0.01), scalar(0.9), scalar(0.999), scalar(1e-8), grad, ids);
      break;
    case Rule::kFtrl:
      // l1 = 0.05 zeroes some weights, l2 = 0.01 shrinks the others.
      ApplyFtrl(d, vars["a"], vars["a_accum"], vars["a_linear"], dense, scalar(0.5),
                scalar(0.05), scalar(0.01), scalar(-0.5));
      SparseApplyFtrl(sp, vars["b"], vars["b_accum"], vars["b_linear"], grad, ids, scalar(0.5),
                      scalar(0.05), scalar(0.01), scalar(-0.5));
      break;
  }
}

TEST_P(SparseApplyTest, TouchedRowsMatchTheDenseUpdateAndTheRestStayBitIdentical) {
  const DType dtype = GetParam();
  RandomTensors random(31);
  const std::vector<double> initial =
      ToDoubles(random.Uniform(dtype, Shape{kRows, kCols}, -2, 2));
  for (const RuleCase& rc : kRules) {
    SCOPED_TRACE(rc.name);
    Scope root = Scope::NewRootScope();
    BuildUpdates(root, dtype, rc, initial);
    auto session = StartSession(root);
    ASSERT_NE(session, nullptr);
    ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
    for (size_t step = 0; step < kStepIds.size(); ++step) {
      const int64_t n = static_cast<int64_t>(kStepIds[step].size());
      const std::vector<std::pair<std::string, Tensor>> feeds = {
          {"grad", random.Uniform(dtype, Shape{n, kCols}, -3, 3)},
          {"ids", Tensor::FromVector<int64_t>(kStepIds[step])}};
      ASSERT_TRUE(session->Run(feeds, {}, {"dense"}, nullptr).ok());
      const Status s = session->Run(feeds, {}, {"sparse"}, nullptr);
      ASSERT_TRUE(s.ok()) << s;
    }
    std::vector<std::string> suffixes = {""};
    for (const std::string& slot : rc.slots) suffixes.push_back("_" + slot);
    for (const std::string& suffix : suffixes) {
      const std::vector<double> a = ToDoubles(Fetch(session.get(), "a" + suffix));
      const std::vector<double> b = ToDoubles(Fetch(session.get(), "b" + suffix));
      // The slots' initial value as the dtype holds it (0.1f is not 0.1).
      const double slot_initial = MakeTensor(dtype, {}, {rc.slot_initial}).ElementAsDouble(0);
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t c = 0; c < kCols; ++c) {
          const int64_t i = r * kCols + c;
          if (kTouched.count(r)) {
            EXPECT_EQ(b[i], a[i]) << "b" << suffix << " row " << r;
          } else {
            EXPECT_EQ(b[i], suffix.empty() ? initial[i] : slot_initial)
                << "b" << suffix << " untouched row " << r;
          }
        }
      }
    }
  }
}

TEST(SparseApplyErrorTest, IdsOutsideTheVariableAndMisshapenRowsAreNamed) {
  Scope root = Scope::NewRootScope();
  const Output var = Variable(root.WithOpName("var"), Shape{3, 2}, DType::kFloat32);
  Assign(root.WithOpName("init"), var, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{3, 2}));
  const Output grad = Placeholder(root.WithOpName("grad"), DType::kFloat32);
  const Output ids = Placeholder(root.WithOpName("ids"), DType::kInt32);
  SparseApplyGradientDescent(root.WithOpName("apply"), var, 1.0f, grad, ids);
  auto session = StartSession(root);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  Status s = session->Run({{"grad", Tensor::FromVector<float>({1, 1, 1, 1}, Shape{2, 2})},
                           {"ids", Tensor::FromVector<int32_t>({2, 7})}},
                          {}, {"apply"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("apply"));
  EXPECT_THAT(s.message(), HasSubstr("indices[1] = 7 is not in [0, 3)"));
  s = session->Run({{"grad", Tensor::FromVector<float>({1, 1, 1}, Shape{1, 3})},
                    {"ids", Tensor::FromVector<int32_t>({2})}},
                   {}, {"apply"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("expected [1,2]"));
  EXPECT_EQ(ToDoubles(Fetch(session.get(), "var")), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // Empty batches change nothing and succeed.
  s = session->Run({{"grad", Tensor::FromVector<float>({}, Shape{0, 2})},
                    {"ids", Tensor::FromVector<int32_t>({})}},
                   {}, {"apply"}, nullptr);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(ToDoubles(Fetch(session.get(), "var")), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

// --- GradientsWithSlices ------------------------------------------------------------

// loss = sum(Gather(Identity(params), {4,1,4})^2) + sum(Gather(params, {2,1}) * w):
// d params[r] = 2 * params[r] per occurrence of r in the first ids, + w's row per
// occurrence in the second.
TEST(SparseGradientsTest, GatherGradientsStaySparseAndMatchTheDenseGradient) {
  Scope root = Scope::NewRootScope();
  const std::vector<double> table = {0.5, -1, 2, 1.5, -0.25, 3, 1, 2, -2, 0.75};  // [5,2]
  const Output params = Const(root.WithOpName("params"), Tensor::FromVector(table, Shape{5, 2}));
  const std::vector<double> w = {1, 2, 3, 4};
  const Output first = Gather(root, Identity(root, params), Tensor::FromVector<int32_t>({4, 1, 4}));
  const Output second = Gather(root, params, Tensor::FromVector<int64_t>({2, 1}));
  const Output loss = Add(root, Sum(root, Square(root, first)),
                          Sum(root, Mul(root, second, Tensor::FromVector(w, Shape{2, 2}))));
  auto sparse = GradientsWithSlices(root, {loss}, {params});
  ASSERT_TRUE(sparse.ok()) << sparse.status();
  ASSERT_TRUE((*sparse)[0].sparse());
  const IndexedSlices& slices = (*sparse)[0].slices;
  auto dense = Gradients(root, {loss}, {params});
  ASSERT_TRUE(dense.ok()) << dense.status();
  const Output made_dense = DenseFromSlices(root, slices);
  auto session = StartSession(root);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {slices.values.name(), slices.indices.name(), made_dense.name(),
                                (*dense)[0].name()},
                           {}, &out)
                  .ok());
  // Only the five gathered rows travel, with their ids (int64: the two gathers' id
  // dtypes differ).
  EXPECT_EQ(out[0].shape(), (Shape{5, 2}));
  std::vector<double> ids = ToDoubles(out[1]);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<double>{1, 1, 2, 4, 4}));
  std::vector<double> want(10, 0.0);
  for (int r : {4, 1, 4}) {
    for (int c = 0; c < 2; ++c) want[r * 2 + c] += 2 * table[r * 2 + c];
  }
  const std::vector<int> second_ids = {2, 1};
  for (int k = 0; k < 2; ++k) {
    for (int c = 0; c < 2; ++c) want[second_ids[k] * 2 + c] += w[k * 2 + c];
  }
  EXPECT_EQ(ToDoubles(out[2]), want);
  EXPECT_EQ(ToDoubles(out[3]), want);
}

TEST(SparseGradientsTest, SlicesMeetingADenseGradientAreMadeDense) {
  Scope root = Scope::NewRootScope();
  const Output params = Const(root, Tensor::FromVector<double>({1, 2, 3}, Shape{3, 1}));
  const Output gathered = Gather(root, params, Tensor::FromVector<int32_t>({2, 2}));
  const Output loss = Add(root, Sum(root, gathered), Sum(root, Mul(root, params, params)));
  auto grads = GradientsWithSlices(root, {loss}, {params});
  ASSERT_TRUE(grads.ok()) << grads.status();
  ASSERT_FALSE((*grads)[0].sparse());
  auto session = StartSession(root);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {(*grads)[0].dense.name()}, {}, &out).ok());
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{2, 4, 8}));  // 2x, plus 1 twice for row 2
}

}  // namespace
}  // namespace actorflow
