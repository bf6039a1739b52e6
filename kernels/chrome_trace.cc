#include "kernels/chrome_trace.h"

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

namespace actorflow {

std::string ChromeTraceJson(const RunMetadata& metadata) {
  nlohmann::json events = nlohmann::json::array();
  std::map<std::string, int> device_pid;
  std::map<uint64_t, int> thread_tid;
  for (const NodeExecStats& s : metadata.step_stats) {
    if (!device_pid.count(s.device)) {
      int pid = static_cast<int>(device_pid.size());
      device_pid[s.device] = pid;
      events.push_back({{"name", "process_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"args", {{"name", s.device}}}});
    }
    if (!thread_tid.count(s.thread_id)) {
      thread_tid[s.thread_id] = static_cast<int>(thread_tid.size());
    }
    events.push_back({{"name", s.node_name},
                      {"cat", s.op},
                      {"ph", "X"},
                      {"ts", s.start_micros},
                      {"dur", std::max<int64_t>(0, s.end_micros - s.start_micros)},
                      {"pid", device_pid[s.device]},
                      {"tid", thread_tid[s.thread_id]},
                      {"args", {{"op", s.op}, {"device", s.device}}}});
  }
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
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
