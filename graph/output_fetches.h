// A run by Outputs (ClientSession, MonitoredTrainingSession) as a run by names: the
// fetches of ops without outputs (a train op) run as targets, and the values of the
// others go back to their places. CAF-free.
#ifndef ACTORFLOW_GRAPH_OUTPUT_FETCHES_H_
#define ACTORFLOW_GRAPH_OUTPUT_FETCHES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

struct OutputFetches {
  std::vector<std::string> fetch_names;   // the fetches with outputs, in order
  std::vector<std::string> target_names;  // the fetches without outputs
  std::vector<size_t> slots;              // fetch_names[k] is fetch #slots[k]
  size_t num_fetches = 0;

  // Every fetch has outputs: the values come back in the fetches' order.
  bool all_fetched() const { return slots.size() == num_fetches; }
  // One tensor per fetch in `outputs` (may be null): values[k] at slots[k], an empty
  // Tensor for a target.
  void PlaceValues(std::vector<Tensor> values, std::vector<Tensor>* outputs) const;
};

// InvalidArgument "fetch #i is an empty Output (...)" for a fetch that is not valid.
StatusOr<OutputFetches> SplitOutputFetches(const std::vector<Output>& fetches);

// "<what> #<i> is an empty Output (the op function that returned it failed;
// Scope::status() says why)", e.g. what = "feed".
Status EmptyOutputError(const char* what, size_t i);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_OUTPUT_FETCHES_H_
