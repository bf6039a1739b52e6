#include "training/data/dataset.h"

#include <cstring>
#include <utility>

#include "training/data/dataset_transforms.h"

namespace actorflow {
namespace {

// Returns its status from every GetNext.
class ErrorIterator : public Iterator {
 public:
  explicit ErrorIterator(Status status) : status_(std::move(status)) {}
  Status GetNext(Element*) override { return status_; }

 private:
  Status status_;
};

class ErrorDatasetImpl : public Dataset {
 public:
  ErrorDatasetImpl(Status status, std::vector<DType> dtypes, std::vector<Shape> shapes)
      : Dataset(std::move(dtypes), std::move(shapes), std::move(status)) {}
  std::string DebugString() const override { return "Error(" + status().ToString() + ")"; }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<ErrorIterator>(status());
  }
};

// Dims after the first: a slice of [4,2] is [2].
Shape SliceShape(const Shape& shape) {
  return Shape(std::vector<int64_t>(shape.dims().begin() + 1, shape.dims().end()));
}

class TensorSliceDataset : public Dataset {
 public:
  // Precondition: components validated by FromTensorSlices.
  TensorSliceDataset(std::vector<Tensor> components, std::vector<DType> dtypes,
                     std::vector<Shape> shapes)
      : Dataset(std::move(dtypes), std::move(shapes)), components_(std::move(components)) {}

  std::string DebugString() const override {
    std::string s = "TensorSlices(";
    for (size_t i = 0; i < components_.size(); ++i) {
      s += (i ? ", " : "") + components_[i].DebugString();
    }
    return s + ")";
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<SliceIterator>(components_, output_shapes());
  }

 private:
  class SliceIterator : public Iterator {
   public:
    // Shares the components' buffers; they are never written. slice_shapes[i] is
    // component i's shape without its first dim.
    SliceIterator(std::vector<Tensor> components, std::vector<Shape> slice_shapes)
        : components_(std::move(components)), slice_shapes_(std::move(slice_shapes)) {}

    Status GetNext(Element* out) override {
      if (next_ >= components_[0].dim(0)) return EndOfSequence();
      Element element;
      element.reserve(components_.size());
      for (size_t i = 0; i < components_.size(); ++i) {
        const Tensor& c = components_[i];
        Tensor slice(c.dtype(), slice_shapes_[i]);
        const size_t bytes = slice.TotalBytes();
        if (bytes > 0) {
          std::memcpy(slice.raw_data(),
                      static_cast<const char*>(c.raw_data()) + next_ * bytes, bytes);
        }
        element.push_back(std::move(slice));
      }
      ++next_;
      *out = std::move(element);
      return Status::OK();
    }

   private:
    std::vector<Tensor> components_;
    std::vector<Shape> slice_shapes_;
    int64_t next_ = 0;
  };

  std::vector<Tensor> components_;
};

// Returns an ErrorDataset when `d` cannot be transformed (it is invalid, or not owned
// by a shared_ptr); otherwise nullptr, with *self set to d.
std::shared_ptr<const Dataset> Untransformable(const Dataset& d,
                                               std::shared_ptr<const Dataset>* self) {
  if (!d.status().ok()) return ErrorDataset(d.status(), d.output_dtypes(), d.output_shapes());
  *self = d.weak_from_this().lock();
  if (*self) return nullptr;
  return ErrorDataset(FailedPrecondition("a Dataset must be owned by a std::shared_ptr "
                                         "(std::make_shared) to be transformed"),
                      d.output_dtypes(), d.output_shapes());
}

}  // namespace

Status EndOfSequence() { return OutOfRange("End of sequence"); }

Dataset::Dataset(std::vector<DType> output_dtypes, std::vector<Shape> output_shapes,
                 Status status)
    : output_dtypes_(std::move(output_dtypes)),
      output_shapes_(std::move(output_shapes)),
      status_(std::move(status)) {}

std::unique_ptr<Iterator> Dataset::MakeIterator(const IteratorContext& ctx) const {
  if (!status_.ok()) return std::make_unique<ErrorIterator>(status_);
  return MakeIteratorInternal(ctx);
}

