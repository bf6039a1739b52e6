// What a master makes of its devices' records for a step that asked for RunMetadata:
// the metadata itself and the devices' clock offsets (declared in master_state.h).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "actors/runtime/master_state.h"
#include "graph/steady_clock.h"

namespace actorflow {

// The step's RunMetadata from what its devices recorded: the graph's own nodes (not
// the inserted Send/Recv) in start order, and their stats relative to the step start.
RunMetadata BuildMetadata(const Graph& graph, StepInFlight* step) {
  RunMetadata meta;
  // By start time; ties (same microsecond) keep each device's own order.
  std::stable_sort(step->executed.begin(), step->executed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  meta.executed_nodes.reserve(step->executed.size());
  for (auto& [start, name] : step->executed) {
    if (graph.FindNode(name) != nullptr) meta.executed_nodes.push_back(std::move(name));
  }
  meta.step_stats.reserve(step->stats.size());
  for (NodeExecStats& s : step->stats) {
    s.start_micros -= step->start_micros;
    s.end_micros -= step->start_micros;
    const bool inserted = graph.FindNode(s.node_name) == nullptr;  // a Send/Recv
    (inserted ? meta.transfer_stats : meta.step_stats).push_back(std::move(s));
  }
  meta.clock_offsets = std::move(step->clock_offsets);
  // One entry per (src, dst) pair: a device reports by destination, and two
  // partitions on one device would report the same pair twice.
  std::map<std::pair<std::string, std::string>, CrossDeviceTransfer> by_pair;
  for (CrossDeviceTransfer& t : step->transfers) {
    CrossDeviceTransfer& sum = by_pair[{t.src_device, t.dst_device}];
    sum.src_device = std::move(t.src_device);
    sum.dst_device = std::move(t.dst_device);
    sum.tensors += t.tensors;
    sum.bytes += t.bytes;
  }
  meta.transfers.reserve(by_pair.size());
  for (auto& [pair, t] : by_pair) meta.transfers.push_back(std::move(t));
  return meta;
}

// A traced part's device clock offset (DeviceClockOffset), recorded in the step; the
// correction to subtract from the device's times: the offset when it exceeds its
// uncertainty, else 0 (a clock consistent with the master's).
int64_t ClockOffset(StepInFlight& step, size_t part_index, const std::string& device,
                    const RunPartitionResult& result) {
  if (result.device_clock_micros == 0 || part_index >= step.part_sent_micros.size()) return 0;
  const int64_t sent = step.part_sent_micros[part_index];
  const int64_t received = SteadyMicros();
  DeviceClockOffset o;
  o.device = device;
  o.uncertainty_micros = (received - sent + 1) / 2;
  const int64_t estimate = result.device_clock_micros - (sent + received) / 2;
  o.offset_micros = std::abs(estimate) > o.uncertainty_micros ? estimate : 0;
  step.clock_offsets.push_back(o);
  return o.offset_micros;
}

}  // namespace actorflow
