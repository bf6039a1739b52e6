// Data sharding for data-parallel training: worker i of W walks a disjoint 1/W of
// every epoch, so that W workers together make one pass over the training set per
// epoch instead of W passes.
//
// Epoch e of a set of N rows: every worker draws the same permutation of [0, N) from
// (seed, e) (Fisher-Yates over splitmix64, identical on every platform); worker i
// takes the rows at positions i, i + W, i + 2W, ... below W * floor(N / W). The
// N mod W rows left over are skipped in that epoch (a different few each epoch), so
// that every worker has exactly floor(N / W) rows and the same number of batches:
// StepsPerEpoch = ceil(floor(N / W) / batch_size), the last batch possibly smaller.
//
//   ShardedBatches shard(train.features, train.labels, {.batch_size = 32, .seed = 1,
//                                                       .worker = 1, .num_workers = 2});
//   Batch batch;
//   while (...) shard.Next(&batch);   // cycles through epochs without end
//
// Thread safety: a ShardedBatches belongs to one thread; the data tensors it reads
// are shared read-only.
#ifndef ACTORFLOW_TRAINING_DATA_DATA_SHARD_H_
#define ACTORFLOW_TRAINING_DATA_DATA_SHARD_H_

#include <cstdint>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

struct ShardOptions {
  int64_t batch_size = 32;  // >= 1
  uint64_t seed = 0;
  int worker = 0;           // in [0, num_workers)
  int num_workers = 1;      // >= 1, <= the number of rows
};

// The rows (indices into [0, num_rows)) worker `worker` of `num_workers` takes in
// epoch `epoch`, in order. Preconditions as ShardOptions.
std::vector<int64_t> ShardRows(int64_t num_rows, uint64_t seed, int64_t epoch, int worker,
                               int num_workers);

// Batches each worker runs per epoch: ceil(floor(num_rows / num_workers) / batch_size).
int64_t StepsPerEpoch(int64_t num_rows, int num_workers, int64_t batch_size);

// Rows `rows` of `data` (any dtype, rank >= 1) stacked along dim 0.
Tensor GatherRows(const Tensor& data, const std::vector<int64_t>& rows);

struct Batch {
  Tensor features;    // float32 [b, F]
  Tensor labels;      // int32 [b]
  int64_t epoch = 0;  // the epoch the batch belongs to (0-based)
  int64_t step_in_epoch = 0;
};

class ShardedBatches {
 public:
  // features float32 [N, F] and labels int32 [N]. InvalidArgument for other dtypes or
  // ranks, differing N, a batch size < 1, a worker outside [0, num_workers), or fewer
  // rows than workers.
  static StatusOr<ShardedBatches> Create(Tensor features, Tensor labels, const ShardOptions& options);

  // The next batch of this worker's shard; after an epoch's last batch comes the next
  // epoch's first.
  void Next(Batch* batch);
  // Moves past `batches` batches as if Next had returned them (n >= 0): where a
  // restarted worker goes on from.
  void Skip(int64_t batches);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  ShardedBatches(Tensor features, Tensor labels, const ShardOptions& options);

  Tensor features_;
  Tensor labels_;
  ShardOptions options_;
  int64_t steps_per_epoch_ = 0;
  int64_t epoch_ = 0;
  int64_t step_ = 0;  // within the epoch
  std::vector<int64_t> rows_;  // this epoch's shard
};

// Elastic training's data: the workers change, so no worker owns a fixed shard.
// Instead the batches of every epoch form one global sequence: epoch e is the
// permutation of (seed, e) cut into BatchesPerEpoch = ceil(N / batch_size) batches
// (the last one smaller), and global batch g is batch g mod B of epoch g / B. A
// synchronous version with data cursor c (the gradients applied before it) gives the
// batch c + r to its member of rank r (a worker that is not a member yet takes
// c + members); the cursor then moves by the gradients the update averaged. So the
// batches go to whoever is live, and an epoch covers the data once, except the batch
// of a gradient lost with its worker or dropped as stale, whose rows the next
// version's first member trains instead of its own.
//
// Thread safety: one thread; the data tensors are shared read-only.
class ElasticBatches {
 public:
  // As ShardedBatches::Create (with one worker).
  static StatusOr<ElasticBatches> Create(Tensor features, Tensor labels, int64_t batch_size,
                                         uint64_t seed);
  // Global batch `index` (>= 0).
  void At(int64_t index, Batch* batch);
  int64_t batches_per_epoch() const { return batches_per_epoch_; }

 private:
  ElasticBatches(Tensor features, Tensor labels, int64_t batch_size, uint64_t seed);
  Tensor features_;
  Tensor labels_;
  int64_t batch_size_ = 1;
  uint64_t seed_ = 0;
  int64_t batches_per_epoch_ = 1;
  int64_t epoch_ = -1;         // of rows_
  std::vector<int64_t> rows_;  // the permutation of epoch_
};

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_DATA_SHARD_H_
