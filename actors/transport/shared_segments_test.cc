// Same-host tensors through shared memory (actors/transport/shared_segments.h), over
// real sockets: the receiver's tensor lies on the segment, a segment is written again
// only after its tensor let go, a held segment is never overwritten, a tensor outlives
// its connection, and forged segment frames are refused. Every wait is bounded.
#include "actors/transport/shared_segments.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/transport/bulk_channel.h"
#include "actors/transport/bulk_socket.h"
#include "actors/transport/bulk_test_util.h"
#include "actors/transport/socket_acceptor.h"

namespace actorflow {
namespace {

constexpr auto kWait = std::chrono::seconds(10);
constexpr char kDevice[] = "/job:w/task:1/device:CPU:0";

using bulk_testing::FrameSink;
using bulk_testing::Listen;

BulkFrame Frame(int64_t step, Tensor t) {
  BulkFrame f;
  f.device = kDevice;
  f.step_id = step;
  f.key = "k" + std::to_string(step);
  f.tensor = std::move(t);
  return f;
}

// n float32 values that differ from those of any other `seed`.
Tensor Values(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(seed * 7919 + i % 4099);
  return Tensor::FromVector(v, Shape{n});
}

BulkChannelStats StatsWhen(const std::function<BulkChannelStats()>& stats,
                           const std::function<bool(const BulkChannelStats&)>& done) {
  auto until = std::chrono::steady_clock::now() + kWait;
  while (!done(stats()) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  return stats();
}

const auto kNoFallback = [](BulkFrame) { ADD_FAILURE() << "unexpected fallback"; };

TEST(SharedSegmentsTest, ATensorLiesOnItsSegmentWhichIsWrittenAgainOnlyAfterItsRelease) {
  FrameSink sink;
  auto receiver = Listen(&sink);
  ASSERT_NE(receiver, nullptr);
  BulkSender sender;
  const Tensor first = Values(int64_t{1} << 18, 1);  // 1 MiB
  sender.Send(receiver->endpoint(), Frame(1, first), kNoFallback);
  auto got = sink.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(TensorsEqual(got[0].tensor, first));
  EXPECT_NE(got[0].tensor.raw_data(), first.raw_data());
  EXPECT_EQ(receiver->stats().shared_frames, 1);

  // While the receiver holds the first tensor, a second one takes a segment of its own.
  const Tensor second = Values(int64_t{1} << 18, 2);
  sender.Send(receiver->endpoint(), Frame(2, second), kNoFallback);
  got = sink.WaitFor(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(TensorsEqual(got[0].tensor, first)) << "a held segment was written again";
  EXPECT_TRUE(TensorsEqual(got[1].tensor, second));
  EXPECT_NE(got[0].tensor.raw_data(), got[1].tensor.raw_data());
  EXPECT_EQ(sender.stats().shared_segments, 2);

  // Released, both are reused: no third segment.
  got.clear();
  sink.Clear();
  for (int step = 3; step <= 6; ++step) {
    const Tensor t = Values(int64_t{1} << 18, step);
    sender.Send(receiver->endpoint(), Frame(step, t), kNoFallback);
    auto now = sink.WaitFor(1);
    ASSERT_EQ(now.size(), 1u);
    EXPECT_TRUE(TensorsEqual(now[0].tensor, t)) << "step " << step;
    now.clear();
    sink.Clear();
  }
  auto sent = StatsWhen([&] { return sender.stats(); },
                        [](const BulkChannelStats& s) { return s.frames >= 6; });
  EXPECT_EQ(sent.shared_frames, 6);
  EXPECT_EQ(sent.shared_segments, 2);
  EXPECT_EQ(sent.fallbacks, 0);
  EXPECT_EQ(receiver->stats().shared_frames, 6);
}

TEST(SharedSegmentsTest, AFullPoolOfHeldSegmentsWritesInlineAndOverwritesNothing) {
  FrameSink sink;
  auto receiver = Listen(&sink);
  ASSERT_NE(receiver, nullptr);
  BulkSenderOptions options;
  options.shared_pool_bytes = int64_t{3} << 20;  // three 1 MiB segments
  BulkSender sender(options);
  std::vector<Tensor> sent;
  for (int step = 0; step < 7; ++step) {
    sent.push_back(Values(int64_t{1} << 18, step));
    sender.Send(receiver->endpoint(), Frame(step, sent.back()), kNoFallback);
  }
  auto got = sink.WaitFor(7);
  ASSERT_EQ(got.size(), 7u);
  for (int step = 0; step < 7; ++step) {
    EXPECT_EQ(got[step].step_id, step);
    EXPECT_TRUE(TensorsEqual(got[step].tensor, sent[step])) << "step " << step;
  }
  EXPECT_EQ(receiver->stats().shared_frames, 3);
  EXPECT_EQ(sender.stats().shared_frames, 3);
  EXPECT_EQ(sender.stats().shared_segments, 3);
  EXPECT_EQ(sender.stats().frames, 7);
}

TEST(SharedSegmentsTest, BoolTensorsAndSmallTensorsGoInline) {
  FrameSink sink;
  auto receiver = Listen(&sink);
  ASSERT_NE(receiver, nullptr);
  BulkSender sender;
  std::vector<bool> flags(200000);
  for (size_t i = 0; i < flags.size(); ++i) flags[i] = i % 3 == 0;
  const Tensor bools = Tensor::FromVector<bool>(flags);
  const Tensor small = Values(1000, 3);  // 4 KB, under shared_min_bytes
  sender.Send(receiver->endpoint(), Frame(1, bools), kNoFallback);
  sender.Send(receiver->endpoint(), Frame(2, small), kNoFallback);
  auto got = sink.WaitFor(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(TensorsEqual(got[0].tensor, bools));
  EXPECT_TRUE(TensorsEqual(got[1].tensor, small));
  EXPECT_EQ(receiver->stats().shared_frames, 0);
  EXPECT_EQ(receiver->stats().frames, 2);
}

TEST(SharedSegmentsTest, ATensorOutlivesItsConnectionSenderAndReceiver) {
  FrameSink sink;
  auto receiver = Listen(&sink);
  ASSERT_NE(receiver, nullptr);
  auto sender = std::make_unique<BulkSender>();
  const Tensor t = Values(int64_t{1} << 20, 5);  // 4 MiB: the parallel copy
  sender->Send(receiver->endpoint(), Frame(1, t), kNoFallback);
  auto got = sink.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(receiver->stats().shared_frames, 1);
  Tensor kept = got[0].tensor;
  got.clear();
  sink.Clear();
  sender.reset();
  receiver.reset();
  EXPECT_TRUE(TensorsEqual(kept, t));
  kept = Tensor();  // its release goes nowhere
}

TEST(SharedSegmentsTest, CopyInParallelCopiesEveryByte) {
  for (size_t n : {size_t{0}, size_t{5}, (size_t{4} << 20) - 1, (size_t{4} << 20) + 3,
                   (size_t{9} << 20) + 1}) {
    std::vector<unsigned char> src(n), dst(n, 0xEE);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 131 + (i >> 13));
    bulk_internal::CopyInParallel(dst.data(), src.data(), n);
    EXPECT_TRUE(src == dst) << n << " bytes";
  }
}

// Forged frames on the receiver's host-local socket and over TCP.
class ForgedSegmentFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    receiver_ = Listen(&sink_);
    ASSERT_NE(receiver_, nullptr);
  }
  int ConnectLocal() {
    sockaddr_un address;
    socklen_t length = 0;
    EXPECT_TRUE(LocalSocketAddress(bulk_internal::kBulkLocalName, receiver_->endpoint(),
                                   &address, &length));
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), length), 0);
    return fd;
  }
  int ConnectTcp() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(receiver_->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    return fd;
  }
  // A memory file of `bytes`, sealed as a sender seals its segments or not.
  static int MemoryFile(size_t bytes, bool sealed) {
    int fd = memfd_create("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    if (sealed) {
      EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
    }
    return fd;
  }
  // Writes the head of a segment frame for a float32 [n] tensor, with `pass_fd`.
  static void WriteHead(int fd, int64_t n, uint32_t id, uint32_t flags, int pass_fd) {
    std::string head = bulk_internal::EncodeHead(Frame(1, Tensor(DType::kFloat32, Shape{n})),
                                                 id, flags);
    ASSERT_TRUE(bulk_internal::WriteFull(fd, {{head.data(), head.size()}},
                                         std::chrono::steady_clock::now() + kWait, -1, pass_fd));
  }
  // The receiver refused one more frame and closed that connection.
  void ExpectRefusedAndClosed(int fd) {
    ++refused_;
    auto stats = StatsWhen([&] { return receiver_->stats(); },
                           [&](const BulkChannelStats& s) { return s.refused >= refused_; });
    EXPECT_EQ(stats.refused, refused_);
    EXPECT_TRUE(ClosedByPeer(fd)) << "the receiver should close a refused connection";
    close(fd);
  }
  static bool ClosedByPeer(int fd) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kWait).count())) != 1) return false;
    char byte;
    return read(fd, &byte, 1) == 0;
  }

  FrameSink sink_;
  std::unique_ptr<BulkReceiver> receiver_;
  int64_t refused_ = 0;
};

