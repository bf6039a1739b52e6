// Graphs handed by reference to a task of the same process (graph_handoff.h): only
// for an endpoint a server of this process listens on, each ticket taken once, and a
// session on a LocalCluster task opens and extends that way, leaving nothing behind.
#include "actors/cluster/graph_handoff.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/server.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

std::shared_ptr<const Graph> SmallGraph() {
  Scope root = Scope::NewRootScope();
  Const(root.WithOpName("c"), 1.0f);
  return root.graph()->Clone();
}

TEST(GraphHandoffTest, AGraphIsLeftOnlyForATaskOfThisProcessAndTakenOnce) {
  const std::string endpoint = "127.0.0.1:1";  // no server of this test listens there
  EXPECT_FALSE(graph_handoff::ServesTask(endpoint));
  EXPECT_EQ(graph_handoff::Leave(endpoint, SmallGraph()), 0u);

  graph_handoff::AddTask(endpoint);
  EXPECT_TRUE(graph_handoff::ServesTask(endpoint));
  std::shared_ptr<const Graph> graph = SmallGraph();
  const uint64_t ticket = graph_handoff::Leave(endpoint, graph);
  ASSERT_NE(ticket, 0u);
  EXPECT_NE(graph_handoff::Leave(endpoint, SmallGraph()), ticket);  // another graph, another ticket
  EXPECT_EQ(graph_handoff::Take(ticket), graph);
  EXPECT_EQ(graph_handoff::Take(ticket), nullptr);
  graph_handoff::RemoveTask(endpoint);
  EXPECT_FALSE(graph_handoff::ServesTask(endpoint));
  EXPECT_EQ(graph_handoff::Leave(endpoint, SmallGraph()), 0u);
}

TEST(GraphHandoffTest, ASessionOnALocalTaskOpensAndExtendsByReference) {
  auto cluster = LocalCluster::Start({{"worker", 1}});
  ASSERT_OK(cluster.status());
  const Server* server = (*cluster)->server("worker", 0);
  ASSERT_NE(server, nullptr);
  const std::string endpoint = server->host() + ":" + std::to_string(server->port());
  EXPECT_TRUE(graph_handoff::ServesTask(endpoint));
  const size_t left_before = graph_handoff::LeftCount();

  Scope root = Scope::NewRootScope();
  Output x = Const(root.WithOpName("x"), 20.0f);
  Output y = Add(root.WithOpName("y"), x, 1.0f);
  SessionOptions options;
  options.target = *(*cluster)->Target("worker", 0);
  const uint64_t taken_before = graph_handoff::TakenCount();
  auto session = NewSession(root.graph(), options);
  ASSERT_OK(session.status());
  EXPECT_EQ(graph_handoff::TakenCount(), taken_before + 1) << "the graph went as JSON";
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({}, {y.name()}, {}, &out));
  EXPECT_EQ(out[0].data<float>()[0], 21.0f);

  // The session's graph is the task's own copy: nodes built now reach the task only
  // when the session extends, by reference too.
  Output z = Mul(root.WithOpName("z"), y, 2.0f);
  ASSERT_OK((*session)->Run({}, {z.name()}, {}, &out));
  EXPECT_EQ(out[0].data<float>()[0], 42.0f);
  EXPECT_EQ(graph_handoff::TakenCount(), taken_before + 2);
  EXPECT_EQ(graph_handoff::LeftCount(), left_before);

  ASSERT_OK((*cluster)->StopTask("worker", 0));
  EXPECT_FALSE(graph_handoff::ServesTask(endpoint));
}

}  // namespace
}  // namespace actorflow
