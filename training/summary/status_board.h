// StatusBoard: what a live status page shows about a training run or a server
// task — the cluster's tasks and their health, devices, membership, each worker's
// step, steps/s, updates applied and dropped as stale, and the loss curve — kept up
// to date by the code that trains (progress callbacks) and read as one JSON
// snapshot (`/status.json` of tools/cli/status_server.h).
//
// Snapshot JSON (a contract of /status.json; fields may be added):
//   {"title": str, "state": "starting"|"running"|"finished"|"failed", "error": str,
//    "uptime_seconds": num, "global_step": int, "steps_per_second": num,
//    "updates_applied": int, "dropped_stale": int,
//    "tasks": [{"name": "ps:0", "address": "127.0.0.1:2222", "health": "up"|"down"|
//               "finished"|"unknown", "devices": [str]}],
//    "membership": ["worker:0", ...],            // workers that are training now
//    "workers": [{"name": "worker:0", "step": int, "planned_steps": int,
//                 "steps_per_second": num, "loss": num, "applied": int,
//                 "dropped_stale": int}],
//    "loss": [{"worker": "worker:0", "points": [[step, loss], ...]}]}
// The loss curve keeps at most kMaxLossPoints points per worker: when full, every
// other point is dropped and the spacing doubles, so a long run keeps its shape.
//
// Thread safety: every method may be called from any thread at any time.
#ifndef ACTORFLOW_TRAINING_SUMMARY_STATUS_BOARD_H_
#define ACTORFLOW_TRAINING_SUMMARY_STATUS_BOARD_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace actorflow {

class StatusBoard {
 public:
  static constexpr size_t kMaxLossPoints = 512;

  explicit StatusBoard(std::string title);

  // A task of the cluster ("ps:0"), its address and devices; health starts "up".
  void AddTask(const std::string& name, const std::string& address,
               const std::vector<std::string>& devices);
  void SetHealth(const std::string& task, const std::string& health);
  void SetState(const std::string& state, const std::string& error = "");

  // A worker's step ended (called from the training threads): `worker` joins the
  // membership, its step, loss and counters are updated, the loss curve grows.
  void Step(int worker, int64_t step, int64_t planned_steps, double loss, int64_t global_step,
            bool applied);
  // The worker stopped training (finished, or lost when `lost`).
  void WorkerDone(int worker, bool lost);

  // The JSON snapshot above, as text.
  std::string ToJson() const;

 private:
  struct Worker {
    int64_t step = 0;
    int64_t planned_steps = 0;
    double loss = 0.0;
    int64_t applied = 0;
    int64_t dropped_stale = 0;
    std::vector<std::pair<int64_t, double>> points;
    int64_t point_every = 1;  // a point per this many steps
    std::chrono::steady_clock::time_point first;
    int64_t first_step = 0;
    bool member = false;
  };
  struct Task {
    std::string name, address, health = "up";
    std::vector<std::string> devices;
  };

  const std::string title_;
  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mu_;
  std::string state_ = "starting";
  std::string error_;
  int64_t global_step_ = 0;
  std::vector<Task> tasks_;
  std::map<int, Worker> workers_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SUMMARY_STATUS_BOARD_H_
