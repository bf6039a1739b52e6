// Shuffle, Batch, Repeat and Map: the datasets behind Dataset's transformations.
#include "training/data/dataset_transforms.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

namespace actorflow {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

namespace {

// --- Shuffle -------------------------------------------------------------------------

class ShuffleDataset : public Dataset {
 public:
  ShuffleDataset(std::shared_ptr<const Dataset> input, int64_t buffer_size, uint64_t seed)
      : Dataset(input->output_dtypes(), input->output_shapes()),
        input_(std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed) {}

  std::string DebugString() const override {
    return "Shuffle(" + std::to_string(buffer_size_) + ", seed=" + std::to_string(seed_) +
           ") <- " + input_->DebugString();
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    // mt19937_64's sequence is fixed by the standard, and the index draw below avoids
    // the implementation-defined distributions: the order is the same everywhere.
    return std::make_unique<ShuffleIterator>(input_->MakeIterator(ctx), buffer_size_,
                                             SplitMix64(seed_) ^ SplitMix64(~ctx.epoch));
  }

 private:
  class ShuffleIterator : public Iterator {
   public:
    ShuffleIterator(std::unique_ptr<Iterator> input, int64_t buffer_size, uint64_t seed)
        : input_(std::move(input)), buffer_size_(buffer_size), rng_(seed) {}

    Status GetNext(Element* out) override {
      while (!input_done_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
        Element e;
        Status s = input_->GetNext(&e);
        if (s.code() == Code::kOutOfRange) {
          input_done_ = true;
        } else if (!s.ok()) {
          return s;
        } else {
          buffer_.push_back(std::move(e));
        }
      }
      if (buffer_.empty()) return EndOfSequence();
      const size_t i = UniformIndex(buffer_.size());
      *out = std::move(buffer_[i]);
      buffer_[i] = std::move(buffer_.back());
      buffer_.pop_back();
      return Status::OK();
    }

   private:
    // Uniform in [0, n) by rejection, so no value is favoured.
    size_t UniformIndex(size_t n) {
      const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
      uint64_t r;
      do {
        r = rng_();
      } while (r >= limit);
      return static_cast<size_t>(r % n);
    }

    std::unique_ptr<Iterator> input_;
    int64_t buffer_size_;
    std::mt19937_64 rng_;
    std::vector<Element> buffer_;
    bool input_done_ = false;
  };

