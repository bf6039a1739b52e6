// Embedding tables in checkpoints: a table partitioned over 3 devices ("div"), trained
// through EmbeddingLookup with sparse Adagrad updates, restores into 2 parts and looks
// up the same rows, its slots included; a checkpoint of another embedding dimension
// is refused naming the table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/runtime/local_session.h"
#include "graph/ops.h"
#include "graph/sparse_ops.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_test_util.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/partitioned_variable.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using checkpoint_test::NewTempDir;

constexpr int64_t kRows = 11;

std::unique_ptr<ActorSession> OpenCpus(const Graph* graph, int cpus) {
  SessionOptions options;
  options.device_count = {{"CPU", cpus}};
  auto session = NewActorSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

// A table "emb" [11, dim] in `parts` parts on /cpu:k, every id looked up ("lookup"),
// trained by Adagrad on loss = sum(lookup(ids)^2) ("train").
void BuildModel(const Scope& root, int parts, int64_t dim) {
  std::vector<float> initial(kRows * dim);
  for (size_t i = 0; i < initial.size(); ++i) initial[i] = 0.1f * static_cast<float>(i % 13) - 0.5f;
  auto table = CreatePartitionedVariable(root, "emb", Shape{kRows, dim},
                                         Tensor::FromVector(initial, Shape{kRows, dim}), parts,
                                         [](int k) { return "/cpu:" + std::to_string(k); });
  ASSERT_TRUE(table.ok()) << table.status();
  std::vector<int32_t> all(kRows);
  for (int32_t i = 0; i < kRows; ++i) all[i] = i;
  Identity(root.WithOpName("lookup"), EmbeddingLookup(root, table->parts, Tensor::FromVector(all), "div"));
  const Output ids = Placeholder(root.WithOpName("ids"), DType::kInt32, Shape{-1});
  const Output loss = Sum(root, Square(root, EmbeddingLookup(root, table->parts, ids, "div")));
  AdagradOptimizer adagrad(0.1);
  ASSERT_TRUE(adagrad.Minimize(root.WithOpName("train"), loss).ok());
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();
}

std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

TEST(EmbeddingCheckpointTest, ATableOnThreePartsRestoresIntoTwoWithItsSlots) {
  const std::string dir = NewTempDir();
  Scope three = Scope::NewRootScope();
  BuildModel(three, 3, 4);
  auto session = OpenCpus(three.graph(), 3);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  for (const std::vector<int32_t>& batch : {std::vector<int32_t>{1, 5, 5, 9}, {10, 0, 4}}) {
    ASSERT_TRUE(session->Run({{"ids", Tensor::FromVector(batch)}}, {}, {"train"}, nullptr).ok());
  }
  std::vector<Tensor> trained;
  ASSERT_TRUE(session->Run({}, {"lookup", "emb/part_0/Adagrad"}, {}, &trained).ok());
  auto saver = Saver::Create(three.graph(), SaverOptions());
  ASSERT_TRUE(saver.ok()) << saver.status();
  ASSERT_TRUE((*saver)->Save(session.get(), dir, 2).ok());

  Scope two = Scope::NewRootScope();
  BuildModel(two, 2, 4);
  auto restored = OpenCpus(two.graph(), 2);
  ASSERT_NE(restored, nullptr);
  auto two_saver = Saver::Create(two.graph(), SaverOptions());
  ASSERT_TRUE(two_saver.ok()) << two_saver.status();
  const Status s = (*two_saver)->Restore(restored.get(), dir);
  ASSERT_TRUE(s.ok()) << s;
  std::vector<Tensor> out;
  ASSERT_TRUE(restored->Run({}, {"lookup", "emb/part_0/Adagrad"}, {}, &out).ok());
  EXPECT_EQ(Floats(out[0]), Floats(trained[0]));
  // Part 0 of 3 holds rows 0-3, of 2 rows 0-5: their first 4 rows' accumulators agree,
  // and rows 0 and 1 (trained) differ from the initial 0.1.
  const std::vector<float> before = Floats(trained[1]), after = Floats(out[1]);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i], before[i]) << i;
  EXPECT_NE(before[0], 0.1f);
}

TEST(EmbeddingCheckpointTest, AnotherEmbeddingDimensionIsRefusedNamingTheTable) {
  const std::string dir = NewTempDir();
  Scope wide = Scope::NewRootScope();
  BuildModel(wide, 2, 8);
  auto session = OpenCpus(wide.graph(), 2);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  auto saver = Saver::Create(wide.graph(), SaverOptions());
  ASSERT_TRUE(saver.ok());
  ASSERT_TRUE((*saver)->Save(session.get(), dir, 1).ok());

  Scope narrow = Scope::NewRootScope();
  BuildModel(narrow, 2, 4);
  auto restored = OpenCpus(narrow.graph(), 2);
  ASSERT_NE(restored, nullptr);
  auto narrow_saver = Saver::Create(narrow.graph(), SaverOptions());
  ASSERT_TRUE(narrow_saver.ok());
  const Status s = (*narrow_saver)->Restore(restored.get(), dir);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("emb"));
  EXPECT_THAT(s.message(), HasSubstr("[11,4]"));
  EXPECT_THAT(s.message(), HasSubstr("[11,8]"));
}

}  // namespace
}  // namespace actorflow
