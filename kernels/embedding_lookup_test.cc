// EmbeddingLookup and EmbeddingLookupSparse (graph/sparse_ops.h) through a
// DirectSession: the rows of a table stored whole or in parts ("mod" and "div"), the
// gradient each part gets (only the distinct rows it holds, as IndexedSlices), the
// combiners, and the errors that name an id, a part or a combiner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/sparse_ops.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kRows = 10;
constexpr int64_t kDim = 3;

// Row r of the table is {r, 10 + r, 100 + r}.
double TableValue(int64_t r, int64_t c) { return r + 10.0 * c * c + (c == 2 ? 80.0 : 0.0); }

// The table as `parts` Consts laid out by `strategy`.
std::vector<Output> TableParts(const Scope& s, int parts, const std::string& strategy) {
  std::vector<std::vector<double>> values(parts);
  std::vector<int64_t> rows(parts, 0);
  const int64_t per = kRows / parts, larger = kRows % parts;
  for (int64_t r = 0; r < kRows; ++r) {
    int64_t p = 0;
    if (strategy == "mod") {
      p = r % parts;
    } else {
      p = r < larger * (per + 1) ? r / (per + 1) : larger + (r - larger * (per + 1)) / per;
    }
    for (int64_t c = 0; c < kDim; ++c) values[p].push_back(TableValue(r, c));
    ++rows[p];
  }
  std::vector<Output> out;
  for (int p = 0; p < parts; ++p) {
    out.push_back(Const(s.WithOpName("part_" + std::to_string(p)),
                        Tensor::FromVector(values[p], Shape{rows[p], kDim})));
  }
  return out;
}

std::vector<Tensor> RunGraph(const Scope& root, const std::vector<std::string>& fetches) {
  EXPECT_TRUE(root.ok()) << root.status();
  auto session = NewDirectSession(root.graph());
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  if (!session.ok()) return out;
  const Status s = (*session)->Run({}, fetches, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = t.ElementAsDouble(i);
  return out;
}

TEST(EmbeddingLookupTest, RowsOfAWholeOrPartitionedTableForModAndDiv) {
  const std::vector<int32_t> ids = {7, 0, 7, 9, 3, 3};
  for (const std::string strategy : {"mod", "div"}) {
    for (int parts : {1, 2, 3, 4}) {
      Scope root = Scope::NewRootScope();
      const Output flat = EmbeddingLookup(root.WithOpName("flat"), TableParts(root, parts, strategy),
                                          Tensor::FromVector(ids), strategy);
      const Output grid = EmbeddingLookup(root, TableParts(root.NewSubScope("g"), parts, strategy),
                                          Tensor::FromVector(ids, Shape{2, 3}), strategy);
      const std::vector<Tensor> out = RunGraph(root, {flat.name(), grid.name()});
      ASSERT_EQ(out.size(), 2u);
      std::vector<double> want;
      for (int32_t id : ids) {
        for (int64_t c = 0; c < kDim; ++c) want.push_back(TableValue(id, c));
      }
      EXPECT_EQ(out[0].shape(), (Shape{6, kDim})) << strategy << " " << parts;
      EXPECT_EQ(ToDoubles(out[0]), want) << strategy << " " << parts;
      EXPECT_EQ(out[1].shape(), (Shape{2, 3, kDim})) << strategy << " " << parts;
      EXPECT_EQ(ToDoubles(out[1]), want) << strategy << " " << parts;
    }
  }
}

// loss = sum(lookup(ids) * w): each part's gradient holds one row per distinct id it
// stores, the sum of w's rows for that id.
TEST(EmbeddingLookupTest, EachPartGetsTheSummedRowsOfItsDistinctIds) {
  const std::vector<int32_t> ids = {7, 0, 7, 9, 3, 3, 7};
  for (const std::string strategy : {"mod", "div"}) {
    Scope root = Scope::NewRootScope();
    const std::vector<Output> parts = TableParts(root, 3, strategy);
    const Output rows = EmbeddingLookup(root, parts, Tensor::FromVector(ids), strategy);
    std::vector<double> w;
    for (size_t i = 0; i < ids.size() * kDim; ++i) w.push_back(0.5 * static_cast<double>(i) - 3);
    const Output loss =
        Sum(root, Mul(root, rows, Tensor::FromVector(w, Shape{static_cast<int64_t>(ids.size()), kDim})));
    auto grads = GradientsWithSlices(root, {loss}, parts);
    ASSERT_TRUE(grads.ok()) << grads.status();
    std::vector<std::string> fetches;
    for (const Gradient& g : *grads) {
      ASSERT_TRUE(g.sparse()) << strategy;
      fetches.push_back(g.slices.values.name());
      fetches.push_back(g.slices.indices.name());
    }
    const std::vector<Tensor> out = RunGraph(root, fetches);
    ASSERT_EQ(out.size(), 6u);
    // Expected: for each distinct id, the sum of w's rows at its positions.
    int64_t rows_seen = 0;
    for (int p = 0; p < 3; ++p) {
      const Tensor& values = out[2 * p];
      const std::vector<double> local = ToDoubles(out[2 * p + 1]);
      EXPECT_EQ(values.dim(0), static_cast<int64_t>(local.size()));
      rows_seen += values.dim(0);
      for (size_t k = 0; k < local.size(); ++k) {
        // The global id of local row local[k] of part p.
        int64_t id = -1;
        for (int64_t r = 0; r < kRows; ++r) {
          const int64_t pr = strategy == "mod" ? r % 3 : (r < 4 ? 0 : r < 7 ? 1 : 2);
          const int64_t lr = strategy == "mod" ? r / 3 : (r < 4 ? r : r < 7 ? r - 4 : r - 7);
          if (pr == p && lr == static_cast<int64_t>(local[k])) id = r;
        }
        for (int64_t c = 0; c < kDim; ++c) {
          double want = 0;
          for (size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] == id) want += w[i * kDim + c];
          }
          EXPECT_EQ(values.ElementAsDouble(k * kDim + c), want)
              << strategy << " part " << p << " id " << id;
        }
      }
    }
    EXPECT_EQ(rows_seen, 4) << "one row per distinct id {0, 3, 7, 9}";
  }
}

