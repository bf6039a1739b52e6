// The bulk tensor channel over real sockets on 127.0.0.1: frames arrive whole and in
// order, a sender that cannot reach its receiver hands every frame to its fallback,
// and malformed frames close only their own connection. Every wait is bounded.
#include "actors/transport/bulk_channel.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/transport/bulk_test_util.h"

namespace actorflow {
namespace {

constexpr auto kWait = std::chrono::seconds(10);

using bulk_testing::FrameSink;
using bulk_testing::Listen;

BulkFrame Frame(std::string device, int64_t step, std::string key, Tensor t) {
  BulkFrame f;
  f.device = std::move(device);
  f.step_id = step;
  f.key = std::move(key);
  f.tensor = std::move(t);
  return f;
}

Tensor Ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 1000) * 0.5f;
  return Tensor::FromVector(v, Shape{n / 4, 4});
}

// A blocking TCP connection to the receiver, for writing hand-made bytes.
int RawConnect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// The receiver's stats once `done` holds for them, or after kWait. (A connection's
// thread counts a frame just after handing it on.)
template <class Pred>
BulkChannelStats StatsOnce(const BulkReceiver& r, Pred done) {
  auto until = std::chrono::steady_clock::now() + kWait;
  while (!done(r.stats()) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  return r.stats();
}

bool RefusedWithin(const BulkReceiver& r, int64_t refused) {
  return StatsOnce(r, [&](const BulkChannelStats& s) { return s.refused >= refused; }).refused >=
         refused;
}

// Same host: through the receiver's host-local socket, or TCP when told so.
void ExpectFramesWholeAndInOrder(bool host_local) {
  FrameSink sink;
  auto receiver = Listen(&sink);
  ASSERT_NE(receiver, nullptr);
  BulkSenderOptions options;
  options.host_local = host_local;
  BulkSender sender(options);
  FrameSink fallbacks;
  auto fallback = [&](BulkFrame f) { fallbacks.Take(std::move(f)); };
  const Tensor big = Ramp(int64_t{1} << 20);  // 4 MiB of float32
  sender.Send(receiver->endpoint(), Frame("/job:w/task:1/device:CPU:0", 7, "a;b;c", big), fallback);
  sender.Send(receiver->endpoint(),
              Frame("/job:w/task:1/device:CPU:0", 8, "k2", Tensor::FromVector<bool>({true, false})),
              fallback);
  sender.Send(receiver->endpoint(),
              Frame("/job:w/task:1/device:CPU:0", 9, "empty", Tensor(DType::kInt64, Shape{0, 3})),
              fallback);
  auto got = sink.WaitFor(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].device, "/job:w/task:1/device:CPU:0");
  EXPECT_EQ(got[0].step_id, 7);
  EXPECT_EQ(got[0].key, "a;b;c");
  EXPECT_TRUE(TensorsEqual(got[0].tensor, big));
  EXPECT_NE(got[0].tensor.raw_data(), big.raw_data());  // a copy that crossed the socket
  EXPECT_EQ(got[1].step_id, 8);
  EXPECT_TRUE(TensorsEqual(got[1].tensor, Tensor::FromVector<bool>({true, false})));
  EXPECT_EQ(got[2].key, "empty");
  EXPECT_EQ(got[2].tensor.shape(), (Shape{0, 3}));
  EXPECT_EQ(got[2].tensor.dtype(), DType::kInt64);
  auto stats = StatsOnce(*receiver, [](const BulkChannelStats& s) { return s.frames >= 3; });
  EXPECT_EQ(stats.frames, 3);
  EXPECT_EQ(stats.bytes, static_cast<int64_t>(big.TotalBytes() + 2));
  EXPECT_EQ(stats.local_connections, host_local ? 1 : 0);
  sender.Shutdown();
  EXPECT_EQ(sender.stats().frames, 3);
  EXPECT_EQ(sender.stats().fallbacks, 0);
}

TEST(BulkChannelTest, FramesArriveWholeAndInOrderOnTheHostLocalSocket) {
  ASSERT_NO_FATAL_FAILURE(ExpectFramesWholeAndInOrder(/*host_local=*/true));
}

