#include "kernels/queue_state.h"

#include <cstring>
#include <utility>

namespace actorflow {
namespace {

// Row i of `t` [n, ...] as a new tensor [...].
Tensor Row(const Tensor& t, int64_t i) {
  std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
  Tensor row(t.dtype(), Shape(dims));
  const size_t bytes = row.TotalBytes();
  if (bytes > 0) {
    std::memcpy(row.raw_data(), static_cast<const char*>(t.raw_data()) + i * bytes, bytes);
  }
  return row;
}

}  // namespace

Status QueueState::ValidateSpec(const QueueSpec& spec) {
  const std::string who = "queue '" + spec.Key() + "'";
  if (spec.name.empty()) return InvalidArgument("a queue needs a non-empty shared_name");
  if (spec.dtypes.empty()) {
    return InvalidArgument(who + " has no component dtypes: an element has at least one");
  }
  if (!spec.shapes.empty() && spec.shapes.size() != spec.dtypes.size()) {
    return InvalidArgument(who + " has " + std::to_string(spec.shapes.size()) + " shapes for " +
                           std::to_string(spec.dtypes.size()) +
                           " components: give one shape per component or none");
  }
  if (spec.capacity == 0 || spec.capacity < -1) {
    return InvalidArgument(who + " has capacity " + std::to_string(spec.capacity) +
                           ": it must be >= 1, or -1 for unbounded");
  }
  if (spec.min_after_dequeue < 0) {
    return InvalidArgument(who + " has min_after_dequeue " +
                           std::to_string(spec.min_after_dequeue) + ": it must be >= 0");
  }
  if (spec.kind == QueueSpec::Kind::kRandomShuffle && spec.capacity > 0 &&
      spec.min_after_dequeue >= spec.capacity) {
    return InvalidArgument(who + " has min_after_dequeue " +
                           std::to_string(spec.min_after_dequeue) + " >= capacity " +
                           std::to_string(spec.capacity) +
                           ": no dequeue could ever complete before the queue is closed");
  }
  return Status::OK();
}

QueueState::QueueState(QueueSpec spec) : spec_(std::move(spec)) {
  if (spec_.seed != 0) {
    rng_.seed(static_cast<uint64_t>(spec_.seed));
  } else {
    rng_.seed(std::random_device{}());
  }
}

std::string QueueState::Name() const { return "queue '" + spec_.Key() + "'"; }

StatusOr<std::deque<QueueState::Element>> QueueState::MakeElements(std::vector<Tensor> components,
                                                                   bool many) const {
  const size_t k = spec_.dtypes.size();
  if (components.size() != k) {
    return InvalidArgument(Name() + " has " + std::to_string(k) + " components but the enqueue gives " +
                           std::to_string(components.size()));
  }
  int64_t n = 1;
  for (size_t i = 0; i < k; ++i) {
    const Tensor& t = components[i];
    const std::string component = "component " + std::to_string(i) + " of " + Name();
    if (!t.IsInitialized()) return InvalidArgument(component + " has no value");
    if (t.dtype() != spec_.dtypes[i]) {
      return InvalidArgument(component + " has dtype " + DTypeName(spec_.dtypes[i]) +
                             ", but the enqueue gives " + DTypeName(t.dtype()));
    }
    Shape element_shape = t.shape();
    if (many) {
      if (t.rank() < 1) {
        return InvalidArgument(component + ": EnqueueMany needs [n, ...], got a scalar");
      }
      if (i == 0) n = t.dim(0);
      if (t.dim(0) != n) {
        return InvalidArgument(component + " holds " + std::to_string(t.dim(0)) +
                               " elements but component 0 holds " + std::to_string(n) +
                               ": EnqueueMany needs the same leading dimension everywhere");
      }
      element_shape = Shape(std::vector<int64_t>(t.shape().dims().begin() + 1, t.shape().dims().end()));
    }
    if (!spec_.shapes.empty() && !spec_.shapes[i].IsCompatibleWith(element_shape)) {
      return InvalidArgument(component + " has shape " + spec_.shapes[i].ToString() +
                             ", but the enqueue gives an element of shape " +
                             element_shape.ToString());
    }
  }
  std::deque<Element> out;
  if (!many) {
    out.push_back(std::move(components));
    return out;
  }
  for (int64_t r = 0; r < n; ++r) {
    Element e;
    e.reserve(k);
    for (size_t i = 0; i < k; ++i) e.push_back(Row(components[i], r));
    out.push_back(std::move(e));
  }
  return out;
}

bool QueueState::HasSpace() const {
  return spec_.capacity < 0 || static_cast<int64_t>(buffer_.size()) < spec_.capacity;
}

bool QueueState::CanTake(int64_t need) const {
  const int64_t have = static_cast<int64_t>(buffer_.size());
  if (have < need) return false;
  if (spec_.kind == QueueSpec::Kind::kFifo || closed_) return true;
  return have - need >= spec_.min_after_dequeue;
}

QueueState::Element QueueState::TakeOne() {
  if (spec_.kind == QueueSpec::Kind::kFifo || buffer_.size() == 1) {
    Element e = std::move(buffer_.front());
    buffer_.pop_front();
    return e;
  }
  std::uniform_int_distribution<size_t> pick(0, buffer_.size() - 1);
  const size_t i = pick(rng_);
  Element e = std::move(buffer_[i]);
  if (i + 1 != buffer_.size()) buffer_[i] = std::move(buffer_.back());
  buffer_.pop_back();
  return e;
}

bool QueueState::Enqueue(RequestId id, std::vector<Tensor> components, bool many,
                         EnqueueDone done) {
  if (closed_) {
    done(Cancelled(Name() + " is closed"));
    return false;
  }
  StatusOr<std::deque<Element>> elements = MakeElements(std::move(components), many);
  if (!elements.ok()) {
    done(elements.status());
    return false;
  }
  if (elements->empty()) {  // EnqueueMany of 0 elements
    done(Status::OK());
    return false;
  }
  enqueues_.push_back(PendingEnqueue{id, std::move(elements).value(), std::move(done)});
  Flush();
  bool waits = false;
  for (const PendingEnqueue& p : enqueues_) waits = waits || p.id == id;
  RunCompleted();
  return waits;
}

bool QueueState::Dequeue(RequestId id, int64_t n, DequeueDone done) {
  if (n >= 0 && spec_.capacity >= 0 && n > spec_.capacity) {
    done(InvalidArgument("DequeueMany(" + std::to_string(n) + ") on " + Name() +
                             " of capacity " + std::to_string(spec_.capacity) +
                             " could never complete: ask for at most the capacity"),
         {});
    return false;
  }
  dequeues_.push_back(PendingDequeue{id, n, std::move(done)});
  Flush();
  bool waits = false;
  for (const PendingDequeue& p : dequeues_) waits = waits || p.id == id;
  RunCompleted();
  return waits;
}

void QueueState::Close(bool cancel_pending_enqueues) {
  closed_ = true;
  if (cancel_pending_enqueues) {
    for (PendingEnqueue& p : enqueues_) {
      completed_.push_back([done = std::move(p.done), name = Name()] {
        done(Cancelled(name + " was closed with cancel_pending_enqueues while the enqueue waited"));
      });
    }
    enqueues_.clear();
  }
  Flush();
  RunCompleted();
}

bool QueueState::Cancel(RequestId id, const Status& status) {
  bool found = false;
  for (auto it = enqueues_.begin(); it != enqueues_.end(); ++it) {
    if (it->id != id) continue;
    completed_.push_back([done = std::move(it->done), status] { done(status); });
    enqueues_.erase(it);
    found = true;
    break;
  }
  for (auto it = dequeues_.begin(); !found && it != dequeues_.end(); ++it) {
    if (it->id != id) continue;
    completed_.push_back([done = std::move(it->done), status] { done(status, {}); });
    dequeues_.erase(it);
    found = true;
    break;
  }
  if (found) Flush();  // a dequeue first in line may have held up the others
  RunCompleted();
  return found;
}

void QueueState::CancelAll(const Status& status) {
  for (PendingEnqueue& p : enqueues_) {
    completed_.push_back([done = std::move(p.done), status] { done(status); });
  }
  for (PendingDequeue& p : dequeues_) {
    completed_.push_back([done = std::move(p.done), status] { done(status, {}); });
  }
  enqueues_.clear();
  dequeues_.clear();
  RunCompleted();
}

void QueueState::Restore(std::vector<Tensor> components, bool many) {
  StatusOr<std::deque<Element>> elements = MakeElements(std::move(components), many);
  if (!elements.ok()) return;  // not this queue's elements: nothing to put back
  for (auto it = elements->rbegin(); it != elements->rend(); ++it) {
    buffer_.push_front(std::move(*it));
  }
  Flush();
  RunCompleted();
}

void QueueState::Flush() {
  bool progress = true;
  while (progress) {
    progress = false;
    while (!enqueues_.empty() && HasSpace()) {
      PendingEnqueue& p = enqueues_.front();
      buffer_.push_back(std::move(p.elements.front()));
      p.elements.pop_front();
      progress = true;
      if (p.elements.empty()) {
        completed_.push_back([done = std::move(p.done)] { done(Status::OK()); });
        enqueues_.pop_front();
      }
    }
    while (!dequeues_.empty()) {
      PendingDequeue& p = dequeues_.front();
      const int64_t need = p.n < 0 ? 1 : p.n;
      if (CanTake(need)) {
        std::vector<Element> taken;
        taken.reserve(static_cast<size_t>(need));
        for (int64_t i = 0; i < need; ++i) taken.push_back(TakeOne());
        if (p.n < 0) {
          completed_.push_back([done = std::move(p.done), e = std::move(taken[0])]() mutable {
            done(Status::OK(), std::move(e));
          });
        } else {
          StatusOr<std::vector<Tensor>> stacked =
              StackElements(taken, spec_.dtypes, spec_.shapes, Name());
          if (!stacked.ok()) {
            // Elements of differing shapes: they stay, the request fails.
            for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
              buffer_.push_front(std::move(*it));
            }
            completed_.push_back(
                [done = std::move(p.done), s = stacked.status()] { done(s, {}); });
          } else {
            completed_.push_back(
                [done = std::move(p.done), out = std::move(stacked).value()]() mutable {
                  done(Status::OK(), std::move(out));
                });
          }
        }
        dequeues_.pop_front();
        progress = true;
      } else if (closed_) {
        completed_.push_back([done = std::move(p.done), name = Name(),
                              have = buffer_.size(), need] {
          done(OutOfRange(name + " is closed and has " + std::to_string(have) +
                          " element(s), fewer than the " + std::to_string(need) +
                          " requested"),
               {});
        });
        dequeues_.pop_front();
        progress = true;
      } else {
        break;
      }
    }
  }
}

