#include "training/summary/event_file.h"

#include <array>
#include <cstring>

namespace actorflow {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
    table[i] = crc;
  }
  return table;
}

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

void AppendBytesField(uint32_t field, const std::string& bytes, std::string* out) {
  AppendTag(field, kLengthDelimited, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes);
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

}  // namespace

uint32_t Crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> kTable = MakeCrc32cTable();
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string FrameRecord(const std::string& data) {
  std::string record;
  record.reserve(data.size() + 16);
  AppendLittleEndian(data.size(), 8, &record);
  AppendLittleEndian(MaskCrc(Crc32c(record.data(), 8)), 4, &record);
  record.append(data);
  AppendLittleEndian(MaskCrc(Crc32c(data.data(), data.size())), 4, &record);
  return record;
}

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
  AppendTag(2, kVarint, &event);
  AppendVarint(static_cast<uint64_t>(step), &event);  // int64: two's complement varint
  AppendBytesField(5, summary, &event);
  return event;
}

}  // namespace actorflow
