// Writes a traced step (RunMetadata with RunOptions::kFullTrace) in the Chrome trace
// event format, for chrome://tracing or Perfetto, as one timeline for the whole
// cluster:
//   - one process row per task ("/job:ps/replica:0/task:0"; a device without a task
//     part is its own row), one thread row per device in it ("CPU:0"), and beside it
//     a row for the device's Send/Recv nodes ("CPU:0 send/recv");
//   - one complete ("X") event per node, on the master's clock (a device whose clock
//     was off by more than the estimate's uncertainty was shifted by the master;
//     RunMetadata.clock_offsets), microseconds since the step started;
//   - one flow arrow (a "s"/"f" pair) per tensor that crossed devices, from its Send
//     to its Recv;
//   - "otherData": {"clock_offsets": [{"device", "offset_micros",
//     "uncertainty_micros"}], "clock_skew_bound_micros": the largest uncertainty
//     (how far two devices' events may be off from each other), "clock_note"}.
#ifndef ACTORFLOW_KERNELS_CHROME_TRACE_H_
#define ACTORFLOW_KERNELS_CHROME_TRACE_H_

#include <string>

#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

std::string ChromeTraceJson(const RunMetadata& metadata);
// Writes ChromeTraceJson to `path`; Unavailable naming the path if it cannot.
Status WriteChromeTrace(const RunMetadata& metadata, const std::string& path);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CHROME_TRACE_H_
