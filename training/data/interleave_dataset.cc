// Shard and Interleave: the transformations that split input among workers and read
// several files at once.
//
// Both count an error from their input as one element (Iterator's contract), so a
// corrupt record is reported by exactly one shard and keeps its place in an
// interleaved order instead of being skipped somewhere.
#include <utility>
#include <vector>

#include "training/data/dataset_transforms.h"

namespace actorflow {
namespace {

class ShardDataset : public Dataset {
 public:
  ShardDataset(std::shared_ptr<const Dataset> input, int64_t num_shards, int64_t index)
      : Dataset(input->output_dtypes(), input->output_shapes()),
        input_(std::move(input)),
        num_shards_(num_shards),
        index_(index) {}

  std::string DebugString() const override {
    return "Shard(" + std::to_string(num_shards_) + ", " + std::to_string(index_) + ") <- " +
           input_->DebugString();
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<ShardIterator>(input_->MakeIterator(ctx), num_shards_, index_);
  }

 private:
  class ShardIterator : public Iterator {
   public:
    ShardIterator(std::unique_ptr<Iterator> input, int64_t num_shards, int64_t index)
        : input_(std::move(input)), num_shards_(num_shards), index_(index) {}

    // Element k of the input (an error included) is this shard's when
    // k % num_shards == index.
    Status GetNext(Element* out) override {
      while (true) {
        Element e;
        Status s = input_->GetNext(&e);
        if (s.code() == Code::kOutOfRange) return s;
        const bool mine = position_ % num_shards_ == index_;
        ++position_;
        if (!mine) continue;
        if (s.ok()) *out = std::move(e);
        return s;
      }
    }

   private:
    std::unique_ptr<Iterator> input_;
    int64_t num_shards_;
    int64_t index_;
    int64_t position_ = 0;
  };

  std::shared_ptr<const Dataset> input_;
  int64_t num_shards_;
  int64_t index_;
};

class InterleaveDataset : public Dataset {
 public:
  InterleaveDataset(std::shared_ptr<const Dataset> input, InterleaveFn fn,
                    std::vector<DType> dtypes, std::vector<Shape> shapes, int64_t cycle_length,
                    int64_t block_length)
      : Dataset(std::move(dtypes), std::move(shapes)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        cycle_length_(cycle_length),
        block_length_(block_length) {}

  std::string DebugString() const override {
    return "Interleave(cycle_length=" + std::to_string(cycle_length_) +
           ", block_length=" + std::to_string(block_length_) + ") <- " + input_->DebugString();
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<InterleaveIterator>(
        input_->MakeIterator(ctx),
        std::static_pointer_cast<const InterleaveDataset>(weak_from_this().lock()), ctx);
  }

 private:
  // Up to cycle_length open inner iterators, taken in turn, block_length elements
  // each; one that ends is replaced by the next input element's dataset in its place.
  class InterleaveIterator : public Iterator {
   public:
    InterleaveIterator(std::unique_ptr<Iterator> input,
                       std::shared_ptr<const InterleaveDataset> dataset, IteratorContext ctx)
        : input_(std::move(input)),
          dataset_(std::move(dataset)),
          ctx_(ctx),
          cycle_(static_cast<size_t>(dataset_->cycle_length_)) {}

    Status GetNext(Element* out) override {
      while (true) {
        if (!cycle_[current_]) {
          if (input_done_) {
            if (AllClosed()) return EndOfSequence();
            Advance();
            continue;
          }
          Status opened = Open(&cycle_[current_]);
          if (opened.code() == Code::kOutOfRange) continue;  // input_done_ is set now
          if (!opened.ok()) return opened;  // this slot opens the next element next time
        }
        Status s = cycle_[current_]->GetNext(out);
        if (s.code() == Code::kOutOfRange) {
          cycle_[current_].reset();
          Advance();
          continue;
        }
        if (++taken_ >= dataset_->block_length_) Advance();
        if (!s.ok()) return s;
        return CheckMapResult(*out, dataset_->output_dtypes(), dataset_->output_shapes(),
                              "Interleave");
      }
    }

   private:
    // The inner iterator of the next input element; OutOfRange once the input is done.
    Status Open(std::unique_ptr<Iterator>* inner) {
      if (input_done_) return EndOfSequence();
      Element e;
      Status s = input_->GetNext(&e);
      if (s.code() == Code::kOutOfRange) input_done_ = true;
      if (!s.ok()) return s;
      StatusOr<std::shared_ptr<const Dataset>> made = dataset_->fn_(std::move(e));
      if (!made.ok()) return made.status().WithContext("Interleave");
      if (*made == nullptr) return InvalidArgument("Interleave: the function returned no dataset");
      *inner = (*made)->MakeIterator(ctx_);
      return Status::OK();
    }

    bool AllClosed() const {
      for (const auto& it : cycle_) {
        if (it) return false;
      }
      return true;
    }

    void Advance() {
      current_ = (current_ + 1) % cycle_.size();
      taken_ = 0;
    }

    std::unique_ptr<Iterator> input_;
    std::shared_ptr<const InterleaveDataset> dataset_;
    IteratorContext ctx_;
    std::vector<std::unique_ptr<Iterator>> cycle_;
    size_t current_ = 0;
    int64_t taken_ = 0;  // elements taken from cycle_[current_] in its turn
    bool input_done_ = false;
  };

  std::shared_ptr<const Dataset> input_;
  InterleaveFn fn_;
  int64_t cycle_length_;
  int64_t block_length_;
};

}  // namespace

std::shared_ptr<const Dataset> NewShardDataset(std::shared_ptr<const Dataset> input,
                                               int64_t num_shards, int64_t index) {
  return std::make_shared<ShardDataset>(std::move(input), num_shards, index);
}

std::shared_ptr<const Dataset> NewInterleaveDataset(std::shared_ptr<const Dataset> input,
                                                    Dataset::InterleaveFn fn,
                                                    std::vector<DType> output_dtypes,
                                                    std::vector<Shape> output_shapes,
                                                    int64_t cycle_length, int64_t block_length) {
  return std::make_shared<InterleaveDataset>(std::move(input), std::move(fn),
                                             std::move(output_dtypes), std::move(output_shapes),
                                             cycle_length, block_length);
}

}  // namespace actorflow
