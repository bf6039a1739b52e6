// Optimizers on embedding tables: Minimize gives a variable read through Gather a
// sparse update (SparseApply*) that changes only the rows a step reads and their slot
// rows, and a table learns a planted value per id with each optimizer.
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph/ops.h"
#include "graph/sparse_ops.h"
#include "kernels/direct_session.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

constexpr int kRows = 20;

struct SparseCase {
  std::string name;
  std::function<std::unique_ptr<Optimizer>()> make;
  std::string update_op;        // the op that must update the table
  std::vector<std::string> slots;
};

void PrintTo(const SparseCase& c, std::ostream* os) { *os << c.name; }

std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

// table [20,1]; prediction = Gather(table, ids); loss = mean((prediction - y)^2).
class SparseOptimizerTest : public ::testing::TestWithParam<SparseCase> {
 protected:
  void Build() {
    std::vector<float> initial(kRows);
    for (int r = 0; r < kRows; ++r) initial[r] = 0.01f * static_cast<float>(r % 7);
    initial_ = initial;
    auto table = CreateVariable(root_, "table", Tensor::FromVector(initial, Shape{kRows, 1}));
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *table;
    const Output ids = Placeholder(root_.WithOpName("ids"), DType::kInt32, Shape{-1});
    const Output y = Placeholder(root_.WithOpName("y"), DType::kFloat32, Shape{-1, 1});
    const Output loss =
        Mean(root_.WithOpName("loss"), Square(root_, Sub(root_, Gather(root_, table_, ids), y)));
    optimizer_ = GetParam().make();
    auto train = optimizer_->Minimize(root_.WithOpName("train"), loss);
    ASSERT_TRUE(train.ok()) << train.status();
    GlobalVariablesInitializer(root_.WithOpName("init"));
    ASSERT_TRUE(root_.ok()) << root_.status();
    auto session = NewDirectSession(root_.graph());
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(session).value();
    ASSERT_TRUE(session_->Run({}, {}, {"init"}, nullptr).ok());
  }

  FeedList Batch(const std::vector<int32_t>& ids) {
    std::vector<float> y;
    for (int32_t id : ids) y.push_back(Planted(id));
    const int64_t n = static_cast<int64_t>(ids.size());
    return {{"ids", Tensor::FromVector(ids)}, {"y", Tensor::FromVector(y, Shape{n, 1})}};
  }
  static float Planted(int id) { return 0.1f * static_cast<float>(id) - 1.0f; }

  std::vector<float> Fetch(const std::string& name) {
    std::vector<Tensor> out;
    const Status s = session_->Run({}, {name}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? Floats(out[0]) : std::vector<float>{};
  }

  Scope root_ = Scope::NewRootScope();
  Output table_;
  std::vector<float> initial_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Session> session_;
};

TEST_P(SparseOptimizerTest, AStepChangesOnlyTheRowsItReads) {
  Build();
  int updates = 0;
  for (int id = 0; id < root_.graph()->num_nodes(); ++id) {
    if (root_.graph()->node(id)->op() == GetParam().update_op) ++updates;
  }
  EXPECT_EQ(updates, 1) << "no " << GetParam().update_op << " node updates the table";
  std::vector<std::vector<float>> slots_before;
  for (const std::string& slot : GetParam().slots) slots_before.push_back(Fetch("table/" + slot));
  const std::set<int> read = {3, 7};
  ASSERT_TRUE(session_->Run(Batch({3, 7, 3}), {}, {"train"}, nullptr).ok());
  const std::vector<float> after = Fetch("table");
  for (int r = 0; r < kRows; ++r) {
    if (read.count(r)) {
      EXPECT_NE(after[r], initial_[r]) << "row " << r << " was read but did not change";
    } else {
      EXPECT_EQ(after[r], initial_[r]) << "row " << r << " was not read but changed";
    }
  }
  for (size_t k = 0; k < GetParam().slots.size(); ++k) {
    const std::vector<float> slot = Fetch("table/" + GetParam().slots[k]);
    for (int r = 0; r < kRows; ++r) {
      if (!read.count(r)) {
        EXPECT_EQ(slot[r], slots_before[k][r]) << GetParam().slots[k] << " " << r;
      }
    }
  }
}

TEST_P(SparseOptimizerTest, TheTableLearnsAPlantedValuePerId) {
  Build();
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> id(0, kRows - 1);
  for (int step = 0; step < 400; ++step) {
    std::vector<int32_t> ids(8);
    for (int32_t& i : ids) i = id(rng);
    const Status s = session_->Run(Batch(ids), {}, {"train"}, nullptr);
    ASSERT_TRUE(s.ok()) << "step " << step << ": " << s;
  }
  const std::vector<float> learned = Fetch("table");
  for (int r = 0; r < kRows; ++r) EXPECT_NEAR(learned[r], Planted(r), 0.05) << "row " << r;
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, SparseOptimizerTest,
    ::testing::Values(
        SparseCase{"GradientDescent", [] { return std::make_unique<GradientDescentOptimizer>(0.5); },
                   "SparseApplyGradientDescent", {}},
        SparseCase{"Adagrad", [] { return std::make_unique<AdagradOptimizer>(0.5); },
                   "SparseApplyAdagrad", {"Adagrad"}},
        SparseCase{"Adam", [] { return std::make_unique<AdamOptimizer>(0.05); },
                   "SparseApplyAdam", {"Adam_m", "Adam_v"}},
        SparseCase{"Ftrl", [] { return std::make_unique<FtrlOptimizer>(0.5); },
                   "SparseApplyFtrl", {"Ftrl", "Ftrl_1"}},
        // Momentum has no sparse update: the slices are made dense.
        SparseCase{"Momentum", [] { return std::make_unique<MomentumOptimizer>(0.2, 0.5); },
                   "ApplyMomentum", {}}),
    [](const ::testing::TestParamInfo<SparseCase>& info) { return info.param.name; });

}  // namespace
}  // namespace actorflow
