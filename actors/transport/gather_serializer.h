// A value as CAF's binary serializer writes it, with its large raw blocks (a tensor's
// bytes: wire_core.h writes them with one apply_raw) left where they are.
//
// Why: a step channel frame carrying a 16 MiB feed was copied whole into a growing
// buffer on every step (fresh pages, faulted in, then the kernel's copy into the
// socket): 0.2 GB/s for a fed 16 MiB tensor against 1.4 GB/s at 1 MiB. Gathered, a
// block goes from the tensor's own buffer to the socket in one sendmsg.
//
// Contract: the bytes of head and blocks, laid out in order (each block inserted at
// its offset in head), are exactly those caf::binary_serializer writes for the value;
// a reader decodes them with caf::binary_deserializer unchanged. A block points into
// the serialized value: the value must outlive every use of the gathered bytes.
//
// Includes CAF: actors/*.cc only.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_GATHER_SERIALIZER_H_
#define ACTORFLOW_ACTORS_TRANSPORT_GATHER_SERIALIZER_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/binary_serializer.hpp>
#include <caf/serializer.hpp>

namespace actorflow {

struct GatheredBytes {
  struct Block {
    size_t at;  // offset in head before which the block goes
    const char* data;
    size_t size;
  };
  std::vector<char> head;
  std::vector<Block> blocks;

  size_t size() const;
  // The bytes in order, as iovecs: head's pieces and the blocks between them.
  std::vector<iovec> Pieces() const;
};

class GatherSerializer final : public caf::serializer {
 public:
  // Raw blocks of at least this many bytes are referenced, not copied.
  static constexpr size_t kMinBlockBytes = size_t{64} << 10;
  // No more blocks than this are referenced (a sendmsg takes at most IOV_MAX
  // pieces); the rest are copied.
  static constexpr size_t kMaxBlocks = 256;

  // Appends to out->head (which may already hold a prefix) and out->blocks.
  GatherSerializer(caf::actor_system& system, GatheredBytes* out,
                   size_t min_block_bytes = kMinBlockBytes);

  caf::error begin_object(uint16_t& nr, std::string& name) override;
  caf::error end_object() override;
  caf::error begin_sequence(size_t& size) override;
  caf::error end_sequence() override;
  caf::error apply_raw(size_t num_bytes, void* data) override;

 protected:
  caf::error apply_impl(int8_t& x) override;
  caf::error apply_impl(uint8_t& x) override;
  caf::error apply_impl(int16_t& x) override;
  caf::error apply_impl(uint16_t& x) override;
  caf::error apply_impl(int32_t& x) override;
  caf::error apply_impl(uint32_t& x) override;
  caf::error apply_impl(int64_t& x) override;
  caf::error apply_impl(uint64_t& x) override;
  caf::error apply_impl(float& x) override;
  caf::error apply_impl(double& x) override;
  caf::error apply_impl(long double& x) override;
  caf::error apply_impl(std::string& x) override;
  caf::error apply_impl(std::u16string& x) override;
  caf::error apply_impl(std::u32string& x) override;

 private:
  GatheredBytes* out_;
  const size_t min_block_bytes_;
  // Writes every byte that is not a referenced block, in order, into out_->head.
  caf::binary_serializer inner_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_GATHER_SERIALIZER_H_
