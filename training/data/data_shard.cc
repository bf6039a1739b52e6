#include "training/data/data_shard.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

namespace actorflow {
namespace {

uint64_t NextSplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Uniform in [0, n) without modulo bias (rejection on the top of the range).
uint64_t UniformBelow(uint64_t n, uint64_t* state) {
  const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % n);
  uint64_t r;
  do {
    r = NextSplitMix64(state);
  } while (r >= limit);
  return r % n;
}

}  // namespace

std::vector<int64_t> ShardRows(int64_t num_rows, uint64_t seed, int64_t epoch, int worker,
                               int num_workers) {
  std::vector<int64_t> order(static_cast<size_t>(num_rows));
  std::iota(order.begin(), order.end(), int64_t{0});
  uint64_t state = seed ^ (0xD1B54A32D192ED03ULL * static_cast<uint64_t>(epoch + 1));
  for (int64_t i = num_rows - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(UniformBelow(static_cast<uint64_t>(i + 1), &state));
    std::swap(order[i], order[j]);
  }
  const int64_t per_worker = num_rows / num_workers;
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(per_worker));
  for (int64_t k = 0; k < per_worker; ++k) rows.push_back(order[k * num_workers + worker]);
  return rows;
}

int64_t StepsPerEpoch(int64_t num_rows, int num_workers, int64_t batch_size) {
  const int64_t per_worker = num_rows / num_workers;
  return (per_worker + batch_size - 1) / batch_size;
}

Tensor GatherRows(const Tensor& data, const std::vector<int64_t>& rows) {
  std::vector<int64_t> dims = data.shape().dims();
  dims[0] = static_cast<int64_t>(rows.size());
  Tensor out(data.dtype(), Shape(dims));
  const size_t row_bytes =
      data.dim(0) == 0 ? 0 : data.TotalBytes() / static_cast<size_t>(data.dim(0));
  const char* in = static_cast<const char*>(data.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(dst + i * row_bytes, in + static_cast<size_t>(rows[i]) * row_bytes, row_bytes);
  }
  return out;
}

StatusOr<ShardedBatches> ShardedBatches::Create(Tensor features, Tensor labels,
                                                const ShardOptions& options) {
  if (features.dtype() != DType::kFloat32 || features.rank() != 2) {
    return InvalidArgument("sharded data: features are " + features.DebugString() +
                           ", expected float32 [N, F]");
  }
  if (labels.dtype() != DType::kInt32 || labels.rank() != 1 || labels.dim(0) != features.dim(0)) {
    return InvalidArgument("sharded data: labels are " + labels.DebugString() +
                           ", expected int32 [" + std::to_string(features.dim(0)) + "]");
  }
  if (options.batch_size < 1) {
    return InvalidArgument("sharded data: batch size " + std::to_string(options.batch_size) +
                           " must be >= 1");
  }
  if (options.num_workers < 1 || options.worker < 0 || options.worker >= options.num_workers) {
    return InvalidArgument("sharded data: worker " + std::to_string(options.worker) +
                           " is outside [0, " + std::to_string(options.num_workers) + ")");
  }
  if (features.dim(0) < options.num_workers) {
    return InvalidArgument("sharded data: " + std::to_string(features.dim(0)) +
                           " rows cannot be shared by " + std::to_string(options.num_workers) +
                           " workers");
  }
  return ShardedBatches(std::move(features), std::move(labels), options);
}

ShardedBatches::ShardedBatches(Tensor features, Tensor labels, const ShardOptions& options)
    : features_(std::move(features)), labels_(std::move(labels)), options_(options) {
  steps_per_epoch_ = StepsPerEpoch(features_.dim(0), options_.num_workers, options_.batch_size);
  rows_ = ShardRows(features_.dim(0), options_.seed, 0, options_.worker, options_.num_workers);
}

void ShardedBatches::Next(Batch* batch) {
  if (step_ == steps_per_epoch_) {
    ++epoch_;
    step_ = 0;
    rows_ = ShardRows(features_.dim(0), options_.seed, epoch_, options_.worker,
                      options_.num_workers);
  }
  const int64_t begin = step_ * options_.batch_size;
  const int64_t end = std::min<int64_t>(begin + options_.batch_size, rows_.size());
  std::vector<int64_t> rows(rows_.begin() + begin, rows_.begin() + end);
  batch->features = GatherRows(features_, rows);
  batch->labels = GatherRows(labels_, rows);
  batch->epoch = epoch_;
  batch->step_in_epoch = step_;
  ++step_;
}

void ShardedBatches::Skip(int64_t batches) {
  if (batches <= 0) return;
  // Position p = epoch * S + step, with step == S standing for "the next epoch".
  const int64_t target = epoch_ * steps_per_epoch_ + step_ + batches;
  const int64_t epoch = (target - 1) / steps_per_epoch_;
  if (epoch != epoch_) {
    epoch_ = epoch;
    rows_ = ShardRows(features_.dim(0), options_.seed, epoch_, options_.worker,
                      options_.num_workers);
  }
  step_ = target - epoch_ * steps_per_epoch_;
}

StatusOr<ElasticBatches> ElasticBatches::Create(Tensor features, Tensor labels,
                                               int64_t batch_size, uint64_t seed) {
  ShardOptions options;
  options.batch_size = batch_size;
  options.seed = seed;
  // The same checks as one worker's shard.
  AF_RETURN_IF_ERROR(ShardedBatches::Create(features, labels, options).status());
  return ElasticBatches(std::move(features), std::move(labels), batch_size, seed);
}

ElasticBatches::ElasticBatches(Tensor features, Tensor labels, int64_t batch_size, uint64_t seed)
    : features_(std::move(features)),
      labels_(std::move(labels)),
      batch_size_(batch_size),
      seed_(seed),
      batches_per_epoch_((features_.dim(0) + batch_size - 1) / batch_size) {}

void ElasticBatches::At(int64_t index, Batch* batch) {
  const int64_t epoch = index / batches_per_epoch_;
  const int64_t step = index % batches_per_epoch_;
  if (epoch != epoch_) {
    rows_ = ShardRows(features_.dim(0), seed_, epoch, 0, 1);
    epoch_ = epoch;
  }
  const int64_t begin = step * batch_size_;
  const int64_t end = std::min<int64_t>(begin + batch_size_, static_cast<int64_t>(rows_.size()));
  const std::vector<int64_t> rows(rows_.begin() + begin, rows_.begin() + end);
  batch->features = GatherRows(features_, rows);
  batch->labels = GatherRows(labels_, rows);
  batch->epoch = epoch;
  batch->step_in_epoch = step;
}

}  // namespace actorflow