TEST(EmbeddingLookupTest, CombinersSumMeanAndSqrtnPerExample) {
  // Example 0 holds ids {1, 4, 4}, example 1 none, example 2 holds {9}.
  const std::vector<int64_t> ids = {1, 4, 9, 4};
  const std::vector<int32_t> examples = {0, 0, 2, 0};
  for (const std::string combiner : {"sum", "mean", "sqrtn"}) {
    Scope root = Scope::NewRootScope();
    const Output out = EmbeddingLookupSparse(root, TableParts(root, 2, "div"),
                                             Tensor::FromVector(ids), Tensor::FromVector(examples),
                                             3, combiner, "div");
    const std::vector<Tensor> got = RunGraph(root, {out.name()});
    ASSERT_EQ(got.size(), 1u) << combiner;
    ASSERT_EQ(got[0].shape(), (Shape{3, kDim}));
    const double scale0 = combiner == "sum" ? 1 : combiner == "mean" ? 1.0 / 3 : 1 / std::sqrt(3.0);
    for (int64_t c = 0; c < kDim; ++c) {
      EXPECT_DOUBLE_EQ(got[0].ElementAsDouble(c),
                       scale0 * (TableValue(1, c) + 2 * TableValue(4, c))) << combiner;
      EXPECT_EQ(got[0].ElementAsDouble(kDim + c), 0.0) << combiner;
      EXPECT_DOUBLE_EQ(got[0].ElementAsDouble(2 * kDim + c), TableValue(9, c)) << combiner;
    }
  }
}

TEST(EmbeddingLookupTest, AnIdOutsideTheTableIsNamedAtRunTime) {
  for (int parts : {1, 3}) {
    Scope root = Scope::NewRootScope();
    const Output ids = Placeholder(root.WithOpName("ids"), DType::kInt32);
    const Output rows = EmbeddingLookup(root, TableParts(root, parts, "mod"), ids);
    ASSERT_TRUE(root.ok()) << root.status();
    auto session = NewDirectSession(root.graph());
    ASSERT_TRUE(session.ok());
    std::vector<Tensor> out;
    const Status s = (*session)->Run({{"ids", Tensor::FromVector<int32_t>({2, 10})}},
                                     {rows.name()}, {}, &out);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("= 10 is not in [0,"));
    // Empty batches and batches of one repeated id work.
    ASSERT_TRUE((*session)->Run({{"ids", Tensor::FromVector<int32_t>({})}}, {rows.name()}, {}, &out).ok());
    EXPECT_EQ(out[0].shape(), (Shape{0, kDim}));
    ASSERT_TRUE((*session)->Run({{"ids", Tensor::FromVector<int32_t>({5, 5, 5})}}, {rows.name()}, {},
                                &out).ok());
    EXPECT_EQ(out[0].ElementAsDouble(2 * kDim), TableValue(5, 0));
  }
}

TEST(EmbeddingLookupTest, PartsOfTheWrongSizeAndUnknownCombinersAreNamed) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> parts = {
      Const(root.WithOpName("big"), Tensor::FromVector<float>(std::vector<float>(12), Shape{4, 3})),
      Const(root.WithOpName("small"), Tensor::FromVector<float>(std::vector<float>(6), Shape{2, 3}))};
  EmbeddingLookup(root, parts, Tensor::FromVector<int32_t>({0}), "mod");
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("part 'big' has 4 rows"));
  Scope other = Scope::NewRootScope();
  EmbeddingLookupSparse(other, TableParts(other, 1, "div"), Tensor::FromVector<int32_t>({0}),
                        Tensor::FromVector<int32_t>({0}), 1, "max");
  EXPECT_THAT(other.status().message(), HasSubstr("combiner 'max'"));
}

}  // namespace
}  // namespace actorflow
