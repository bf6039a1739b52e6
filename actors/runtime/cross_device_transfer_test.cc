// RunMetadata::transfers: the bytes and tensors a step moved between devices, as the
// device actors' Sends counted them, reported only to a caller that asks.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actors/runtime/local_session.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

std::string Cpu(int i) { return std::string(kLocalTask) + "/device:CPU:" + std::to_string(i); }

std::unique_ptr<ActorSession> TwoCpuSession(const Graph* graph) {
  SessionOptions options;
  options.device_count["CPU"] = 2;
  auto session = NewActorSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

TEST(CrossDeviceTransferTest, AFloatMatrixCrossingOnceReportsExactlyItsBytes) {
  // x [3, 5] float32 = 60 bytes made on CPU:0, consumed on CPU:1; the float32
  // scalar total [] = 4 bytes goes back from CPU:1 to CPU:0.
  Scope root = Scope::NewRootScope();
  Scope cpu0 = root.WithDevice("/cpu:0");
  Scope cpu1 = root.WithDevice("/cpu:1");
  Output x = Fill(cpu0.WithOpName("x"), Shape{3, 5}, 2.0f);
  Output doubled = Add(cpu1.WithOpName("doubled"), x, x);
  Output total = Sum(cpu1.WithOpName("total"), doubled);
  Neg(cpu0.WithOpName("back"), total);
  ASSERT_OK(root.status());
  auto session = TwoCpuSession(root.graph());
  ASSERT_NE(session, nullptr);

  RunMetadata meta;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(RunOptions(), {}, {"back"}, {}, &out, &meta));
  EXPECT_EQ(out[0].data<float>()[0], -60.0f);
  ASSERT_EQ(meta.transfers.size(), 2u);
  // Sorted by (src, dst); x is sent once although two inputs read it.
  EXPECT_EQ(meta.transfers[0], (CrossDeviceTransfer{Cpu(0), Cpu(1), 1, 3 * 5 * 4}));
  EXPECT_EQ(meta.transfers[1], (CrossDeviceTransfer{Cpu(1), Cpu(0), 1, 4}));

  // The same counts every step: nothing carries over from the last one.
  RunMetadata again;
  ASSERT_OK(session->Run(RunOptions(), {}, {"back"}, {}, &out, &again));
  EXPECT_EQ(again.transfers, meta.transfers);
}

TEST(CrossDeviceTransferTest, AStepOnOneDeviceMovesNothing) {
  Scope root = Scope::NewRootScope();
  Scope cpu1 = root.WithDevice("/cpu:1");
  Output x = Fill(cpu1.WithOpName("x"), Shape{4}, 1.0f);
  Add(cpu1.WithOpName("y"), x, x);
  ASSERT_OK(root.status());
  auto session = TwoCpuSession(root.graph());
  ASSERT_NE(session, nullptr);
  RunMetadata meta;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(RunOptions(), {}, {"y"}, {}, &out, &meta));
  EXPECT_TRUE(meta.transfers.empty());
}

TEST(CrossDeviceTransferTest, AFedTensorGoesStraightToEachDeviceThatReadsIt) {
  // The master hands a feed to every partition that reads it: no Send carries it,
  // while the computed n crosses from CPU:1 to CPU:0.
  Scope root = Scope::NewRootScope();
  Output p = Placeholder(root.WithDevice("/cpu:0").WithOpName("p"), DType::kFloat32, Shape{-1});
  Output n = Neg(root.WithDevice("/cpu:1").WithOpName("n"), p);
  Add(root.WithDevice("/cpu:0").WithOpName("zero"), p, n);
  ASSERT_OK(root.status());
  auto session = TwoCpuSession(root.graph());
  ASSERT_NE(session, nullptr);
  Tensor value(DType::kFloat32, Shape{7});
  RunMetadata meta;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(RunOptions(), {{"p", value}}, {"zero"}, {}, &out, &meta));
  ASSERT_EQ(meta.transfers.size(), 1u);
  EXPECT_EQ(meta.transfers[0], (CrossDeviceTransfer{Cpu(1), Cpu(0), 1, 7 * 4}));
}

TEST(CrossDeviceTransferTest, AStepWithoutMetadataLeavesNoCountForTheNext) {
  Scope root = Scope::NewRootScope();
  Output x = Fill(root.WithDevice("/cpu:0").WithOpName("x"), Shape{2}, 1.0f);
  Neg(root.WithDevice("/cpu:1").WithOpName("n"), x);
  ASSERT_OK(root.status());
  auto session = TwoCpuSession(root.graph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"n"}, {}, &out));  // no RunMetadata: nothing is counted
  RunMetadata meta;
  ASSERT_OK(session->Run(RunOptions(), {}, {"n"}, {}, &out, &meta));
  ASSERT_EQ(meta.transfers.size(), 1u);
  EXPECT_EQ(meta.transfers[0].bytes, 8);  // this step's x alone
}

}  // namespace
}  // namespace actorflow
