// Prefetch: a background thread reads ahead of the consumer.
//
// The producer thread calls the input iterator's GetNext without holding the lock and
// appends each result (element or error) to a buffer of at most buffer_size entries;
// it stops after appending OutOfRange or when the iterator is destroyed. The consumer
// pops from the front, so results keep their order.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "training/data/dataset_transforms.h"

namespace actorflow {
namespace {

class PrefetchIterator : public Iterator {
 public:
  PrefetchIterator(std::unique_ptr<Iterator> input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(static_cast<size_t>(buffer_size)) {}

  ~PrefetchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    space_available_.notify_all();
    // The producer may be inside input_->GetNext; it finishes that call, sees
    // cancelled_ and returns. input_ is destroyed only after the join.
    if (producer_.joinable()) producer_.join();
  }

  Status GetNext(Element* out) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (end_of_sequence_) return EndOfSequence();
    if (!producer_.joinable()) producer_ = std::thread([this] { Produce(); });
    // The producer always appends OutOfRange before it stops on its own, so the
    // buffer becomes non-empty.
    results_available_.wait(lock, [this] { return !buffer_.empty(); });
    Result result = std::move(buffer_.front());
    buffer_.pop_front();
    lock.unlock();
    space_available_.notify_one();
    if (result.status.code() == Code::kOutOfRange) {
      std::lock_guard<std::mutex> relock(mu_);
      end_of_sequence_ = true;
    }
    if (result.status.ok()) *out = std::move(result.element);
    return result.status;
  }

 private:
  struct Result {
    Status status;
    Element element;
  };

  void Produce() {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        space_available_.wait(lock,
                              [this] { return cancelled_ || buffer_.size() < buffer_size_; });
        if (cancelled_) return;
      }
      Result result;
      result.status = input_->GetNext(&result.element);
      const bool end = result.status.code() == Code::kOutOfRange;
      {
        std::lock_guard<std::mutex> lock(mu_);
        buffer_.push_back(std::move(result));
      }
      results_available_.notify_one();
      if (end) return;
    }
  }

  std::unique_ptr<Iterator> input_;  // used by the producer thread only
  const size_t buffer_size_;

  std::mutex mu_;
  std::condition_variable results_available_;  // buffer_ became non-empty
  std::condition_variable space_available_;    // buffer_ shrank, or cancelled_
  std::deque<Result> buffer_;                  // guarded by mu_
  bool cancelled_ = false;                     // guarded by mu_
  bool end_of_sequence_ = false;               // guarded by mu_
  std::thread producer_;                       // started by the first GetNext
};

class PrefetchDataset : public Dataset {
 public:
  PrefetchDataset(std::shared_ptr<const Dataset> input, int64_t buffer_size)
      : Dataset(input->output_dtypes(), input->output_shapes()),
        input_(std::move(input)),
        buffer_size_(buffer_size) {}

  std::string DebugString() const override {
    return "Prefetch(" + std::to_string(buffer_size_) + ") <- " + input_->DebugString();
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<PrefetchIterator>(input_->MakeIterator(ctx), buffer_size_);
  }

 private:
  std::shared_ptr<const Dataset> input_;
  int64_t buffer_size_;
};

}  // namespace

std::shared_ptr<const Dataset> NewPrefetchDataset(std::shared_ptr<const Dataset> input,
                                                  int64_t buffer_size) {
  return std::make_shared<PrefetchDataset>(std::move(input), buffer_size);
}

}  // namespace actorflow