void QueueState::RunCompleted() {
  std::vector<std::function<void()>> ready;
  ready.swap(completed_);
  for (auto& fn : ready) fn();
}

StatusOr<std::vector<Tensor>> StackElements(const std::vector<std::vector<Tensor>>& elements,
                                            const std::vector<DType>& dtypes,
                                            const std::vector<Shape>& element_shapes,
                                            const std::string& queue_name) {
  std::vector<Tensor> out;
  const int64_t n = static_cast<int64_t>(elements.size());
  for (size_t c = 0; c < dtypes.size(); ++c) {
    Shape row;
    if (n > 0) {
      row = elements[0][c].shape();
    } else if (c < element_shapes.size() && element_shapes[c].IsFullyDefined()) {
      row = element_shapes[c];
    } else {
      return InvalidArgument("DequeueMany(0) on " + queue_name + ": component " +
                             std::to_string(c) + " has no fully defined shape");
    }
    std::vector<int64_t> dims = {n};
    dims.insert(dims.end(), row.dims().begin(), row.dims().end());
    Tensor stacked(dtypes[c], Shape(dims));
    const size_t bytes = static_cast<size_t>(row.num_elements()) * DTypeSize(dtypes[c]);
    for (int64_t i = 0; i < n; ++i) {
      const Tensor& t = elements[i][c];
      if (t.shape() != row) {
        return InvalidArgument("DequeueMany on " + queue_name + ": component " + std::to_string(c) +
                               " of element " + std::to_string(i) + " has shape " +
                               t.shape().ToString() + " but element 0's is " + row.ToString() +
                               ": give the queue fully defined shapes to batch it");
      }
      if (bytes > 0) {
        std::memcpy(static_cast<char*>(stacked.raw_data()) + i * bytes, t.raw_data(), bytes);
      }
    }
    out.push_back(std::move(stacked));
  }
  return out;
}

}  // namespace actorflow
