// Pruning: which nodes a step must run. A step runs exactly the nodes that the
// fetches and targets depend on through data and control edges, stopping at fed
// tensors; a node no fetch or target needs never runs. A ref input (Assign's
// variable) is not a dependency: the assigning kernel reaches the variable itself.
#ifndef ACTORFLOW_GRAPH_PRUNE_H_
#define ACTORFLOW_GRAPH_PRUNE_H_

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace actorflow {

// A step's feeds, fetches and targets resolved against a graph.
struct RunSignature {
  std::vector<Endpoint> feeds;
  std::vector<Endpoint> fetches;
  std::vector<const Node*> targets;
};

// Resolves names ("x", "x:1"; targets are node names). Errors: a feed that names no
// node or output, or is given twice (InvalidArgument); a fetch or target that names
// no node (NotFound); each names the culprit.
StatusOr<RunSignature> ResolveRunSignature(const Graph& graph,
                                           const std::vector<std::string>& feeds,
                                           const std::vector<std::string>& fetches,
                                           const std::vector<std::string>& targets);

// Checks a fed value against the dtype and (possibly partial) shape of the output it
// replaces. InvalidArgument naming the feed otherwise.
Status ValidateFeed(const std::string& name, const Endpoint& fed, const Tensor& value);

// The nodes to run, in graph (topological) order. InvalidArgument naming the
// placeholder when a needed Placeholder is not fed.
StatusOr<std::vector<const Node*>> PruneForRun(const Graph& graph, const RunSignature& sig);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_PRUNE_H_
