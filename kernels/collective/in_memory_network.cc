#include "kernels/collective/in_memory_network.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>

namespace actorflow {

class InMemoryNetwork::MemberTransport final : public CollectiveTransport {
 public:
  MemberTransport(InMemoryNetwork* network, int rank) : network_(network), rank_(rank) {}

  Status Send(int to_rank, const std::string& tag, const Tensor& value) override {
    return network_->Send(rank_, to_rank, tag, value);
  }
  void RecvAsync(int from_rank, const std::string& tag, RecvCallback done) override {
    network_->RecvAsync(rank_, from_rank, tag, std::move(done));
  }

 private:
  InMemoryNetwork* const network_;
  const int rank_;
};

InMemoryNetwork::InMemoryNetwork(Options options)
    : options_(options), rng_(options.shuffle_seed.value_or(0)) {
  for (int rank = 0; rank < options_.group_size; ++rank) {
    transports_.push_back(std::make_unique<MemberTransport>(this, rank));
  }
}

InMemoryNetwork::~InMemoryNetwork() = default;

CollectiveTransport* InMemoryNetwork::transport(int rank) {
  return transports_.at(static_cast<size_t>(rank)).get();
}

void InMemoryNetwork::FailSends(int from_rank, int to_rank, Status status) {
  failing_sends_[{from_rank, to_rank}] = std::move(status);
}

void InMemoryNetwork::FailReceives(int to_rank, int from_rank, Status status) {
  failing_receives_[{to_rank, from_rank}] = std::move(status);
}

void InMemoryNetwork::AbortWaitingReceives(const Status& status) {
  for (auto& [key, done] : waiting_) ready_.push_back(Delivery{status, Tensor(), std::move(done)});
  waiting_.clear();
}

std::string InMemoryNetwork::Name(const Key& key) {
  return std::to_string(std::get<0>(key)) + "->" + std::to_string(std::get<1>(key)) + " " +
         std::get<2>(key);
}

Status InMemoryNetwork::Send(int from_rank, int to_rank, const std::string& tag,
                             const Tensor& value) {
  auto failing = failing_sends_.find({from_rank, to_rank});
  if (failing != failing_sends_.end()) return failing->second;
  EXPECT_TRUE(to_rank >= 0 && to_rank < options_.group_size) << "send to rank " << to_rank;
  const Key key{from_rank, to_rank, tag};
  if (!sent_keys_.insert(key).second) {
    ADD_FAILURE() << "tag sent twice: " << Name(key);
    return Internal("tag sent twice: " + Name(key));
  }
  sent_log_.push_back(SentRecord{Name(key), value, value.DeepCopy()});
  auto waiting = waiting_.find(key);
  if (waiting != waiting_.end()) {
    ready_.push_back(Delivery{Status::OK(), value, std::move(waiting->second)});
    waiting_.erase(waiting);
  } else {
    mailbox_[key] = value;
  }
  return Status::OK();
}

void InMemoryNetwork::RecvAsync(int to_rank, int from_rank, const std::string& tag,
                                CollectiveTransport::RecvCallback done) {
  const Key key{from_rank, to_rank, tag};
  if (!received_keys_.insert(key).second) {
    ADD_FAILURE() << "tag received twice: " << Name(key);
    return;
  }
  auto failing = failing_receives_.find({to_rank, from_rank});
  if (failing != failing_receives_.end()) {
    ready_.push_back(Delivery{failing->second, Tensor(), std::move(done)});
    return;
  }
  auto arrived = mailbox_.find(key);
  if (arrived == mailbox_.end()) {
    waiting_[key] = std::move(done);
    return;
  }
  Tensor value = std::move(arrived->second);
  mailbox_.erase(arrived);
  if (options_.deliver_synchronously) return done(Status::OK(), value);
  ready_.push_back(Delivery{Status::OK(), std::move(value), std::move(done)});
}

int InMemoryNetwork::Run() {
  int delivered = 0;
  while (!ready_.empty()) {
    size_t next = 0;
    if (options_.shuffle_seed.has_value()) {
      next = std::uniform_int_distribution<size_t>(0, ready_.size() - 1)(rng_);
    }
    // Taken out first: the callback may send and receive, growing ready_.
    Delivery delivery = std::move(ready_[next]);
    ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(next));
    delivery.done(delivery.status, delivery.value);
    ++delivered;
  }
  return delivered;
}

std::vector<std::string> InMemoryNetwork::ChangedAfterSend() const {
  std::vector<std::string> changed;
  for (const SentRecord& record : sent_log_) {
    const Tensor& now = record.value;
    const Tensor& then = record.snapshot;
    const bool same = now.dtype() == then.dtype() && now.shape() == then.shape() &&
                      (now.TotalBytes() == 0 ||
                       std::memcmp(now.raw_data(), then.raw_data(), now.TotalBytes()) == 0);
    if (!same) changed.push_back(record.name);
  }
  return changed;
}

std::shared_ptr<std::vector<MemberOutcome>> StartGroup(InMemoryNetwork& network,
                                                       const StartMember& start) {
  const int n = network.group_size();
  auto outcomes = std::make_shared<std::vector<MemberOutcome>>(static_cast<size_t>(n));
  for (int rank = 0; rank < n; ++rank) {
    start(network.transport(rank), CollectiveMember{rank, n},
          [outcomes, rank](const Status& status, Tensor result) {
            MemberOutcome& outcome = (*outcomes)[static_cast<size_t>(rank)];
            if (++outcome.calls > 1) return;  // the test checks calls == 1
            outcome.status = status;
            outcome.result = std::move(result);
          });
  }
  network.Run();
  return outcomes;
}

}  // namespace actorflow
