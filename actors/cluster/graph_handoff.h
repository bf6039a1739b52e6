// Graphs handed by reference to a task served by this process. A session whose
// target is such a task (LocalCluster's tasks: `actorflow tune`, `train --cluster
// local:...`) leaves an immutable copy of its graph here and sends only a ticket in
// its OpenSessionRequest; the task's front takes the graph by that ticket. Writing
// the graph as JSON and parsing it back was a fifth of a short session's setup.
// Across processes nothing changes: a client leaves a graph only for an endpoint
// that a server of this process has registered, and sends the JSON otherwise.
//
// Tickets are random 64-bit numbers (never 0), each taken at most once, so a
// ticket sent by another process names nothing here. Thread-safe. CAF-free.
#ifndef ACTORFLOW_ACTORS_CLUSTER_GRAPH_HANDOFF_H_
#define ACTORFLOW_ACTORS_CLUSTER_GRAPH_HANDOFF_H_

#include <cstdint>
#include <memory>
#include <string>

#include "graph/graph.h"

namespace actorflow {
namespace graph_handoff {

// A task of this process listens at `endpoint` ("host:port", as its clients name
// it) / no longer does.
void AddTask(const std::string& endpoint);
void RemoveTask(const std::string& endpoint);
// Whether a task of this process listens at `endpoint`.
bool ServesTask(const std::string& endpoint);

// Leaves `graph` for the task at `endpoint`: the ticket to send, or 0 when this
// process serves no task there (send the graph's JSON instead).
uint64_t Leave(const std::string& endpoint, std::shared_ptr<const Graph> graph);
// The graph left under `ticket`, removed from here; null when there is none (taken
// already, taken back, or never left in this process).
std::shared_ptr<const Graph> Take(uint64_t ticket);
// How many graphs are left and not taken (a client takes back the one whose request
// got no answer, so this returns to 0 when no request is in flight).
size_t LeftCount();
// How many graphs tasks of this process took since it started.
uint64_t TakenCount();

}  // namespace graph_handoff
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_CLUSTER_GRAPH_HANDOFF_H_
