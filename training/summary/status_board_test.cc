#include "training/summary/status_board.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace actorflow {
namespace {

nlohmann::json Snapshot(const StatusBoard& board) { return nlohmann::json::parse(board.ToJson()); }

TEST(StatusBoardTest, StepsShowTheWorkersProgressMembershipAndLossCurve) {
  StatusBoard board("run");
  board.AddTask("ps:0", "127.0.0.1:2222", {"/job:ps/replica:0/task:0/device:CPU:0"});
  board.AddTask("worker:0", "127.0.0.1:2223", {});
  EXPECT_EQ(Snapshot(board)["state"], "starting");
  board.Step(0, 1, 10, 2.0, 1, true);
  board.Step(1, 1, 10, 1.5, 2, false);
  board.Step(0, 2, 10, 1.0, 3, true);
  const nlohmann::json s = Snapshot(board);
  EXPECT_EQ(s["state"], "running");
  EXPECT_EQ(s["global_step"], 3);
  EXPECT_EQ(s["updates_applied"], 2);
  EXPECT_EQ(s["dropped_stale"], 1);
  EXPECT_EQ(s["membership"], nlohmann::json({"worker:0", "worker:1"}));
  EXPECT_EQ(s["workers"][0]["name"], "worker:0");
  EXPECT_EQ(s["workers"][0]["step"], 2);
  EXPECT_DOUBLE_EQ(s["workers"][0]["loss"].get<double>(), 1.0);
  EXPECT_EQ(s["loss"][0]["points"], nlohmann::json({{1, 2.0}, {2, 1.0}}));
  EXPECT_EQ(s["tasks"][0]["name"], "ps:0");
  EXPECT_EQ(s["tasks"][0]["health"], "up");
}

TEST(StatusBoardTest, FinishedAndLostWorkersLeaveTheMembershipWithTheirHealth) {
  StatusBoard board("run");
  board.AddTask("worker:0", "a:1", {});
  board.AddTask("worker:1", "a:2", {});
  board.Step(0, 1, 5, 1.0, 1, true);
  board.Step(1, 1, 5, 1.0, 1, true);
  board.WorkerDone(0, /*lost=*/false);
  board.WorkerDone(1, /*lost=*/true);
  board.SetState("failed", "Unavailable: worker 1 lost");
  const nlohmann::json s = Snapshot(board);
  EXPECT_TRUE(s["membership"].empty());
  EXPECT_EQ(s["tasks"][0]["health"], "finished");
  EXPECT_EQ(s["tasks"][1]["health"], "down");
  EXPECT_EQ(s["state"], "failed");
  EXPECT_EQ(s["error"], "Unavailable: worker 1 lost");
}

TEST(StatusBoardTest, ALongRunKeepsABoundedCurveSpanningEveryStep) {
  StatusBoard board("run");
  const int64_t steps = 20 * static_cast<int64_t>(StatusBoard::kMaxLossPoints);
  for (int64_t step = 1; step <= steps; ++step) board.Step(0, step, steps, 1.0 / step, step, true);
  const nlohmann::json points = Snapshot(board)["loss"][0]["points"];
  EXPECT_LT(points.size(), StatusBoard::kMaxLossPoints);
  EXPECT_GT(points.size(), StatusBoard::kMaxLossPoints / 4);
  EXPECT_LE(points.front()[0].get<int64_t>(), 32);
  EXPECT_GE(points.back()[0].get<int64_t>(), steps - steps / 8);
}

TEST(StatusBoardTest, ConcurrentStepsAndSnapshotsAreConsistent) {
  StatusBoard board("run");
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&board, w] {
      for (int64_t step = 1; step <= 2000; ++step) board.Step(w, step, 2000, 1.0, step, true);
    });
  }
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(board.ToJson().empty());
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(Snapshot(board)["updates_applied"], 8000);
}

}  // namespace
}  // namespace actorflow
