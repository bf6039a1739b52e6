// BulkReceiver (actors/transport/bulk_channel.h): a SocketAcceptor whose connection threads
// read whole frames into new tensors.
#include "actors/transport/bulk_channel.h"

#include <unistd.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "actors/transport/bulk_socket.h"
#include "actors/protocol/received_tensor.h"
#include "actors/transport/shared_segments.h"
#include "actors/transport/socket_acceptor.h"

namespace actorflow {
namespace {

using bulk_internal::Clock;
using bulk_internal::IsUnixSocket;
using bulk_internal::kBulkLocalName;
using bulk_internal::kMagic;
using bulk_internal::kMaxHeaderBytes;
using bulk_internal::kMaxRank;
using bulk_internal::kMaxSegments;
using bulk_internal::kPrefixBytes;
using bulk_internal::kSegmentFdAttached;
using bulk_internal::kSegmentMagic;
using bulk_internal::MappedSegments;
using bulk_internal::ReadFull;
using bulk_internal::ReleaseChannel;

// What one connection's frames share: on a host-local connection, the descriptors
// passed so far and the segments mapped from them.
struct Connection {
  explicit Connection(int fd)
      : fd(fd),
        local(IsUnixSocket(fd)),
        releases(local ? std::make_shared<ReleaseChannel>(fd) : nullptr) {}
  // Tensors still on the segments outlive the connection; their releases go nowhere.
  ~Connection() {
    if (releases) releases->Close();
    for (int passed : passed_fds) close(passed);
  }
  std::vector<int>* fds_or_null() { return local ? &passed_fds : nullptr; }