std::shared_ptr<const Dataset> ErrorDataset(Status status, std::vector<DType> output_dtypes,
                                            std::vector<Shape> output_shapes) {
  if (status.ok()) status = Internal("ErrorDataset built from an OK status");
  return std::make_shared<ErrorDatasetImpl>(std::move(status), std::move(output_dtypes),
                                            std::move(output_shapes));
}

std::string ElementSpecString(const std::vector<DType>& dtypes,
                              const std::vector<Shape>& shapes) {
  std::string s = "(";
  for (size_t i = 0; i < dtypes.size(); ++i) {
    s += (i ? ", " : "") + std::string(DTypeName(dtypes[i]));
    if (i < shapes.size()) s += " " + shapes[i].ToString();
  }
  return s + ")";
}

StatusOr<std::shared_ptr<const Dataset>> Dataset::FromTensorSlices(
    std::vector<Tensor> components) {
  if (components.empty()) {
    return InvalidArgument("FromTensorSlices: no components: give at least one tensor");
  }
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& c = components[i];
    const std::string which = "FromTensorSlices: component " + std::to_string(i);
    if (!c.IsInitialized()) return InvalidArgument(which + " is an empty Tensor");
    if (c.rank() == 0) {
      return InvalidArgument(which + " is a scalar; components are sliced along dim 0, so "
                                     "each needs rank >= 1");
    }
    if (c.dim(0) != components[0].dim(0)) {
      return InvalidArgument(which + " (" + c.DebugString() + ") has " +
                             std::to_string(c.dim(0)) + " slices but component 0 (" +
                             components[0].DebugString() + ") has " +
                             std::to_string(components[0].dim(0)) +
                             ": every component needs the same dim 0");
    }
    dtypes.push_back(c.dtype());
    shapes.push_back(SliceShape(c.shape()));
  }
  return std::shared_ptr<const Dataset>(std::make_shared<TensorSliceDataset>(
      std::move(components), std::move(dtypes), std::move(shapes)));
}

std::shared_ptr<const Dataset> Dataset::Shuffle(int64_t buffer_size, uint64_t seed) const {
  std::shared_ptr<const Dataset> self;
  if (auto error = Untransformable(*this, &self)) return error;
  if (buffer_size < 1) {
    return ErrorDataset(InvalidArgument("Shuffle: buffer_size must be >= 1, got " +
                                        std::to_string(buffer_size)),
                        output_dtypes(), output_shapes());
  }
  return NewShuffleDataset(std::move(self), buffer_size, seed);
}

std::shared_ptr<const Dataset> Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  std::shared_ptr<const Dataset> self;
  if (auto error = Untransformable(*this, &self)) return error;
  if (batch_size < 1) {
    return ErrorDataset(
        InvalidArgument("Batch: batch_size must be >= 1, got " + std::to_string(batch_size)),
        output_dtypes(), BatchedShapes(output_shapes(), Shape::kUnknownDim));
  }
  return NewBatchDataset(std::move(self), batch_size, drop_remainder);
}

std::shared_ptr<const Dataset> Dataset::Repeat(int64_t count) const {
  std::shared_ptr<const Dataset> self;
  if (auto error = Untransformable(*this, &self)) return error;
  if (count < -1) {
    return ErrorDataset(InvalidArgument("Repeat: count must be -1 (forever) or >= 0, got " +
                                        std::to_string(count)),
                        output_dtypes(), output_shapes());
  }
  return NewRepeatDataset(std::move(self), count);
}

std::shared_ptr<const Dataset> Dataset::Map(MapFn fn) const {
  return Map(std::move(fn), output_dtypes(), output_shapes());
}

std::shared_ptr<const Dataset> Dataset::Map(MapFn fn, std::vector<DType> output_dtypes,
                                            std::vector<Shape> output_shapes) const {
  return Map(std::move(fn), std::move(output_dtypes), std::move(output_shapes),
             /*num_parallel_calls=*/1);
}