  std::shared_ptr<const Dataset> input_;
  int64_t buffer_size_;
  uint64_t seed_;
};

// --- Batch ---------------------------------------------------------------------------

class BatchDataset : public Dataset {
 public:
  BatchDataset(std::shared_ptr<const Dataset> input, int64_t batch_size, bool drop_remainder)
      : Dataset(input->output_dtypes(),
                BatchedShapes(input->output_shapes(),
                              drop_remainder ? batch_size : Shape::kUnknownDim)),
        input_(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

  std::string DebugString() const override {
    return "Batch(" + std::to_string(batch_size_) +
           ", drop_remainder=" + (drop_remainder_ ? "true" : "false") + ") <- " +
           input_->DebugString();
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<BatchIterator>(input_->MakeIterator(ctx), batch_size_,
                                           drop_remainder_);
  }

 private:
  class BatchIterator : public Iterator {
   public:
    BatchIterator(std::unique_ptr<Iterator> input, int64_t batch_size, bool drop_remainder)
        : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

    Status GetNext(Element* out) override {
      if (input_done_) return EndOfSequence();
      std::vector<Element> batch;
      // Bounded: a batch size may stand for "everything" (and the input end first).
      batch.reserve(static_cast<size_t>(std::min<int64_t>(batch_size_, 4096)));
      while (static_cast<int64_t>(batch.size()) < batch_size_) {
        Element e;
        Status s = input_->GetNext(&e);
        if (s.code() == Code::kOutOfRange) {
          input_done_ = true;
          break;
        }
        if (!s.ok()) return s;
        batch.push_back(std::move(e));
      }
      if (batch.empty()) return EndOfSequence();
      if (drop_remainder_ && static_cast<int64_t>(batch.size()) < batch_size_) {
        return EndOfSequence();
      }
      return Stack(batch, out);
    }

   private:
    // batch[k][c] of shape S -> out[c] of shape [batch.size(), S...].
    static Status Stack(const std::vector<Element>& batch, Element* out) {
      const size_t n = batch.size();
      const size_t num_components = batch[0].size();
      Element stacked;
      stacked.reserve(num_components);
      for (size_t c = 0; c < num_components; ++c) {
        const Tensor& first = batch[0][c];
        for (size_t k = 1; k < n; ++k) {
          if (batch[k].size() != num_components || batch[k][c].shape() != first.shape() ||
              batch[k][c].dtype() != first.dtype()) {
            return InvalidArgument(
                "Batch: element " + std::to_string(k) + " of the batch does not match element "
                "0 in component " + std::to_string(c) + " (" +
                (c < batch[k].size() ? batch[k][c].DebugString() : std::string("missing")) +
                " vs " + first.DebugString() +
                "): batched elements need equal shapes (batch_size 1, or Map them to one "
                "shape first)");
          }
        }
        std::vector<int64_t> dims = {static_cast<int64_t>(n)};
        dims.insert(dims.end(), first.shape().dims().begin(), first.shape().dims().end());
        Tensor t(first.dtype(), Shape(std::move(dims)));
        const size_t bytes = first.TotalBytes();
        for (size_t k = 0; k < n && bytes > 0; ++k) {
          std::memcpy(static_cast<char*>(t.raw_data()) + k * bytes, batch[k][c].raw_data(),
                      bytes);
        }
        stacked.push_back(std::move(t));
      }
      *out = std::move(stacked);
      return Status::OK();
    }

    std::unique_ptr<Iterator> input_;
    int64_t batch_size_;
    bool drop_remainder_;
    bool input_done_ = false;
  };

  std::shared_ptr<const Dataset> input_;
  int64_t batch_size_;
  bool drop_remainder_;
};

// --- Repeat --------------------------------------------------------------------------

class RepeatDataset : public Dataset {
 public:
  RepeatDataset(std::shared_ptr<const Dataset> input, int64_t count)
      : Dataset(input->output_dtypes(), input->output_shapes()),
        input_(std::move(input)),
        count_(count) {}

  std::string DebugString() const override {
    return "Repeat(" + std::to_string(count_) + ") <- " + input_->DebugString();
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<RepeatIterator>(input_, count_, ctx);
  }

 private:
  class RepeatIterator : public Iterator {
   public:
    RepeatIterator(std::shared_ptr<const Dataset> input, int64_t count,
                   const IteratorContext& ctx)
        : input_(std::move(input)), count_(count), outer_epoch_(ctx.epoch) {}

    Status GetNext(Element* out) override {
      while (!done_ && (count_ < 0 || pass_ < count_)) {
        if (!current_) {
          IteratorContext pass_ctx;
          pass_ctx.epoch = outer_epoch_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(pass_);
          current_ = input_->MakeIterator(pass_ctx);
          produced_in_pass_ = false;
        }
        Status s = current_->GetNext(out);
        if (s.code() != Code::kOutOfRange) {
          if (s.ok()) produced_in_pass_ = true;
          return s;
        }
        current_.reset();
        ++pass_;
        // An empty pass means every later one is empty too (Repeat(-1) would spin).
        if (!produced_in_pass_) done_ = true;
      }
      done_ = true;
      return EndOfSequence();
    }

   private:
    std::shared_ptr<const Dataset> input_;
    int64_t count_;
    uint64_t outer_epoch_;
    int64_t pass_ = 0;
    std::unique_ptr<Iterator> current_;
    bool produced_in_pass_ = false;
    bool done_ = false;
  };

  std::shared_ptr<const Dataset> input_;
  int64_t count_;
};

// --- Map -----------------------------------------------------------------------------

class MapDataset : public Dataset {
 public:
  MapDataset(std::shared_ptr<const Dataset> input, MapFn fn, std::vector<DType> dtypes,
             std::vector<Shape> shapes)
      : Dataset(std::move(dtypes), std::move(shapes)),
        input_(std::move(input)),
        fn_(std::move(fn)) {}

