// A live status page over HTTP (cpp-httplib): "/" is the page (tools/cli/status_page.h)
// and "/status.json" the board's snapshot (training/summary/status_board.h). It serves from
// its own thread until destroyed; the board must outlive it.
//
// Thread safety: Start and the destructor from one thread; the board is read from
// the server's threads (StatusBoard is thread-safe).
#ifndef ACTORFLOW_TOOLS_CLI_STATUS_SERVER_H_
#define ACTORFLOW_TOOLS_CLI_STATUS_SERVER_H_

#include <memory>
#include <string>

#include "graph/status.h"
#include "training/summary/status_board.h"

namespace actorflow {
namespace cli {

class StatusServer {
 public:
  // Listens on host:port (port 0: any free port). Unavailable naming the address
  // when it cannot listen there (a port in use).
  static StatusOr<std::unique_ptr<StatusServer>> Start(const StatusBoard* board,
                                                       const std::string& host, int port);
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  int port() const;
  // "http://host:port/".
  std::string url() const;

 private:
  struct Impl;
  explicit StatusServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_CLI_STATUS_SERVER_H_
