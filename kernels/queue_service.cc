#include "kernels/queue_service.h"

namespace actorflow {
namespace {

const char* KindName(QueueSpec::Kind kind) {
  switch (kind) {
    case QueueSpec::Kind::kFifo: return "FIFOQueue";
    case QueueSpec::Kind::kRandomShuffle: return "RandomShuffleQueue";
    case QueueSpec::Kind::kConditionalAccumulator: return "ConditionalAccumulator";
  }
  return "queue";
}

Status NoAccumulators(const QueueRef& accumulator) {
  return Unimplemented("accumulator '" + accumulator.Key() +
                       "': this runtime has no ConditionalAccumulators; run the graph in the "
                       "actor runtime (NewSession with target \"\" or actorflow://host:port)");
}

std::string Components(const QueueSpec& spec) {
  std::string out;
  for (size_t i = 0; i < spec.dtypes.size(); ++i) {
    if (i > 0) out += ", ";
    out += DTypeName(spec.dtypes[i]);
    if (i < spec.shapes.size()) out += " " + spec.shapes[i].ToString();
  }
  return out;
}

}  // namespace

std::string QueueSpec::DebugString() const {
  std::string out = std::string(KindName(kind)) + " '" + name + "'";
  if (!container.empty()) out += " in container '" + container + "'";
  if (is_accumulator()) return out + " (" + Components(*this) + ")";
  out += " (" + Components(*this) + ", capacity " +
         (capacity < 0 ? std::string("unbounded") : std::to_string(capacity));
  if (kind == Kind::kRandomShuffle) {
    out += ", min_after_dequeue " + std::to_string(min_after_dequeue) + ", seed " +
           std::to_string(seed);
  }
  return out + ")";
}

Status QueueSpec::CheckSame(const QueueSpec& other) const {
  const bool queue = !is_accumulator();  // the other parameters are a queue's
  std::string what;
  if (kind != other.kind) {
    what = "its kind";
  } else if (dtypes != other.dtypes) {
    what = queue ? "its component dtypes" : "its dtype";
  } else if (shapes != other.shapes) {
    what = queue ? "its component shapes" : "its shape";
  } else if (queue && capacity != other.capacity) {
    what = "its capacity";
  } else if (kind == Kind::kRandomShuffle && min_after_dequeue != other.min_after_dequeue) {
    what = "its min_after_dequeue";
  } else if (kind == Kind::kRandomShuffle && seed != other.seed) {
    what = "its seed";
  }
  if (what.empty()) return Status::OK();
  return InvalidArgument(std::string(queue ? "queue '" : "accumulator '") + Key() +
                         "' already exists as " + DebugString() + "; a node asks for " +
                         other.DebugString() + ", which differs in " + what +
                         ": use another shared_name or the same parameters");
}

void QueueService::AccumulatorApplyGradient(int64_t, const QueueRef& accumulator, int64_t, Tensor,
                                            StatusCallback done) {
  done(NoAccumulators(accumulator));
}

void QueueService::AccumulatorTakeGradient(int64_t, const QueueRef& accumulator, int64_t, int64_t,
                                           GradientCallback done) {
  done(NoAccumulators(accumulator), Tensor());
}

void QueueService::AccumulatorSetGlobalStep(int64_t, const QueueRef& accumulator, int64_t,
                                            StatusCallback done) {
  done(NoAccumulators(accumulator));
}

void QueueService::ReadAccumulatorCounts(int64_t, const QueueRef& accumulator,
                                         CountsCallback done) {
  done(NoAccumulators(accumulator), AccumulatorCounts());
}

}  // namespace actorflow
