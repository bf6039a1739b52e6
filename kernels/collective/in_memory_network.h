// InMemoryNetwork: a group of N collective members in one process, for tests. Each
// member gets a CollectiveTransport; messages are matched by (sender, receiver, tag)
// and delivered from Run(), a single-threaded event loop, one callback at a time:
//   - in the order they became deliverable (sent and asked for), by default;
//   - in a random order of the deliverable ones, driven by a seeded RNG, so one seed
//     always gives the same interleaving;
//   - optionally synchronously inside RecvAsync when the value is already there (the
//     contract allows both).
// Sent tensors travel by reference, as in-process transports do. The network keeps a
// snapshot of each and reports any that changed later (written by the sender after
// Send or by a receiver), and fails the test on a tag sent or received twice.
// Faults: a link whose sends fail, a link whose receives fail, and an abort that
// fails every receive still waiting.
//
// Thread safety: none; one test thread.
#ifndef ACTORFLOW_KERNELS_COLLECTIVE_IN_MEMORY_NETWORK_H_
#define ACTORFLOW_KERNELS_COLLECTIVE_IN_MEMORY_NETWORK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/collective/collective_algorithms.h"

namespace actorflow {

class InMemoryNetwork {
 public:
  struct Options {
    int group_size = 2;
    // Deliver in a random order of the deliverable messages, from this seed.
    std::optional<uint32_t> shuffle_seed;
    // RecvAsync of a value that already arrived calls back before returning.
    bool deliver_synchronously = false;
  };

  explicit InMemoryNetwork(Options options);
  ~InMemoryNetwork();
  InMemoryNetwork(const InMemoryNetwork&) = delete;
  InMemoryNetwork& operator=(const InMemoryNetwork&) = delete;

  // Member `rank`'s transport; lives as long as the network.
  CollectiveTransport* transport(int rank);
  int group_size() const { return options_.group_size; }

  // Sends from `from_rank` to `to_rank` fail with `status` from now on.
  void FailSends(int from_rank, int to_rank, Status status);
  // Receives posted by `to_rank` for messages from `from_rank` are answered with
  // `status` (from the event loop) from now on.
  void FailReceives(int to_rank, int from_rank, Status status);
  // Answers every receive still waiting with `status` (the caller aborts the
  // execution); their callbacks run from the next Run().
  void AbortWaitingReceives(const Status& status);

  // Runs callbacks until none is deliverable; returns how many ran.
  int Run();

  size_t undelivered_messages() const { return mailbox_.size(); }
  size_t waiting_receives() const { return waiting_.size(); }
  int messages_sent() const { return static_cast<int>(sent_log_.size()); }
  // "0->1 tag" of every sent tensor whose bytes differ now from when it was sent.
  std::vector<std::string> ChangedAfterSend() const;

 private:
  class MemberTransport;
  using Key = std::tuple<int, int, std::string>;  // from, to, tag
  struct Delivery {
    Status status;
    Tensor value;
    CollectiveTransport::RecvCallback done;
  };
  struct SentRecord {
    std::string name;
    Tensor value;
    Tensor snapshot;
  };

  Status Send(int from_rank, int to_rank, const std::string& tag, const Tensor& value);
  void RecvAsync(int to_rank, int from_rank, const std::string& tag,
                 CollectiveTransport::RecvCallback done);
  static std::string Name(const Key& key);

  const Options options_;
  std::mt19937 rng_;
  std::vector<std::unique_ptr<MemberTransport>> transports_;
  std::map<std::pair<int, int>, Status> failing_sends_;     // (from, to)
  std::map<std::pair<int, int>, Status> failing_receives_;  // (to, from)
  std::map<Key, Tensor> mailbox_;  // sent, not asked for yet
  std::map<Key, CollectiveTransport::RecvCallback> waiting_;  // asked for, not sent yet
  std::vector<Delivery> ready_;
  std::set<Key> sent_keys_;
  std::set<Key> received_keys_;
  std::vector<SentRecord> sent_log_;
};

// What one member's `done` saw.
struct MemberOutcome {
  int calls = 0;
  Status status;
  Tensor result;
};

// Starts one member's part of a collective.
using StartMember =
    std::function<void(CollectiveTransport* transport, CollectiveMember member, CollectiveDone)>;

// Starts every member of `network` with `start`, runs the network until nothing is
// deliverable and returns each member's outcome (calls == 0: still waiting). The
// outcomes must outlive later Run() calls: they are written through a shared_ptr.
std::shared_ptr<std::vector<MemberOutcome>> StartGroup(InMemoryNetwork& network,
                                                       const StartMember& start);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_COLLECTIVE_IN_MEMORY_NETWORK_H_