TEST(BulkChannelTest, FramesArriveWholeAndInOrderOverTcp) {
  ASSERT_NO_FATAL_FAILURE(ExpectFramesWholeAndInOrder(/*host_local=*/false));
}

TEST(BulkChannelTest, ABracketedIpv6HostAsClusterSpecsWriteItListensAndConnects) {
  FrameSink sink;
  auto receiver = BulkReceiver::Listen("[::1]", BulkReceiverOptions(),
                                       [&](BulkFrame f) { return sink.Take(std::move(f)); });
  if (!receiver.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << receiver.status();
  EXPECT_EQ((*receiver)->endpoint(), "[::1]:" + std::to_string((*receiver)->port()));
  BulkSender sender;
  sender.Send((*receiver)->endpoint(), Frame("/d", 5, "k", Ramp(256)),
              [](BulkFrame) { ADD_FAILURE() << "unexpected fallback"; });
  auto got = sink.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].step_id, 5);
  EXPECT_TRUE(TensorsEqual(got[0].tensor, Ramp(256)));
}

TEST(BulkChannelTest, UnreachableReceiverHandsEveryFrameToTheFallback) {
  uint16_t closed_port = 0;
  {
    FrameSink unused;
    auto receiver = Listen(&unused);
    ASSERT_NE(receiver, nullptr);
    closed_port = receiver->port();
  }  // nothing listens there any more
  BulkSenderOptions options;
  options.connect_timeout_ms = 2000;
  BulkSender sender(options);
  FrameSink fallbacks;
  const Tensor t = Ramp(1024);
  for (int i = 0; i < 3; ++i) {
    sender.Send("127.0.0.1:" + std::to_string(closed_port), Frame("/d", i, "k", t),
                [&](BulkFrame f) { fallbacks.Take(std::move(f)); });
  }
  auto got = fallbacks.WaitFor(3);
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[static_cast<size_t>(i)].step_id, i);
    EXPECT_TRUE(TensorsEqual(got[static_cast<size_t>(i)].tensor, t));
  }
  sender.Shutdown();
  EXPECT_EQ(sender.stats().fallbacks, 3);
  EXPECT_EQ(sender.stats().frames, 0);
}

TEST(BulkChannelTest, AnIdleWriterEndsAndTheNextFrameStartsANewOne) {
  FrameSink sink;
  auto receiver = Listen(&sink);
  ASSERT_NE(receiver, nullptr);
  BulkSenderOptions options;
  options.idle_close_ms = 20;
  BulkSender sender(options);
  auto no_fallback = [](BulkFrame) { ADD_FAILURE() << "unexpected fallback"; };
  sender.Send(receiver->endpoint(), Frame("/d", 1, "k", Ramp(64)), no_fallback);
  ASSERT_EQ(sink.WaitFor(1).size(), 1u);
  auto until = std::chrono::steady_clock::now() + kWait;
  while (sender.writers() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  EXPECT_EQ(sender.writers(), 0) << "the idle writer did not end";
  sender.Send(receiver->endpoint(), Frame("/d", 2, "k", Ramp(64)), no_fallback);
  auto got = sink.WaitFor(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].step_id, 2);
  sender.Shutdown();
  EXPECT_EQ(sender.stats().frames, 2);
}

TEST(BulkChannelTest, SendAfterShutdownFallsBackAtOnce) {
  BulkSender sender;
  sender.Shutdown();
  bool fell_back = false;
  sender.Send("127.0.0.1:1", Frame("/d", 1, "k", Ramp(8)),
              [&](BulkFrame f) { fell_back = f.step_id == 1; });
  EXPECT_TRUE(fell_back);
}