  std::string DebugString() const override { return "Map <- " + input_->DebugString(); }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    // MapDatasets are made by make_shared only, so the lock always succeeds.
    return std::make_unique<MapIterator>(
        input_->MakeIterator(ctx),
        std::static_pointer_cast<const MapDataset>(weak_from_this().lock()));
  }

 private:
  class MapIterator : public Iterator {
   public:
    MapIterator(std::unique_ptr<Iterator> input, std::shared_ptr<const MapDataset> dataset)
        : input_(std::move(input)), dataset_(std::move(dataset)) {}

    Status GetNext(Element* out) override {
      Element in;
      AF_RETURN_IF_ERROR(input_->GetNext(&in));
      StatusOr<Element> mapped = dataset_->fn_(std::move(in));
      if (!mapped.ok()) return mapped.status().WithContext("Map");
      AF_RETURN_IF_ERROR(
          CheckMapResult(*mapped, dataset_->output_dtypes(), dataset_->output_shapes()));
      *out = std::move(mapped).value();
      return Status::OK();
    }

   private:
    std::unique_ptr<Iterator> input_;
    std::shared_ptr<const MapDataset> dataset_;  // for fn_ and the declared spec
  };

  std::shared_ptr<const Dataset> input_;
  MapFn fn_;
};

}  // namespace

Status CheckMapResult(const Element& element, const std::vector<DType>& dtypes,
                      const std::vector<Shape>& shapes, const std::string& who) {
  bool ok = element.size() == dtypes.size();
  for (size_t i = 0; ok && i < element.size(); ++i) {
    ok = element[i].IsInitialized() && element[i].dtype() == dtypes[i] &&
         element[i].shape().IsCompatibleWith(shapes[i]);
  }
  if (ok) return Status::OK();
  std::vector<DType> got_dtypes;
  std::vector<Shape> got_shapes;
  for (const Tensor& t : element) {
    got_dtypes.push_back(t.dtype());
    got_shapes.push_back(t.shape());
  }
  return InvalidArgument(who + ": the function returned " +
                         ElementSpecString(got_dtypes, got_shapes) +
                         " but the dataset declares " + ElementSpecString(dtypes, shapes) +
                         ": return those dtypes and shapes, or declare the new ones with " +
                         who + "(fn, output_dtypes, output_shapes, ...)");
}

std::vector<Shape> BatchedShapes(const std::vector<Shape>& shapes, int64_t batch_dim) {
  std::vector<Shape> out;
  for (const Shape& s : shapes) {
    if (s.unknown_rank()) {
      out.push_back(Shape::UnknownRank());
      continue;
    }
    std::vector<int64_t> dims = {batch_dim};
    dims.insert(dims.end(), s.dims().begin(), s.dims().end());
    out.push_back(Shape(std::move(dims)));
  }
  return out;
}

std::shared_ptr<const Dataset> NewShuffleDataset(std::shared_ptr<const Dataset> input,
                                                 int64_t buffer_size, uint64_t seed) {
  return std::make_shared<ShuffleDataset>(std::move(input), buffer_size, seed);
}

std::shared_ptr<const Dataset> NewBatchDataset(std::shared_ptr<const Dataset> input,
                                               int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder);
}

std::shared_ptr<const Dataset> NewRepeatDataset(std::shared_ptr<const Dataset> input,
                                                int64_t count) {
  return std::make_shared<RepeatDataset>(std::move(input), count);
}

std::shared_ptr<const Dataset> NewMapDataset(std::shared_ptr<const Dataset> input,
                                             Dataset::MapFn fn, std::vector<DType> output_dtypes,
                                             std::vector<Shape> output_shapes) {
  return std::make_shared<MapDataset>(std::move(input), std::move(fn), std::move(output_dtypes),
                                      std::move(output_shapes));
}

}  // namespace actorflow
