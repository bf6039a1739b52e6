// Graphviz DOT text of a graph, before placement or as placed and partitioned, so
// that a person can see what a graph computes and where each node runs
// (`actorflow graph`, `dot -Tsvg`).
//
// What is drawn:
//  - one box per node, labelled with its name, its op and, per output, the dtype and
//    the inferred shape ("float32 [?,3]"; "<unknown>" where inference could not
//    tell); variables, placeholders, constants and Send/Recv have their own fill;
//  - a solid edge per data input, labelled with what it carries (":k" for an output
//    other than 0, "ref" for a ref input such as Assign's variable);
//  - a dashed edge per control input.
//  - Placed: one `subgraph cluster_N` per device (N in partition order), labelled
//    with the device's full name, holding that device's partition (the nodes placed
//    there plus the _Send/_Recv and helper nodes the partitioner added); each
//    _Send -> _Recv pair is a bold red edge between the clusters, labelled with the
//    rendezvous tensor name.
//
// The text is deterministic (nodes in graph order, partitions in their order), so it
// can be compared and diffed. Node ids are "n<id>" (unplaced) and "d<N>_n<id>"
// (placed); names and labels are quoted and escaped.
//
// Thread safety: pure functions of their arguments.
#ifndef ACTORFLOW_PLACEMENT_GRAPH_DOT_H_
#define ACTORFLOW_PLACEMENT_GRAPH_DOT_H_

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "placement/partition.h"
#include "placement/placer.h"

namespace actorflow {

// The graph as a DOT digraph, before placement.
std::string GraphToDot(const Graph& graph);

// Places every node of `graph` (as one step that runs the whole graph, nothing fed)
// and partitions it per device, as the master does for a step. Errors: those of
// PlaceNodes and Partition (an unsatisfiable device request names the node and
// suggests soft placement).
StatusOr<std::vector<DevicePartition>> PlaceAndPartitionWholeGraph(const Graph& graph,
                                                                   const PlacerOptions& options);

// The partitions as one DOT digraph: a cluster per device and the Send -> Recv
// edges between them.
std::string PartitionsToDot(const std::vector<DevicePartition>& partitions);

}  // namespace actorflow

#endif  // ACTORFLOW_PLACEMENT_GRAPH_DOT_H_