TEST_F(ForgedSegmentFrames, AreRefusedAndOnlyTheirConnectionCloses) {
  const int64_t n = 1 << 16;  // 256 KiB of float32
  // The descriptor announced but not passed.
  int fd = ConnectLocal();
  WriteHead(fd, n, 0, bulk_internal::kSegmentFdAttached, -1);
  ExpectRefusedAndClosed(fd);
  // A file that could shrink under the receiver's map.
  fd = ConnectLocal();
  int file = MemoryFile(size_t{1} << 20, /*sealed=*/false);
  WriteHead(fd, n, 0, bulk_internal::kSegmentFdAttached, file);
  close(file);
  ExpectRefusedAndClosed(fd);
  // A segment smaller than the tensor.
  fd = ConnectLocal();
  file = MemoryFile(4096, /*sealed=*/true);
  WriteHead(fd, n, 0, bulk_internal::kSegmentFdAttached, file);
  close(file);
  ExpectRefusedAndClosed(fd);
  // An id never mapped on this connection.
  fd = ConnectLocal();
  WriteHead(fd, n, 3, 0, -1);
  ExpectRefusedAndClosed(fd);
  // An id out of range.
  fd = ConnectLocal();
  file = MemoryFile(size_t{1} << 20, /*sealed=*/true);
  WriteHead(fd, n, bulk_internal::kMaxSegments, bulk_internal::kSegmentFdAttached, file);
  close(file);
  ExpectRefusedAndClosed(fd);
  // A segment frame over TCP, where no descriptor can come.
  fd = ConnectTcp();
  WriteHead(fd, n, 0, 0, -1);
  ExpectRefusedAndClosed(fd);

  // A well-formed one on a fresh connection is taken, reading the file's bytes.
  fd = ConnectLocal();
  file = MemoryFile(size_t{1} << 20, /*sealed=*/true);
  const Tensor values = Values(n, 9);
  ASSERT_EQ(pwrite(file, values.raw_data(), values.TotalBytes(), 0),
            static_cast<ssize_t>(values.TotalBytes()));
  WriteHead(fd, n, 0, bulk_internal::kSegmentFdAttached, file);
  close(file);
  auto got = sink_.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(TensorsEqual(got[0].tensor, values));
  // Letting go of it writes its release back on the connection.
  got.clear();
  sink_.Clear();
  char release[bulk_internal::kReleaseBytes];
  const auto until = std::chrono::steady_clock::now() + kWait;
  ASSERT_TRUE(bulk_internal::ReadFull(fd, release, sizeof(release), &until));
  uint32_t magic, id;
  std::memcpy(&magic, release, 4);
  std::memcpy(&id, release + 4, 4);
  EXPECT_EQ(magic, bulk_internal::kReleaseMagic);
  EXPECT_EQ(id, 0u);
  close(fd);
  EXPECT_EQ(receiver_->stats().refused, refused_);
}

}  // namespace
}  // namespace actorflow
