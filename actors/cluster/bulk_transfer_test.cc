// Large tensors between the tasks of a cluster take the bulk channel beside CAF's
// transport (actors/transport/bulk_channel.h); small ones stay on CAF. The tasks are real
// servers over loopback (LocalCluster), each with its own actor system and channel.

#include <gtest/gtest.h>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {

std::unique_ptr<Session> Open(const Graph* graph, const std::string& target) {
  SessionOptions options;
  options.target = target;
  auto session = NewSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

// n float32 ones made on worker 0, summed on worker 1 (the tensor crosses once).
void BuildCrossing(const Scope& root, int64_t n) {
  Scope w0 = root.WithDevice("/job:worker/task:0");
  Scope w1 = root.WithDevice("/job:worker/task:1");
  Output ones = Fill(w0.WithOpName("ones"), Shape{n}, 1.0f);
  Output doubled = Add(w0.WithOpName("doubled"), ones, ones);
  Sum(w1.WithOpName("total"), doubled);
}

TEST(BulkTransferTest, LargeTensorsCrossOnTheBulkChannelSmallOnesOnCaf) {
  auto cluster = LocalCluster::Start({{"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const Server* sender = (*cluster)->server("worker", 0);
  const Server* receiver = (*cluster)->server("worker", 1);
  ASSERT_NE(sender, nullptr);
  ASSERT_NE(receiver, nullptr);

  for (int64_t n : {int64_t{1} << 18, int64_t{1} << 22}) {  // 1 MiB and 16 MiB
    Scope root = Scope::NewRootScope();
    BuildCrossing(root, n);
    ASSERT_TRUE(root.ok()) << root.status();
    auto session = Open(root.graph(), *(*cluster)->Target("worker", 0));
    ASSERT_NE(session, nullptr);
    const int64_t before = receiver->bulk_received().frames;
    for (int step = 0; step < 3; ++step) {
      std::vector<Tensor> out;
      ASSERT_TRUE(session->Run({}, {"total"}, {}, &out).ok());
      EXPECT_EQ(out[0].data<float>()[0], 2.0f * static_cast<float>(n)) << n;
    }
    // Each step's tensor went whole through the channel (the receiving device
    // answers only once its Recv has it, so the count is final when Run returns).
    EXPECT_EQ(receiver->bulk_received().frames - before, 3) << n;
    EXPECT_EQ(sender->bulk_sent().fallbacks, 0);
  }

  // 4 KiB, under ServerOptions::bulk_min_bytes: CAF's path.
  Scope root = Scope::NewRootScope();
  BuildCrossing(root, 1024);
  auto session = Open(root.graph(), *(*cluster)->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  const int64_t before = receiver->bulk_received().frames;
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"total"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 2048.0f);
  EXPECT_EQ(receiver->bulk_received().frames, before);
}

}  // namespace
}  // namespace actorflow
