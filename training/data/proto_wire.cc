#include "training/data/proto_wire.h"

#include <cstring>

namespace actorflow {
namespace proto_wire {

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void AppendTag(uint32_t field, uint32_t wire_type, std::string* out) {
  AppendVarint((static_cast<uint64_t>(field) << 3) | wire_type, out);
}

void AppendVarintField(uint32_t field, uint64_t value, std::string* out) {
  AppendTag(field, kVarint, out);
  AppendVarint(value, out);
}

void AppendBytesField(uint32_t field, std::string_view bytes, std::string* out) {
  AppendTag(field, kLengthDelimited, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

void AppendDoubleField(uint32_t field, double value, std::string* out) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  AppendTag(field, kFixed64, out);
  AppendLittleEndian(bits, 8, out);
}

void AppendFloatField(uint32_t field, float value, std::string* out) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  AppendTag(field, kFixed32, out);
  AppendLittleEndian(bits, 4, out);
}

uint64_t ReadLittleEndian(const char* data, int size) {
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(data[i]);
  return value;
}

StatusOr<uint64_t> WireReader::Varint() {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at_ >= bytes_.size()) return Malformed("varint runs past the end");
    const auto byte = static_cast<unsigned char>(bytes_[at_++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  return Malformed("varint longer than 10 bytes");
}

StatusOr<uint64_t> WireReader::Fixed(int size) {
  if (bytes_.size() - at_ < static_cast<size_t>(size)) {
    return Malformed("fixed" + std::to_string(8 * size) + " runs past the end");
  }
  const uint64_t value = ReadLittleEndian(bytes_.data() + at_, size);
  at_ += size;
  return value;
}

StatusOr<std::string_view> WireReader::LengthDelimited() {
  AF_ASSIGN_OR_RETURN(uint64_t length, Varint());
  if (length > bytes_.size() - at_) {
    return Malformed("length " + std::to_string(length) + " runs past the end");
  }
  std::string_view value = bytes_.substr(at_, static_cast<size_t>(length));
  at_ += static_cast<size_t>(length);
  return value;
}

StatusOr<FieldKey> WireReader::Key() {
  AF_ASSIGN_OR_RETURN(uint64_t key, Varint());
  if (key > 0xFFFFFFFFu) return Malformed("field key " + std::to_string(key) + " out of range");
  return FieldKey{static_cast<uint32_t>(key >> 3), static_cast<uint32_t>(key & 7)};
}

Status WireReader::Skip(uint32_t wire_type) {
  switch (wire_type) {
    case kVarint: return Varint().status();
    case kFixed64: return Fixed(8).status();
    case kLengthDelimited: return LengthDelimited().status();
    case kFixed32: return Fixed(4).status();
    default: return Malformed("unsupported wire type " + std::to_string(wire_type));
  }
}

Status WireReader::ExpectWireType(FieldKey key, uint32_t expected) const {
  if (key.wire_type == expected) return Status::OK();
  return Malformed("field " + std::to_string(key.field) + " has wire type " +
                   std::to_string(key.wire_type) + ", expected " + std::to_string(expected));
}

Status WireReader::Malformed(const std::string& what) const {
  return InvalidArgument("malformed protobuf at byte " + std::to_string(at_) + ": " + what);
}

}  // namespace proto_wire
}  // namespace actorflow
