// Writes a traced step (RunMetadata.step_stats) in the Chrome trace event format,
// for chrome://tracing or Perfetto: one process track per device, one complete
// ("X") event per node.
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
