// The protobuf wire format, encoded and decoded by hand so that no protobuf library is
// needed: what TFRecord payloads are made of (tf.train.Example, training/data/example.h;
// TensorBoard's Event, training/summary/).
//
// Wire contract: a message is a sequence of fields, each a varint key
// (field number << 3 | wire type) and a value: a varint (0), 8 little-endian bytes (1),
// a varint length and that many bytes (2), or 4 little-endian bytes (5). Groups (3, 4)
// are not supported: a reader meeting one reports a malformed message.
//
// Decoding never trusts its input: every varint and every length is checked against the
// bytes left, so arbitrary bytes give InvalidArgument ("malformed protobuf at byte N:
// ..."), never a read past the end.
//
// Thread safety: the Append functions are pure; a WireReader is a cursor owned by one
// thread.
#ifndef ACTORFLOW_TRAINING_DATA_PROTO_WIRE_H_
#define ACTORFLOW_TRAINING_DATA_PROTO_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "graph/status.h"

namespace actorflow {
namespace proto_wire {

// Wire types.
inline constexpr uint32_t kVarint = 0;
inline constexpr uint32_t kFixed64 = 1;
inline constexpr uint32_t kLengthDelimited = 2;
inline constexpr uint32_t kFixed32 = 5;

// --- Encoding: each appends to *out ---------------------------------------------------

void AppendLittleEndian(uint64_t value, int bytes, std::string* out);
// int64 values go in as their two's complement (10 bytes for a negative one).
void AppendVarint(uint64_t value, std::string* out);
void AppendTag(uint32_t field, uint32_t wire_type, std::string* out);
void AppendVarintField(uint32_t field, uint64_t value, std::string* out);
void AppendBytesField(uint32_t field, std::string_view bytes, std::string* out);
void AppendDoubleField(uint32_t field, double value, std::string* out);
void AppendFloatField(uint32_t field, float value, std::string* out);

// --- Decoding --------------------------------------------------------------------------

// `size` (<= 8) little-endian bytes at `data`. Precondition: they exist.
uint64_t ReadLittleEndian(const char* data, int size);

// A field's key: its number and wire type.
struct FieldKey {
  uint32_t field = 0;
  uint32_t wire_type = 0;
};

// A cursor over one message's bytes. `bytes` must outlive the reader and every view
// LengthDelimited() returns (they point into it).
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}

  bool done() const { return at_ >= bytes_.size(); }
  // Bytes consumed so far: where the next read starts.
  size_t position() const { return at_; }

  // At most 10 bytes; bits past the 64th are dropped, as protobuf does.
  StatusOr<uint64_t> Varint();
  // `size` is 4 or 8.
  StatusOr<uint64_t> Fixed(int size);
  StatusOr<std::string_view> LengthDelimited();
  // A varint key. A key that does not fit in 32 bits is malformed (protobuf's field
  // numbers stop at 2^29 - 1), so it can never alias a small field number.
  StatusOr<FieldKey> Key();
  // Skips the value of a field whose key was just read.
  Status Skip(uint32_t wire_type);

  // InvalidArgument unless `key` has wire type `expected` ("field 2 has wire type 5,
  // expected 0").
  Status ExpectWireType(FieldKey key, uint32_t expected) const;
  // InvalidArgument("malformed protobuf at byte <position>: <what>").
  Status Malformed(const std::string& what) const;

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace proto_wire
}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_PROTO_WIRE_H_
