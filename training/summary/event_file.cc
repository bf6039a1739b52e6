#include "training/summary/event_file.h"

#include "training/data/proto_wire.h"

namespace actorflow {
namespace {

using proto_wire::AppendBytesField;
using proto_wire::AppendDoubleField;
using proto_wire::AppendFloatField;
using proto_wire::AppendVarintField;

}  // namespace

std::string EncodeFileVersionEvent(double wall_time) {
  std::string event;
  AppendDoubleField(1, wall_time, &event);
  AppendBytesField(3, kEventFileVersion, &event);
  return event;
}

std::string EncodeScalarsEvent(double wall_time, int64_t step,
                               const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string encoded_value;
    AppendBytesField(1, tag, &encoded_value);
    AppendFloatField(2, value, &encoded_value);
    AppendBytesField(1, encoded_value, &summary);
  }
  std::string event;
  AppendDoubleField(1, wall_time, &event);
  AppendVarintField(2, static_cast<uint64_t>(step), &event);  // int64: two's complement
  AppendBytesField(5, summary, &event);
  return event;
}

}  // namespace actorflow
