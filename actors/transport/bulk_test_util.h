// Test helpers for the bulk channel's tests (bulk_channel_test, shared_segments_test):
// a sink that collects the frames a receiver delivers (or a sender falls back with),
// and a receiver on 127.0.0.1 that delivers into it.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_BULK_TEST_UTIL_H_
#define ACTORFLOW_ACTORS_TRANSPORT_BULK_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "actors/transport/bulk_channel.h"

namespace actorflow {
namespace bulk_testing {

// How long WaitFor waits.
constexpr auto kSinkWait = std::chrono::seconds(10);

// Collects frames; refuses those for the device "/unknown" (NotFound), as a process
// without that device would. Thread-safe.
class FrameSink {
 public:
  Status Take(BulkFrame frame) {
    std::lock_guard<std::mutex> lock(mu_);
    if (frame.device == "/unknown") return NotFound("no device " + frame.device);
    frames_.push_back(std::move(frame));
    cv_.notify_all();
    return Status::OK();
  }
  // The first n frames, or fewer when they do not all come within kSinkWait.
  std::vector<BulkFrame> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kSinkWait, [&] { return frames_.size() >= n; });
    return frames_;
  }
  // Lets go of every frame's tensor (a shared segment's release goes out here).
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    frames_.clear();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<BulkFrame> frames_;
};

// A receiver on 127.0.0.1 delivering into `sink`; null (with a test failure) when it
// cannot listen.
inline std::unique_ptr<BulkReceiver> Listen(FrameSink* sink, BulkReceiverOptions options = {}) {
  auto receiver = BulkReceiver::Listen("127.0.0.1", options,
                                       [sink](BulkFrame f) { return sink->Take(std::move(f)); });
  EXPECT_TRUE(receiver.ok()) << receiver.status().ToString();
  return receiver.ok() ? std::move(receiver).value() : nullptr;
}

}  // namespace bulk_testing
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_BULK_TEST_UTIL_H_
