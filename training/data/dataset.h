// Datasets and iterators: input pipelines in the style of TensorFlow 1.x's tf.data.
// A Dataset describes a sequence of elements; an Iterator walks one pass over it.
// An element is one tensor per component, e.g. (features float32 [4], label int32 []).
//
//   AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({features, labels}));
//   auto train = rows->Shuffle(/*buffer_size=*/120, /*seed=*/7)->Batch(32)->Repeat(10);
//   std::unique_ptr<Iterator> it = train->MakeIterator();
//   Element batch;
//   while (it->GetNext(&batch).ok()) { ... }   // OutOfRange ends the loop
//
// In a graph, MakeOneShotIterator (training/data/iterator_ops.h) turns a Dataset into an
// IteratorGetNext op.
//
// Invariants: a Dataset is immutable once built and always owned by a
// std::shared_ptr (transformations keep their input alive through it). Its
// output_dtypes() and output_shapes() describe every element it produces; shapes may
// have unknown dims (a batch dim of -1). Transformations never fail on the spot: a bad
// argument (Batch(0)) yields a dataset whose status() is the error; the error carries
// through later transformations, and every iterator over such a dataset returns it.
//
// Thread safety: a Dataset may be shared by any number of threads and iterators. An
// Iterator is used by one thread at a time. An iterator keeps what it needs alive: it
// may outlive the shared_ptrs to its dataset.
#ifndef ACTORFLOW_TRAINING_DATA_DATASET_H_
#define ACTORFLOW_TRAINING_DATA_DATASET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

// One element: a tensor per component.
using Element = std::vector<Tensor>;

// One pass over a dataset.
class Iterator {
 public:
  virtual ~Iterator() = default;

  // Stores the next element in *out and returns OK. At the end of the data returns
  // OutOfRange ("End of sequence"), and keeps returning it on every later call. Any
  // other error stands for one element (a malformed CSV row, a Map function that
  // failed): the caller may stop, or call again to go on with the next element.
  virtual Status GetNext(Element* out) = 0;
};

// What an iterator is created for. Repeat numbers its passes so that a Shuffle
// beneath it draws a new, still deterministic, order on each pass.
struct IteratorContext {
  // 0 for a plain MakeIterator(); the k-th pass of Repeat over epoch e gets
  // e * 0x9E3779B97F4A7C15 + k (so the first pass of an outermost Repeat is epoch 0).
  uint64_t epoch = 0;
};

class Dataset : public std::enable_shared_from_this<Dataset> {
 public:
  // What Map applies to each element.
  using MapFn = std::function<StatusOr<Element>(Element)>;
  // What Interleave makes of each input element: a dataset (e.g. a file's records).
  using InterleaveFn = std::function<StatusOr<std::shared_ptr<const Dataset>>(Element)>;

  virtual ~Dataset() = default;
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  // --- Sources ---------------------------------------------------------------------

  // Element i is (components[0][i], components[1][i], ...): each component is sliced
  // along dim 0, so [4,2] float32 and [4] int32 give 4 elements (float32 [2],
  // int32 []). InvalidArgument when there are no components, a component is a
  // scalar or uninitialized, or the components' dim 0 differ.
  static StatusOr<std::shared_ptr<const Dataset>> FromTensorSlices(
      std::vector<Tensor> components);

  // --- Transformations (each returns a new dataset; this one is unchanged) ------------

  // Randomizes the order with a buffer of `buffer_size` elements, as TensorFlow does:
  // the buffer fills from the input, and each element produced is drawn uniformly from
  // it and replaced by the next input element. buffer_size >= the number of elements
  // gives a uniform permutation; 1 keeps the order. The order depends only on `seed`
  // and the pass (IteratorContext::epoch), so under Repeat each pass is reshuffled
  // and a new MakeIterator() repeats the same sequence of orders.
  // Error (in status()): buffer_size < 1.
  std::shared_ptr<const Dataset> Shuffle(int64_t buffer_size, uint64_t seed) const;

  // Stacks `batch_size` consecutive elements along a new dim 0: components [2] and []
  // become [batch_size,2] and [batch_size]. The last batch may be smaller unless
  // drop_remainder, which drops it (and makes the batch dim known in
  // output_shapes(); it is -1 otherwise). Elements of one batch must have equal
  // shapes (InvalidArgument from GetNext otherwise); an input error mid-batch is
  // returned and the partial batch is dropped. Error (in status()): batch_size < 1.
  std::shared_ptr<const Dataset> Batch(int64_t batch_size, bool drop_remainder = false) const;

