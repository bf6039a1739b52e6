// The directory of a cluster whose tasks share one actor system (a simulated
// cluster): it answers the masters' connect requests (ConnectorActor's protocol,
// actors/connect.h) with the front registered for the address, at once and without
// a network. Includes CAF: actors/ and tests only.
//
// Protocol:
//   (connect_atom, host, port, timeout_ms, who) -> (Status, FrontActor)
//       The front registered at host:port; Unavailable naming `who` and the address
//       when none is (the task was never started, or was killed).
//   (directory_put_atom, string address, FrontActor)
//       Registers (or replaces) the front at "host:port"; a null front removes it.
#ifndef ACTORFLOW_ACTORS_SIM_TASK_DIRECTORY_H_
#define ACTORFLOW_ACTORS_SIM_TASK_DIRECTORY_H_

#include <string>

#include "actors/connect.h"

namespace actorflow {

using directory_put_atom = caf::atom_constant<caf::atom("dirput")>;

using TaskDirectoryActor = ConnectorActor::extend<caf::reacts_to<directory_put_atom, std::string, FrontActor>>;

TaskDirectoryActor SpawnTaskDirectory(caf::actor_system& system);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_TASK_DIRECTORY_H_
