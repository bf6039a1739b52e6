// Map with several threads: fn runs on up to num_parallel_calls elements at once and
// the results come out in input order, so a pipeline gives the same elements whatever
// the thread count.
//
// The consumer's GetNext reads input elements itself (on its own thread) until
// 2 * num_parallel_calls are in flight, hands each to the workers as a Slot, and
// waits for the oldest slot. An input error takes its place in the order as a slot
// that is done at once, so errors keep their position too.
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "training/data/dataset_transforms.h"

namespace actorflow {
namespace {

class ParallelMapDataset : public Dataset {
 public:
  ParallelMapDataset(std::shared_ptr<const Dataset> input, MapFn fn, std::vector<DType> dtypes,
                     std::vector<Shape> shapes, int num_parallel_calls)
      : Dataset(std::move(dtypes), std::move(shapes)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        num_parallel_calls_(num_parallel_calls) {}

  std::string DebugString() const override {
    return "Map(num_parallel_calls=" + std::to_string(num_parallel_calls_) + ") <- " +
           input_->DebugString();
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<ParallelMapIterator>(
        input_->MakeIterator(ctx),
        std::static_pointer_cast<const ParallelMapDataset>(weak_from_this().lock()));
  }

 private:
  // One element on its way through fn.
  struct Slot {
    Element in;
    Status status;  // fn's (or the input's) outcome, once done
    Element out;
    bool done = false;  // guarded by the iterator's mu_
  };

  class ParallelMapIterator : public Iterator {
   public:
    ParallelMapIterator(std::unique_ptr<Iterator> input,
                        std::shared_ptr<const ParallelMapDataset> dataset)
        : input_(std::move(input)), dataset_(std::move(dataset)) {}

    ~ParallelMapIterator() override {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
      }
      work_available_.notify_all();
      for (std::thread& t : workers_) t.join();
    }

    Status GetNext(Element* out) override {
      if (workers_.empty()) StartWorkers();
      const size_t window = 2 * static_cast<size_t>(dataset_->num_parallel_calls_);
      while (!input_done_ && in_flight_.size() < window) {
        auto slot = std::make_shared<Slot>();
        Status s = input_->GetNext(&slot->in);
        if (s.code() == Code::kOutOfRange) {
          input_done_ = true;
          break;
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (s.ok()) {
          to_compute_.push_back(slot);
          work_available_.notify_one();
        } else {
          slot->status = std::move(s);
          slot->done = true;
        }
        in_flight_.push_back(std::move(slot));
      }
      if (in_flight_.empty()) return EndOfSequence();
      std::shared_ptr<Slot> oldest = std::move(in_flight_.front());
      in_flight_.pop_front();
      {
        std::unique_lock<std::mutex> lock(mu_);
        slot_done_.wait(lock, [&] { return oldest->done; });
      }
      AF_RETURN_IF_ERROR(oldest->status);
      AF_RETURN_IF_ERROR(
          CheckMapResult(oldest->out, dataset_->output_dtypes(), dataset_->output_shapes()));
      *out = std::move(oldest->out);
      return Status::OK();
    }

   private:
    void StartWorkers() {
      for (int i = 0; i < dataset_->num_parallel_calls_; ++i) {
        workers_.emplace_back([this] { Work(); });
      }
    }

    void Work() {
      while (true) {
        std::shared_ptr<Slot> slot;
        {
          std::unique_lock<std::mutex> lock(mu_);
          work_available_.wait(lock, [this] { return stopping_ || !to_compute_.empty(); });
          if (stopping_) return;
          slot = std::move(to_compute_.front());
          to_compute_.pop_front();
        }
        StatusOr<Element> mapped = dataset_->fn_(std::move(slot->in));
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (mapped.ok()) {
            slot->out = std::move(mapped).value();
          } else {
            slot->status = mapped.status().WithContext("Map");
          }
          slot->done = true;
        }
        slot_done_.notify_all();
      }
    }

    std::unique_ptr<Iterator> input_;  // read by the consumer's thread only
    std::shared_ptr<const ParallelMapDataset> dataset_;
    std::deque<std::shared_ptr<Slot>> in_flight_;  // consumer's thread only, input order
    bool input_done_ = false;                      // consumer's thread only
    std::vector<std::thread> workers_;             // started by the first GetNext

    std::mutex mu_;
    std::condition_variable work_available_;      // to_compute_ grew, or stopping_
    std::condition_variable slot_done_;           // some slot's done became true
    std::deque<std::shared_ptr<Slot>> to_compute_;  // guarded by mu_
    bool stopping_ = false;                         // guarded by mu_
  };

  std::shared_ptr<const Dataset> input_;
  MapFn fn_;
  int num_parallel_calls_;
};

}  // namespace

std::shared_ptr<const Dataset> NewParallelMapDataset(std::shared_ptr<const Dataset> input,
                                                     Dataset::MapFn fn,
                                                     std::vector<DType> output_dtypes,
                                                     std::vector<Shape> output_shapes,
                                                     int num_parallel_calls) {
  return std::make_shared<ParallelMapDataset>(std::move(input), std::move(fn),
                                              std::move(output_dtypes), std::move(output_shapes),
                                              num_parallel_calls);
}

}  // namespace actorflow