  // The input `count` times (-1: forever; 0: empty). A pass that produces nothing ends
  // the repetition, so Repeat(-1) over an empty dataset ends instead of spinning.
  // Error (in status()): count < -1.
  std::shared_ptr<const Dataset> Repeat(int64_t count = -1) const;

  // fn applied to each element (e.g. standardizing features). The result must keep
  // this dataset's dtypes and compatible shapes, unless given by the overload below;
  // GetNext returns InvalidArgument when it does not, and fn's own errors as they are
  // (prefixed with "Map: "). fn may run on several threads at once (one per iterator,
  // or a Prefetch thread), so it must not mutate shared state without a lock.
  std::shared_ptr<const Dataset> Map(MapFn fn) const;
  std::shared_ptr<const Dataset> Map(MapFn fn, std::vector<DType> output_dtypes,
                                     std::vector<Shape> output_shapes) const;

  // Map with fn running on up to `num_parallel_calls` elements at once (threads of the
  // iterator, started by its first GetNext). The results, errors included, come in
  // input order whatever the thread count, at most 2 * num_parallel_calls elements
  // ahead of the consumer. num_parallel_calls 1 is Map. fn must be thread-safe.
  // Error (in status()): num_parallel_calls < 1, and Map's.
  std::shared_ptr<const Dataset> Map(MapFn fn, int num_parallel_calls) const;
  std::shared_ptr<const Dataset> Map(MapFn fn, std::vector<DType> output_dtypes,
                                     std::vector<Shape> output_shapes,
                                     int num_parallel_calls) const;
  // Every num_shards-th element, starting at element `index`: num_shards workers
  // with indices 0..num_shards-1 read disjoint parts that together are the whole. An
  // input error counts as an element (the shard it falls to returns it). Shard before
  // Shuffle and Repeat, so that each worker's part stays the same set every pass.
  // Error (in status()): num_shards < 1, or index outside [0, num_shards).
  std::shared_ptr<const Dataset> Shard(int64_t num_shards, int64_t index) const;
  // fn makes a dataset of each input element (a file name, say); cycle_length of them
  // are read at once, block_length elements from each in turn, and one that ends is
  // replaced by the next input element's dataset. Deterministic. Every inner
  // dataset's elements must match output_dtypes / output_shapes (GetNext returns
  // InvalidArgument otherwise); fn's errors come out as elements ("Interleave: ...").
  // Error (in status()): cycle_length or block_length < 1, an empty fn or spec.
  std::shared_ptr<const Dataset> Interleave(InterleaveFn fn, std::vector<DType> output_dtypes,
                                            std::vector<Shape> output_shapes,
                                            int64_t cycle_length,
                                            int64_t block_length = 1) const;
  // Produces the same results as this dataset (elements and errors, in order), read
  // ahead by a background thread into a buffer of at most `buffer_size` results. The
  // thread starts at the first GetNext and is stopped and joined when the iterator
  // is destroyed. Error (in status()): buffer_size < 1.
  std::shared_ptr<const Dataset> Prefetch(int64_t buffer_size) const;

  // --- Iteration -----------------------------------------------------------------------

  // A new pass from the start (epoch 0).
  std::unique_ptr<Iterator> MakeIterator() const { return MakeIterator(IteratorContext()); }
  // For datasets that wrap others: the pass described by ctx. When status() is not OK
  // the iterator returns that error from every GetNext.
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const;

  // One entry per component.
  const std::vector<DType>& output_dtypes() const { return output_dtypes_; }
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }
  int num_components() const { return static_cast<int>(output_dtypes_.size()); }
  // OK, or why this dataset (or one it was built from) is invalid.
  const Status& status() const { return status_; }
  // "Batch(32, drop_remainder=false) <- Shuffle(120, seed=7) <- TensorSlices(...)".
  virtual std::string DebugString() const = 0;

 protected:
  // Precondition: output_dtypes.size() == output_shapes.size().
  Dataset(std::vector<DType> output_dtypes, std::vector<Shape> output_shapes,
          Status status = Status::OK());

  // Only called when status() is OK.
  virtual std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const = 0;

 private:
  std::vector<DType> output_dtypes_;
  std::vector<Shape> output_shapes_;
  Status status_;
};

// A dataset that produces nothing and whose status() is `status` (not OK). What the
// transformations return for a bad argument; for sources written elsewhere too.
std::shared_ptr<const Dataset> ErrorDataset(Status status, std::vector<DType> output_dtypes,
                                            std::vector<Shape> output_shapes);

// "(float32 [?,4], int32 [?])": for messages.
std::string ElementSpecString(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_DATASET_H_
