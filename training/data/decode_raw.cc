#include "training/data/decode_raw.h"

#include <cstring>

namespace actorflow {
namespace {

// The `size`-byte element at `data` as unsigned bits, in the given byte order.
uint64_t ReadBits(const unsigned char* data, size_t size, bool little_endian) {
  uint64_t bits = 0;
  for (size_t i = 0; i < size; ++i) {
    const size_t byte = little_endian ? size - 1 - i : i;
    bits = (bits << 8) | data[byte];
  }
  return bits;
}

// Fills out[0..n) from the elements of `bytes`; Convert maps an element's bits to Out.
template <typename Out, typename Convert>
void Fill(std::string_view bytes, size_t size, bool little_endian, Out* out, Convert convert) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size() / size;
  for (size_t i = 0; i < n; ++i) out[i] = convert(ReadBits(data + i * size, size, little_endian));
}

}  // namespace

const char* RawTypeName(RawType type) {
  switch (type) {
    case RawType::kUInt8: return "uint8";
    case RawType::kInt8: return "int8";
    case RawType::kUInt16: return "uint16";
    case RawType::kInt16: return "int16";
    case RawType::kInt32: return "int32";
    case RawType::kInt64: return "int64";
    case RawType::kFloat32: return "float32";
    case RawType::kFloat64: return "float64";
  }
  return "unknown";
}

size_t RawTypeSize(RawType type) {
  switch (type) {
    case RawType::kUInt8:
    case RawType::kInt8: return 1;
    case RawType::kUInt16:
    case RawType::kInt16: return 2;
    case RawType::kInt32:
    case RawType::kFloat32: return 4;
    case RawType::kInt64:
    case RawType::kFloat64: return 8;
  }
  return 1;
}

StatusOr<Tensor> DecodeRaw(std::string_view bytes, RawType type, bool little_endian) {
  const size_t size = RawTypeSize(type);
  if (bytes.size() % size != 0) {
    return InvalidArgument("DecodeRaw: " + std::to_string(bytes.size()) +
                           " bytes are not a whole number of " + RawTypeName(type) +
                           " elements of " + std::to_string(size) + " bytes");
  }
  const Shape shape{static_cast<int64_t>(bytes.size() / size)};
  switch (type) {
    case RawType::kUInt8:
    case RawType::kUInt16:
    case RawType::kInt32: {
      Tensor t(DType::kInt32, shape);
      Fill(bytes, size, little_endian, t.data<int32_t>(),
           [](uint64_t bits) { return static_cast<int32_t>(static_cast<uint32_t>(bits)); });
      return t;
    }
    case RawType::kInt8: {
      Tensor t(DType::kInt32, shape);
      Fill(bytes, size, little_endian, t.data<int32_t>(),
           [](uint64_t bits) { return int32_t{static_cast<int8_t>(bits)}; });
      return t;
    }
    case RawType::kInt16: {
      Tensor t(DType::kInt32, shape);
      Fill(bytes, size, little_endian, t.data<int32_t>(),
           [](uint64_t bits) { return int32_t{static_cast<int16_t>(bits)}; });
      return t;
    }
    case RawType::kInt64: {
      Tensor t(DType::kInt64, shape);
      Fill(bytes, size, little_endian, t.data<int64_t>(),
           [](uint64_t bits) { return static_cast<int64_t>(bits); });
      return t;
    }
    case RawType::kFloat32: {
      Tensor t(DType::kFloat32, shape);
      Fill(bytes, size, little_endian, t.data<float>(), [](uint64_t bits) {
        const auto bits32 = static_cast<uint32_t>(bits);
        float value = 0;
        std::memcpy(&value, &bits32, sizeof(value));
        return value;
      });
      return t;
    }
    case RawType::kFloat64: {
      Tensor t(DType::kFloat64, shape);
      Fill(bytes, size, little_endian, t.data<double>(), [](uint64_t bits) {
        double value = 0;
        std::memcpy(&value, &bits, sizeof(value));
        return value;
      });
      return t;
    }
  }
  return InvalidArgument("DecodeRaw: unknown element type");
}

Tensor BytesToTensor(std::string_view bytes) {
  Tensor t(kByteDType, Shape{static_cast<int64_t>(bytes.size())});
  auto* out = t.data<int32_t>();
  for (size_t i = 0; i < bytes.size(); ++i) out[i] = static_cast<unsigned char>(bytes[i]);
  return t;
}

StatusOr<std::string> TensorToBytes(const Tensor& tensor) {
  if (!tensor.IsInitialized() || tensor.IsOnDevice() || tensor.dtype() != kByteDType ||
      tensor.rank() != 1) {
    return InvalidArgument("expected bytes as a host " + std::string(DTypeName(kByteDType)) +
                           " vector, got " + tensor.DebugString());
  }
  std::string bytes(static_cast<size_t>(tensor.NumElements()), '\0');
  const int32_t* in = tensor.data<int32_t>();
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (in[i] < 0 || in[i] > 255) {
      return InvalidArgument("element " + std::to_string(i) + " of " + tensor.DebugString() +
                             " is " + std::to_string(in[i]) + ", not a byte (0..255)");
    }
    bytes[i] = static_cast<char>(in[i]);
  }
  return bytes;
}

}  // namespace actorflow
