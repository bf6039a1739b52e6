#include "kernels/accumulator_state.h"

#include <utility>

namespace actorflow {
namespace {

// sum [n] += g [n], in the accumulator's dtype.
template <typename T>
void AddInto(Tensor& sum, const Tensor& g) {
  T* out = sum.data<T>();
  const T* in = g.data<T>();
  const int64_t n = sum.NumElements();
  for (int64_t i = 0; i < n; ++i) out[i] += in[i];
}

// sum [n] / count, as a new tensor of sum's dtype and shape.
template <typename T>
Tensor Average(const Tensor& sum, int64_t count) {
  Tensor out = Tensor::Uninitialized(sum.dtype(), sum.shape());
  const T* in = sum.data<T>();
  T* avg = out.data<T>();
  const T divisor = static_cast<T>(count);
  const int64_t n = sum.NumElements();
  for (int64_t i = 0; i < n; ++i) avg[i] = in[i] / divisor;
  return out;
}

}  // namespace

Status AccumulatorState::ValidateSpec(const QueueSpec& spec) {
  if (!spec.is_accumulator()) {
    return InvalidArgument(spec.DebugString() + " is not a ConditionalAccumulator");
  }
  const std::string who = "accumulator '" + spec.Key() + "'";
  if (spec.name.empty()) return InvalidArgument("an accumulator needs a non-empty shared_name");
  if (spec.dtypes.size() != 1 || spec.shapes.size() != 1) {
    return InvalidArgument(who + " has " + std::to_string(spec.dtypes.size()) + " dtypes and " +
                           std::to_string(spec.shapes.size()) +
                           " shapes: an accumulator has exactly one of each");
  }
  if (spec.dtypes[0] != DType::kFloat32 && spec.dtypes[0] != DType::kFloat64) {
    return InvalidArgument(who + " has dtype " + DTypeName(spec.dtypes[0]) +
                           ": gradients are float32 or float64");
  }
  return spec.shapes[0].CheckRankLimit();
}

AccumulatorState::AccumulatorState(QueueSpec spec)
    : spec_(std::move(spec)), dtype_(spec_.dtypes.at(0)), shape_(spec_.shapes.at(0)) {}

std::string AccumulatorState::Name() const { return "accumulator '" + spec_.Key() + "'"; }

Status AccumulatorState::ApplyGradient(int64_t local_step, const Tensor& gradient,
                                       bool* dropped) {
  if (!gradient.IsInitialized() || gradient.IsOnDevice()) {
    return InvalidArgument("the gradient applied to " + Name() +
                           " has no value in host memory");
  }
  if (gradient.dtype() != dtype_) {
    return InvalidArgument(Name() + " accumulates " + DTypeName(dtype_) +
                           " gradients, but the gradient applied is " +
                           DTypeName(gradient.dtype()));
  }
  if (!shape_.IsCompatibleWith(gradient.shape())) {
    return InvalidArgument(Name() + " accumulates gradients of shape " + shape_.ToString() +
                           ", but the gradient applied has shape " +
                           gradient.shape().ToString());
  }
  Changed();
  const bool stale = local_step < global_step_;
  if (dropped != nullptr) *dropped = stale;
  if (stale) {
    ++dropped_;
    return Status::OK();
  }
  shape_ = gradient.shape();  // compatible and fully defined: fixes the unknown dims
  if (count_ == 0) {
    sum_ = gradient.DeepCopy();  // never write into an input
  } else if (dtype_ == DType::kFloat32) {
    AddInto<float>(sum_, gradient);
  } else {
    AddInto<double>(sum_, gradient);
  }
  ++count_;
  Flush();
  RunCompleted();
  return Status::OK();
}

bool AccumulatorState::TakeGradient(RequestId id, int64_t num_required, TakeDone done) {
  if (num_required < 1) {
    done(InvalidArgument("TakeGradient on " + Name() + " asks for " +
                             std::to_string(num_required) +
                             " gradients: num_required must be >= 1"),
         Tensor(), 0);
    return false;
  }
  takes_.push_back(PendingTake{id, num_required, std::move(done)});
  Flush();
  bool waits = false;
  for (const PendingTake& p : takes_) waits = waits || p.id == id;
  RunCompleted();
  return waits;
}

void AccumulatorState::SetGlobalStep(int64_t new_global_step) {
  Changed();
  global_step_ = new_global_step;
}

bool AccumulatorState::Cancel(RequestId id, const Status& status) {
  bool found = false;
  for (auto it = takes_.begin(); it != takes_.end(); ++it) {
    if (it->id != id) continue;
    completed_.push_back([done = std::move(it->done), status] { done(status, Tensor(), 0); });
    takes_.erase(it);
    found = true;
    break;
  }
  if (found) Flush();  // a take first in line may have held up the others
  RunCompleted();
  return found;
}

void AccumulatorState::CancelAll(const Status& status) {
  for (PendingTake& p : takes_) {
    completed_.push_back([done = std::move(p.done), status] { done(status, Tensor(), 0); });
  }
  takes_.clear();
  RunCompleted();
}

bool AccumulatorState::RestoreTake(uint64_t take_id) {
  if (take_id == 0) return false;
  if (!last_take_.has_value() || last_take_->take_id != take_id ||
      last_take_->version != version_) {
    ++lost_;
    last_take_.reset();
    return false;
  }
  LastTake taken = std::move(*last_take_);
  last_take_.reset();
  ++version_;
  sum_ = std::move(taken.sum);
  count_ = taken.count;
  global_step_ = taken.global_step;
  Flush();  // a take waiting since may be served by what came back
  RunCompleted();
  return true;
}

void AccumulatorState::Changed() {
  ++version_;
  last_take_.reset();
}

void AccumulatorState::Flush() {
  while (!takes_.empty() && count_ >= takes_.front().num_required) {
    PendingTake p = std::move(takes_.front());
    takes_.pop_front();
    Tensor average = dtype_ == DType::kFloat32 ? Average<float>(sum_, count_)
                                               : Average<double>(sum_, count_);
    const uint64_t take_id = next_take_id_++;
    ++version_;
    last_take_ = LastTake{take_id, version_, std::move(sum_), count_, global_step_};
    sum_ = Tensor();
    count_ = 0;
    ++global_step_;
    completed_.push_back(
        [done = std::move(p.done), average = std::move(average), take_id]() mutable {
          done(Status::OK(), std::move(average), take_id);
        });
  }
}

void AccumulatorState::RunCompleted() {
  std::vector<std::function<void()>> ready;
  ready.swap(completed_);
  for (auto& fn : ready) fn();
}

}  // namespace actorflow