  const int fd;
  const bool local;
  std::vector<int> passed_fds;
  MappedSegments segments;
  std::shared_ptr<ReleaseChannel> releases;
};

// Reads header fields in order; any read past the end marks the header bad.
class HeaderReader {
 public:
  explicit HeaderReader(const std::string& bytes) : bytes_(bytes) {}
  template <class T>
  T Get() {
    T value{};
    if (!ok_ || bytes_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return value;
    }
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    auto n = Get<uint32_t>();
    if (!ok_ || bytes_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool ok_whole() const { return ok_ && pos_ == bytes_.size(); }
  bool ok() const { return ok_; }

 private:
  const std::string& bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

class BulkReceiverImpl : public BulkReceiver {
 public:
  BulkReceiverImpl(BulkReceiverOptions options, Deliver deliver)
      : options_(options), deliver_(std::move(deliver)) {}

  // Joins the connections' threads before the members they use go.
  ~BulkReceiverImpl() override { acceptor_.reset(); }

  Status Listen(const std::string& host) {
    SocketAcceptorOptions ao;
    ao.what = "bulk channel";
    ao.max_connections = options_.max_connections;
    ao.accept_thread_name = "af.bulk.accept";
    ao.connection_thread_name = "af.bulk.recv";
    ao.local_name = kBulkLocalName;
    AF_ASSIGN_OR_RETURN(acceptor_, SocketAcceptor::Listen(host, ao, [this](int fd) {
                          Connection connection(fd);
                          while (ReadOneFrame(&connection).ok()) {
                          }
                        }));
    return Status::OK();
  }

  uint16_t port() const override { return acceptor_->port(); }
  std::string endpoint() const override { return acceptor_->endpoint(); }
  BulkChannelStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    BulkChannelStats stats = stats_;
    stats.refused += acceptor_->turned_away();
    stats.local_connections = acceptor_->local_connections();
    return stats;
  }

 private:
  // Reads and delivers one frame. Not OK ends the connection: the peer closed it
  // (Cancelled) or sent a malformed or late frame (counted as refused).
  Status ReadOneFrame(Connection* c) {
    const int fd = c->fd;
    char prefix[kPrefixBytes];
    // Between frames the wait is open-ended (an idle connection); once a frame has
    // begun, the rest must come within frame_timeout_ms.
    char first = 0;
    if (!ReadFull(fd, &first, 1, nullptr, c->fds_or_null())) {
      return Cancelled("bulk connection closed");
    }
    auto deadline = Clock::now() + std::chrono::milliseconds(options_.frame_timeout_ms);
    prefix[0] = first;
    if (!ReadFull(fd, prefix + 1, kPrefixBytes - 1, &deadline, c->fds_or_null())) {
      return Refuse("truncated frame");
    }
    uint32_t magic, header_bytes;
    uint64_t payload_bytes;
    std::memcpy(&magic, prefix, 4);
    std::memcpy(&header_bytes, prefix + 4, 4);
    std::memcpy(&payload_bytes, prefix + 8, 8);
    const bool shared = magic == kSegmentMagic;
    if (magic != kMagic && !shared) return Refuse("bad magic");
    if (shared && !c->local) return Refuse("a shared-memory frame on a TCP connection");
    if (header_bytes > kMaxHeaderBytes) return Refuse("header too large");
    if (payload_bytes > static_cast<uint64_t>(options_.max_tensor_bytes)) {
      return Refuse("payload over the limit");
    }
    std::string header(header_bytes, '\0');
    if (!ReadFull(fd, header.data(), header.size(), &deadline, c->fds_or_null())) {
      return Refuse("truncated header");
    }
    if (c->passed_fds.size() > kMaxSegments) return Refuse("too many descriptors passed");
    HeaderReader in(header);
    BulkFrame frame;
    frame.step_id = in.Get<int64_t>();
    auto dtype = in.Get<int32_t>();
    auto rank = in.Get<uint32_t>();
    if (!in.ok() || rank > kMaxRank) return Refuse("bad rank");
    std::vector<int64_t> dims(rank);
    for (auto& d : dims) d = in.Get<int64_t>();
    frame.device = in.GetString();
    frame.key = in.GetString();
    const auto segment_id = shared ? in.Get<uint32_t>() : 0;
    const auto segment_flags = shared ? in.Get<uint32_t>() : 0;
    if (!in.ok_whole()) return Refuse("header does not parse");
    Status fits = CheckReceivedTensor(dtype, dims, payload_bytes, -1);
    if (!fits.ok()) return Refuse(fits.message());
    if (shared) {
      Status mapped = TakeSharedPayload(c, segment_id, segment_flags, dtype, dims,
                                        payload_bytes, &frame.tensor);
      if (!mapped.ok()) return Refuse(mapped.message());
    } else {
      // Every byte is read below: no zero fill.
      frame.tensor = Tensor::Uninitialized(static_cast<DType>(dtype), Shape(dims));
      if (payload_bytes > 0 && !ReadFull(fd, frame.tensor.raw_data(), payload_bytes, &deadline)) {
        return Refuse("truncated payload");
      }
    }
    Status bools = CheckReceivedBools(frame.tensor);
    if (!bools.ok()) return Refuse(bools.message());
    // Counted before it is handed on: whoever sees the tensor's effect (a step that
    // used it ended) sees it counted.
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.frames;
      stats_.bytes += static_cast<int64_t>(payload_bytes);
      if (shared) ++stats_.shared_frames;
    }
    if (!deliver_(std::move(frame)).ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      --stats_.frames;
      stats_.bytes -= static_cast<int64_t>(payload_bytes);
      if (shared) --stats_.shared_frames;
      ++stats_.refused;  // the frame is dropped; the connection stays usable
    }
    return Status::OK();
  }

  // The tensor of a segment frame: on the segment itself, mapped first when its
  // descriptor came with the head.
  Status TakeSharedPayload(Connection* c, uint32_t id, uint32_t flags, int32_t dtype,
                           const std::vector<int64_t>& dims, uint64_t bytes, Tensor* out) {
    if (static_cast<DType>(dtype) == DType::kBool) {
      return InvalidArgument("a bool tensor in shared memory");
    }
    if (flags & kSegmentFdAttached) {
      if (c->passed_fds.empty()) return InvalidArgument("segment " + std::to_string(id) +
                                                        "'s descriptor did not come");
      const int fd = c->passed_fds.front();
      c->passed_fds.erase(c->passed_fds.begin());
      AF_RETURN_IF_ERROR(c->segments.Adopt(
          id, fd, static_cast<size_t>(options_.max_tensor_bytes) + (size_t{1} << 20)));
    }
    AF_ASSIGN_OR_RETURN(*out, c->segments.TensorOn(id, static_cast<DType>(dtype), Shape(dims),
                                                   static_cast<size_t>(bytes), c->releases));
    return Status::OK();
  }

  Status Refuse(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.refused;
    return InvalidArgument("bulk frame refused: " + why);
  }

  const BulkReceiverOptions options_;
  const Deliver deliver_;
  mutable std::mutex mu_;
  BulkChannelStats stats_;
  std::unique_ptr<SocketAcceptor> acceptor_;
};

}  // namespace

StatusOr<std::unique_ptr<BulkReceiver>> BulkReceiver::Listen(const std::string& host,
                                                             BulkReceiverOptions options,
                                                             Deliver deliver) {
  auto receiver = std::make_unique<BulkReceiverImpl>(options, std::move(deliver));
  AF_RETURN_IF_ERROR(receiver->Listen(host));
  return std::unique_ptr<BulkReceiver>(std::move(receiver));
}

}  // namespace actorflow
