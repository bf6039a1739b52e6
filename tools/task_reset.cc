#include "tools/task_reset.h"

#include <chrono>

#include <caf/io/all.hpp>

#include "actors/spinning_scheduler.h"
#include "actors/cluster_transport.h"
#include "actors/connect.h"
#include "actors/messages.h"

namespace actorflow {
namespace cli {

Status ResetTask(const std::string& target, const std::vector<std::string>& containers,
                 int64_t timeout_ms) {
  std::string host;
  uint16_t port = 0;
  AF_RETURN_IF_ERROR(ParseTarget(target, &host, &port));
  caf::actor_system_config cfg;
  ConfigureClusterTransport(cfg);
  ConfigureScheduler(cfg, SchedulerOptions{0, 0});  // a one-off request: never poll
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system system{cfg};
  AF_ASSIGN_OR_RETURN(FrontActor front,
                      ConnectToServer(system, host, port, std::chrono::milliseconds(timeout_ms), target));
  caf::scoped_actor self{system};
  Status status;
  // The task answers with its cluster spec once its containers are clear.
  self->request(front, std::chrono::milliseconds(timeout_ms), reset_atom::value, containers)
      .receive([](std::string&) {},
               [&](caf::error& e) {
                 status = Unavailable(target + ": reset failed: " + system.render(e));
               });
  return status;
}

}  // namespace cli
}  // namespace actorflow