std::shared_ptr<const Dataset> Dataset::Map(MapFn fn, int num_parallel_calls) const {
  return Map(std::move(fn), output_dtypes(), output_shapes(), num_parallel_calls);
}

std::shared_ptr<const Dataset> Dataset::Map(MapFn fn, std::vector<DType> output_dtypes,
                                            std::vector<Shape> output_shapes,
                                            int num_parallel_calls) const {
  std::shared_ptr<const Dataset> self;
  if (auto error = Untransformable(*this, &self)) return error;
  if (!fn || output_dtypes.empty() || output_dtypes.size() != output_shapes.size() ||
      num_parallel_calls < 1) {
    const std::string message =
        !fn ? "Map: the function is empty"
        : num_parallel_calls < 1
            ? "Map: num_parallel_calls must be >= 1, got " + std::to_string(num_parallel_calls)
            : "Map: give one dtype and one shape per output component (got " +
                  std::to_string(output_dtypes.size()) + " dtypes and " +
                  std::to_string(output_shapes.size()) + " shapes)";
    output_shapes.resize(output_dtypes.size(), Shape::UnknownRank());
    return ErrorDataset(InvalidArgument(message), std::move(output_dtypes),
                        std::move(output_shapes));
  }
  if (num_parallel_calls == 1) {
    return NewMapDataset(std::move(self), std::move(fn), std::move(output_dtypes),
                         std::move(output_shapes));
  }
  return NewParallelMapDataset(std::move(self), std::move(fn), std::move(output_dtypes),
                               std::move(output_shapes), num_parallel_calls);
}

std::shared_ptr<const Dataset> Dataset::Shard(int64_t num_shards, int64_t index) const {
  std::shared_ptr<const Dataset> self;
  if (auto error = Untransformable(*this, &self)) return error;
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    return ErrorDataset(InvalidArgument("Shard: index " + std::to_string(index) +
                                        " of num_shards " + std::to_string(num_shards) +
                                        ": num_shards must be >= 1 and 0 <= index < num_shards"),
                        output_dtypes(), output_shapes());
  }
  return NewShardDataset(std::move(self), num_shards, index);
}

std::shared_ptr<const Dataset> Dataset::Interleave(InterleaveFn fn,
                                                   std::vector<DType> output_dtypes,
                                                   std::vector<Shape> output_shapes,
                                                   int64_t cycle_length,
                                                   int64_t block_length) const {
  std::shared_ptr<const Dataset> self;
  if (auto error = Untransformable(*this, &self)) return error;
  std::string bad;
  if (!fn) {
    bad = "the function is empty";
  } else if (output_dtypes.empty() || output_dtypes.size() != output_shapes.size()) {
    bad = "give one dtype and one shape per output component (got " +
          std::to_string(output_dtypes.size()) + " dtypes and " +
          std::to_string(output_shapes.size()) + " shapes)";
  } else if (cycle_length < 1 || block_length < 1) {
    bad = "cycle_length and block_length must be >= 1, got " + std::to_string(cycle_length) +
          " and " + std::to_string(block_length);
  }
  if (!bad.empty()) {
    output_shapes.resize(output_dtypes.size(), Shape::UnknownRank());
    return ErrorDataset(InvalidArgument("Interleave: " + bad), std::move(output_dtypes),
                        std::move(output_shapes));
  }
  return NewInterleaveDataset(std::move(self), std::move(fn), std::move(output_dtypes),
                              std::move(output_shapes), cycle_length, block_length);
}

std::shared_ptr<const Dataset> Dataset::Prefetch(int64_t buffer_size) const {
  std::shared_ptr<const Dataset> self;
  if (auto error = Untransformable(*this, &self)) return error;
  if (buffer_size < 1) {
    return ErrorDataset(InvalidArgument("Prefetch: buffer_size must be >= 1, got " +
                                        std::to_string(buffer_size)),
                        output_dtypes(), output_shapes());
  }
  return NewPrefetchDataset(std::move(self), buffer_size);
}

}  // namespace actorflow
