#include "training/summary/status_board.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;

std::string WorkerName(int worker) { return "worker:" + std::to_string(worker); }

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

StatusBoard::StatusBoard(std::string title) : title_(std::move(title)), start_(Clock::now()) {}

void StatusBoard::AddTask(const std::string& name, const std::string& address,
                          const std::vector<std::string>& devices) {
  std::lock_guard<std::mutex> lock(mu_);
  Task task;
  task.name = name;
  task.address = address;
  task.devices = devices;
  tasks_.push_back(std::move(task));
}

void StatusBoard::SetHealth(const std::string& task, const std::string& health) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Task& t : tasks_) {
    if (t.name == task) t.health = health;
  }
}

void StatusBoard::SetState(const std::string& state, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = state;
  error_ = error;
}

void StatusBoard::Step(int worker, int64_t step, int64_t planned_steps, double loss,
                       int64_t global_step, bool applied) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == "starting") state_ = "running";
  Worker& w = workers_[worker];
  if (!w.member) {  // its first step, or back after WorkerDone
    if (w.step == 0) {
      w.first = now;
      w.first_step = step;
    }
    w.member = true;
    const std::string name = WorkerName(worker);
    for (Task& t : tasks_) {
      if (t.name == name) t.health = "up";
    }
  }
  w.step = step;
  w.planned_steps = planned_steps;
  w.loss = loss;
  (applied ? w.applied : w.dropped_stale) += 1;
  global_step_ = std::max(global_step_, global_step);
  if (step % w.point_every == 0) {
    w.points.emplace_back(step, loss);
    if (w.points.size() >= kMaxLossPoints) {
      // Keep every other point: the curve's shape at half the resolution.
      std::vector<std::pair<int64_t, double>> kept;
      for (size_t i = 0; i < w.points.size(); i += 2) kept.push_back(w.points[i]);
      w.points = std::move(kept);
      w.point_every *= 2;
    }
  }
}

void StatusBoard::WorkerDone(int worker, bool lost) {
  std::lock_guard<std::mutex> lock(mu_);
  workers_[worker].member = false;
  const std::string name = WorkerName(worker);
  for (Task& t : tasks_) {
    if (t.name == name) t.health = lost ? "down" : "finished";
  }
}

std::string StatusBoard::ToJson() const {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::ordered_json j;
  j["title"] = title_;
  j["state"] = state_;
  j["error"] = error_;
  j["uptime_seconds"] = Seconds(now - start_);
  j["global_step"] = global_step_;
  nlohmann::ordered_json tasks = nlohmann::ordered_json::array();
  for (const Task& t : tasks_) {
    tasks.push_back({{"name", t.name}, {"address", t.address}, {"health", t.health},
                     {"devices", t.devices}});
  }
  nlohmann::ordered_json membership = nlohmann::ordered_json::array();
  nlohmann::ordered_json workers = nlohmann::ordered_json::array();
  nlohmann::ordered_json loss = nlohmann::ordered_json::array();
  double total_rate = 0.0;
  int64_t applied = 0, dropped = 0;
  for (const auto& [index, w] : workers_) {
    const std::string name = WorkerName(index);
    if (w.member) membership.push_back(name);
    const double elapsed = Seconds(now - w.first);
    const double rate = elapsed > 0 ? static_cast<double>(w.step - w.first_step) / elapsed : 0.0;
    if (w.member) total_rate += rate;
    applied += w.applied;
    dropped += w.dropped_stale;
    workers.push_back({{"name", name}, {"step", w.step}, {"planned_steps", w.planned_steps},
                       {"steps_per_second", rate}, {"loss", w.loss}, {"applied", w.applied},
                       {"dropped_stale", w.dropped_stale}});
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const auto& [step, value] : w.points) points.push_back({step, value});
    loss.push_back({{"worker", name}, {"points", std::move(points)}});
  }
  j["steps_per_second"] = total_rate;
  j["updates_applied"] = applied;
  j["dropped_stale"] = dropped;
  j["tasks"] = std::move(tasks);
  j["membership"] = std::move(membership);
  j["workers"] = std::move(workers);
  j["loss"] = std::move(loss);
  return j.dump();
}

}  // namespace actorflow