// A peer that accepts the connection and never reads: the writer blocks with the
// socket buffers full. Shutdown cuts the write off (the write timeout here is an
// hour, so returning at all shows it was cut) and the frame goes to its fallback.
TEST(BulkChannelTest, ShutdownCutsOffAWriteToAPeerThatStoppedReading) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  BulkSenderOptions options;
  options.write_timeout_ms = 3600 * 1000;
  BulkSender sender(options);
  FrameSink fallbacks;
  const Tensor big = Ramp(int64_t{16} << 20);  // 64 MiB: far more than the socket buffers
  sender.Send("127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), Frame("/d", 9, "k", big),
              [&](BulkFrame f) { fallbacks.Take(std::move(f)); });
  const int peer = accept(listener, nullptr, nullptr);
  ASSERT_GE(peer, 0);
  // Bytes queued at the peer: the write has started (and then blocks on full buffers).
  int queued = 0;
  auto until = std::chrono::steady_clock::now() + kWait;
  while (queued == 0 && std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(ioctl(peer, FIONREAD, &queued), 0);
    if (queued == 0) std::this_thread::yield();
  }
  ASSERT_GT(queued, 0);
  sender.Shutdown();
  auto got = fallbacks.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].step_id, 9);
  EXPECT_EQ(sender.stats().fallbacks, 1);
  EXPECT_EQ(sender.stats().frames, 0);
  close(peer);
  close(listener);
}

TEST(BulkChannelTest, MalformedFramesCloseOnlyTheirConnection) {
  FrameSink sink;
  BulkReceiverOptions options;
  options.max_tensor_bytes = 1 << 20;
  auto receiver = Listen(&sink, options);
  ASSERT_NE(receiver, nullptr);

  // Bad magic.
  int fd = RawConnect(receiver->port());
  const char garbage[] = "GET / HTTP/1.1\r\n\r\n";
  ASSERT_GT(write(fd, garbage, sizeof(garbage)), 0);
  EXPECT_TRUE(RefusedWithin(*receiver, 1));
  char byte;
  EXPECT_EQ(read(fd, &byte, 1), 0) << "the receiver should close a refused connection";
  close(fd);

  // A payload over the limit is refused before anything is allocated.
  fd = RawConnect(receiver->port());
  uint32_t prefix32[2] = {0x4B424641, 0};
  uint64_t payload = uint64_t{1} << 40;
  ASSERT_EQ(write(fd, prefix32, sizeof(prefix32)), static_cast<ssize_t>(sizeof(prefix32)));
  ASSERT_EQ(write(fd, &payload, sizeof(payload)), static_cast<ssize_t>(sizeof(payload)));
  EXPECT_TRUE(RefusedWithin(*receiver, 2));
  close(fd);

  // A header whose shape needs more bytes than the payload announces.
  fd = RawConnect(receiver->port());
  std::string header;
  auto put = [&](const void* p, size_t n) { header.append(static_cast<const char*>(p), n); };
  int64_t step = 1, dim = 1000;
  int32_t dtype = 0;
  uint32_t rank = 1, name = 1;
  put(&step, 8), put(&dtype, 4), put(&rank, 4), put(&dim, 8), put(&name, 4), header += "d";
  put(&name, 4), header += "k";
  uint32_t head[2] = {0x4B424641, static_cast<uint32_t>(header.size())};
  uint64_t small = 8;
  std::string frame(reinterpret_cast<char*>(head), 8);
  frame.append(reinterpret_cast<char*>(&small), 8);
  frame += header + std::string(8, '\0');
  ASSERT_EQ(write(fd, frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  EXPECT_TRUE(RefusedWithin(*receiver, 3));
  close(fd);

  // The receiver still takes good frames, and a frame for an unknown device is
  // dropped without closing its connection.
  BulkSender sender;
  auto no_fallback = [](BulkFrame) { ADD_FAILURE() << "unexpected fallback"; };
  sender.Send(receiver->endpoint(), Frame("/unknown", 1, "k", Ramp(16)), no_fallback);
  sender.Send(receiver->endpoint(), Frame("/d", 2, "k", Ramp(16)), no_fallback);
  auto got = sink.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].step_id, 2);
  auto stats = StatsOnce(*receiver, [](const BulkChannelStats& s) { return s.frames >= 1; });
  EXPECT_EQ(stats.refused, 4);
  EXPECT_EQ(stats.frames, 1);
}

}  // namespace
}  // namespace actorflow
