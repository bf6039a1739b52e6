#include "kernels/queue_service.h"

namespace actorflow {
namespace {

const char* KindName(QueueSpec::Kind kind) {
  return kind == QueueSpec::Kind::kFifo ? "FIFOQueue" : "RandomShuffleQueue";
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
  out += " (" + Components(*this) + ", capacity " +
         (capacity < 0 ? std::string("unbounded") : std::to_string(capacity));
  if (kind == Kind::kRandomShuffle) {
    out += ", min_after_dequeue " + std::to_string(min_after_dequeue) + ", seed " +
           std::to_string(seed);
  }
  return out + ")";
}

Status QueueSpec::CheckSame(const QueueSpec& other) const {
  std::string what;
  if (kind != other.kind) {
    what = "its kind";
  } else if (dtypes != other.dtypes) {
    what = "its component dtypes";
  } else if (shapes != other.shapes) {
    what = "its component shapes";
  } else if (capacity != other.capacity) {
    what = "its capacity";
  } else if (kind == Kind::kRandomShuffle && min_after_dequeue != other.min_after_dequeue) {
    what = "its min_after_dequeue";
  } else if (kind == Kind::kRandomShuffle && seed != other.seed) {
    what = "its seed";
  }
  if (what.empty()) return Status::OK();
  return InvalidArgument("queue '" + Key() + "' already exists as " + DebugString() +
                         "; a node asks for " + other.DebugString() + ", which differs in " +
                         what + ": use another shared_name or the same parameters");
}

}  // namespace actorflow
