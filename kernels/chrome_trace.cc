#include "kernels/chrome_trace.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

namespace actorflow {
namespace {

constexpr char kSendPrefix[] = "_send/";
constexpr char kRecvPrefix[] = "_recv/";

// Rows of the trace: a pid per task, a tid per device track within it.
class Rows {
 public:
  explicit Rows(nlohmann::json* events) : events_(events) {}

  // (pid, tid) of `device`'s node track, or of its Send/Recv track.
  std::pair<int, int> Of(const std::string& device, bool transfers) {
    const size_t split = device.find("/device:");
    const std::string task = split == std::string::npos ? device : device.substr(0, split);
    const std::string local =
        split == std::string::npos ? device : device.substr(split + std::string("/device:").size());
    auto [task_it, new_task] = pids_.emplace(task, static_cast<int>(pids_.size()));
    if (new_task) {
      events_->push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", task_it->second},
                          {"args", {{"name", task}}}});
      events_->push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", task_it->second},
                          {"args", {{"sort_index", task_it->second}}}});
    }
    const std::string track = transfers ? local + " send/recv" : local;
    auto [tid_it, new_track] =
        tids_.emplace(std::make_pair(task, track), static_cast<int>(tids_.size()));
    if (new_track) {
      events_->push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", task_it->second},
                          {"tid", tid_it->second}, {"args", {{"name", track}}}});
    }
    return {task_it->second, tid_it->second};
  }

 private:
  nlohmann::json* events_;
  std::map<std::string, int> pids_;
  std::map<std::pair<std::string, std::string>, int> tids_;
};

nlohmann::json Slice(const NodeExecStats& s, std::pair<int, int> row, const char* category) {
  return {{"name", s.node_name},
          {"cat", category},
          {"ph", "X"},
          {"ts", s.start_micros},
          {"dur", std::max<int64_t>(0, s.end_micros - s.start_micros)},
          {"pid", row.first},
          {"tid", row.second},
          {"args", {{"op", s.op}, {"device", s.device}}}};
}

}  // namespace

std::string ChromeTraceJson(const RunMetadata& metadata) {
  nlohmann::json events = nlohmann::json::array();
  Rows rows(&events);
  for (const NodeExecStats& s : metadata.step_stats) {
    events.push_back(Slice(s, rows.Of(s.device, false), s.op.c_str()));
  }
  std::map<std::string, const NodeExecStats*> recvs;  // by the part after "_recv/"
  for (const NodeExecStats& s : metadata.transfer_stats) {
    events.push_back(Slice(s, rows.Of(s.device, true), "send/recv"));
    if (s.node_name.rfind(kRecvPrefix, 0) == 0) recvs[s.node_name.substr(6)] = &s;
  }
  int flow_id = 0;
  for (const NodeExecStats& send : metadata.transfer_stats) {
    if (send.node_name.rfind(kSendPrefix, 0) != 0) continue;
    const std::string tensor = send.node_name.substr(6);
    auto recv = recvs.find(tensor);
    if (recv == recvs.end()) continue;
    const NodeExecStats& r = *recv->second;
    const auto from = rows.Of(send.device, true), to = rows.Of(r.device, true);
    ++flow_id;
    events.push_back({{"name", tensor}, {"cat", "transfer"}, {"ph", "s"}, {"id", flow_id},
                      {"ts", send.start_micros}, {"pid", from.first}, {"tid", from.second}});
    events.push_back({{"name", tensor}, {"cat", "transfer"}, {"ph", "f"}, {"bp", "e"},
                      {"id", flow_id}, {"ts", std::max(r.end_micros, send.start_micros)},
                      {"pid", to.first}, {"tid", to.second}});
  }
  nlohmann::json offsets = nlohmann::json::array();
  int64_t bound = 0;
  for (const DeviceClockOffset& o : metadata.clock_offsets) {
    offsets.push_back({{"device", o.device}, {"offset_micros", o.offset_micros},
                       {"uncertainty_micros", o.uncertainty_micros}});
    bound = std::max(bound, o.uncertainty_micros);
  }
  nlohmann::json other = {
      {"clock_offsets", offsets},
      {"clock_skew_bound_micros", bound},
      {"clock_note",
       "times are microseconds since the step started, on the master's clock; a device "
       "whose clock reading at its reply fell outside the request's round trip was "
       "shifted by the estimated offset; any device's events may be off by up to its "
       "uncertainty (half the round trip of its run request)"}};
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"},
                          {"otherData", other}};
  return trace.dump();
}

Status WriteChromeTrace(const RunMetadata& metadata, const std::string& path) {
  std::ofstream out(path);
  if (!out) return Unavailable("cannot write the trace file '" + path + "'");
  out << ChromeTraceJson(metadata) << "\n";
  out.close();
  if (!out) return Unavailable("failed writing the trace file '" + path + "'");
  return Status::OK();
}

}  // namespace actorflow
