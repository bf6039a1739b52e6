#include "graph/output_fetches.h"

#include <utility>

namespace actorflow {

Status EmptyOutputError(const char* what, size_t i) {
  return InvalidArgument(std::string(what) + " #" + std::to_string(i) +
                         " is an empty Output (the op function that returned it failed; "
                         "Scope::status() says why)");
}

StatusOr<OutputFetches> SplitOutputFetches(const std::vector<Output>& fetches) {
  OutputFetches split;
  split.num_fetches = fetches.size();
  split.fetch_names.reserve(fetches.size());
  split.slots.reserve(fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i) {
    const Output& fetch = fetches[i];
    if (!fetch.valid()) return EmptyOutputError("fetch", i);
    if (fetch.node->num_outputs() == 0) {
      split.target_names.push_back(fetch.node->name());
    } else {
      split.fetch_names.push_back(fetch.name());
      split.slots.push_back(i);
    }
  }
  return split;
}

void OutputFetches::PlaceValues(std::vector<Tensor> values, std::vector<Tensor>* outputs) const {
  if (outputs == nullptr) return;
  outputs->assign(num_fetches, Tensor());
  for (size_t k = 0; k < slots.size() && k < values.size(); ++k) {
    (*outputs)[slots[k]] = std::move(values[k]);
  }
}

}  // namespace actorflow
