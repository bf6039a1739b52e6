#include "actors/transport/gather_serializer.h"

#include <cstring>

namespace actorflow {

size_t GatheredBytes::size() const {
  size_t total = head.size();
  for (const Block& b : blocks) total += b.size;
  return total;
}

std::vector<iovec> GatheredBytes::Pieces() const {
  std::vector<iovec> pieces;
  pieces.reserve(2 * blocks.size() + 1);
  size_t from = 0;
  for (const Block& b : blocks) {
    if (b.at > from) pieces.push_back({const_cast<char*>(head.data() + from), b.at - from});
    pieces.push_back({const_cast<char*>(b.data), b.size});
    from = b.at;
  }
  if (head.size() > from) pieces.push_back({const_cast<char*>(head.data() + from), head.size() - from});
  return pieces;
}

GatherSerializer::GatherSerializer(caf::actor_system& system, GatheredBytes* out,
                                   size_t min_block_bytes)
    : caf::serializer(system), out_(out), min_block_bytes_(min_block_bytes),
      inner_(system, out->head) {}

caf::error GatherSerializer::begin_object(uint16_t& nr, std::string& name) {
  return inner_.begin_object(nr, name);
}
caf::error GatherSerializer::end_object() { return inner_.end_object(); }
caf::error GatherSerializer::begin_sequence(size_t& size) { return inner_.begin_sequence(size); }
caf::error GatherSerializer::end_sequence() { return inner_.end_sequence(); }

caf::error GatherSerializer::apply_raw(size_t num_bytes, void* data) {
  if (num_bytes >= min_block_bytes_ && out_->blocks.size() < kMaxBlocks) {
    out_->blocks.push_back({out_->head.size(), static_cast<const char*>(data), num_bytes});
    return caf::none;
  }
  return inner_.apply_raw(num_bytes, data);
}

caf::error GatherSerializer::apply_impl(int8_t& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(uint8_t& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(int16_t& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(uint16_t& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(int32_t& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(uint32_t& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(int64_t& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(uint64_t& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(float& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(double& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(long double& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(std::string& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(std::u16string& x) { return inner_.apply(x); }
caf::error GatherSerializer::apply_impl(std::u32string& x) { return inner_.apply(x); }

}  // namespace actorflow
