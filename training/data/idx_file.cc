#include "training/data/idx_file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "graph/checked_size.h"

namespace actorflow {
namespace {

constexpr size_t kInputChunkBytes = 256 * 1024;
// deflate restores at most 1032 bytes per compressed byte (zlib's technical notes),
// so no gzip file of F bytes holds more than F * 1032: dims that claim more are
// corrupt, and are refused before the allocation they would ask for.
constexpr int64_t kMaxDeflateExpansion = 1032;

Status DataLoss(const std::string& path, const std::string& what) {
  return Internal("data loss: " + path + ": " + what);
}

std::string Hex(uint8_t byte) {
  static const char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 0xF];
}

bool IsKnownElementType(uint8_t type_byte) {
  switch (static_cast<IdxElementType>(type_byte)) {
    case IdxElementType::kUInt8:
    case IdxElementType::kInt8:
    case IdxElementType::kInt16:
    case IdxElementType::kInt32:
    case IdxElementType::kFloat32:
    case IdxElementType::kFloat64:
      return true;
  }
  return false;
}

uint32_t LoadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

uint64_t LoadBigEndian64(const uint8_t* p) {
  return (uint64_t{LoadBigEndian32(p)} << 32) | LoadBigEndian32(p + 4);
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// The bytes of an IDX file in order, inflated when the file is gzipped. Not movable:
// zlib's state points back at stream_.
class IdxByteReader {
 public:
  static StatusOr<std::unique_ptr<IdxByteReader>> Open(const std::string& path);

  ~IdxByteReader() {
    if (gzipped_) inflateEnd(&stream_);
  }
  IdxByteReader(const IdxByteReader&) = delete;
  IdxByteReader& operator=(const IdxByteReader&) = delete;

  // Reads up to `size` bytes into `out`; fewer only at the end of the data, after the
  // gzip stream's CRC was checked. A damaged or cut-short gzip stream is an error.
  StatusOr<size_t> Read(uint8_t* out, size_t size) {
    return gzipped_ ? ReadInflated(out, size) : ReadPlain(out, size);
  }

  bool gzipped() const { return gzipped_; }
  int64_t file_size() const { return file_size_; }
  // The offset of the next byte in the IDX data (after decompression).
  int64_t offset() const { return offset_; }

 private:
  explicit IdxByteReader(std::string path) : path_(std::move(path)) {}

  Status ReadError() const {
    return Internal(path_ + ": read failed after byte offset " + std::to_string(file_offset_) +
                    ": " + std::strerror(errno));
  }

  StatusOr<size_t> ReadPlain(uint8_t* out, size_t size) {
    size_t got = std::fread(out, 1, size, file_.get());
    if (got < size && std::ferror(file_.get())) return ReadError();
    offset_ += static_cast<int64_t>(got);
    file_offset_ += static_cast<int64_t>(got);
    return got;
  }

  // Refills the compressed input once it is used up; avail_in stays 0 at the file's end.
  Status FillInput() {
    size_t got = std::fread(input_.data(), 1, input_.size(), file_.get());
    if (got == 0 && std::ferror(file_.get())) return ReadError();
    stream_.next_in = input_.data();
    stream_.avail_in = static_cast<uInt>(got);
    file_offset_ += static_cast<int64_t>(got);
    return Status::OK();
  }

  // The offset in the file of the next compressed byte inflate will consume.
  int64_t CompressedOffset() const { return file_offset_ - stream_.avail_in; }

  std::string Position() const {
    return "compressed byte offset " + std::to_string(CompressedOffset()) +
           ", decompressed byte offset " + std::to_string(offset_);
  }

  StatusOr<size_t> ReadInflated(uint8_t* out, size_t size) {
    size_t produced = 0;
    while (produced < size) {
      if (stream_.avail_in == 0) AF_RETURN_IF_ERROR(FillInput());
      if (member_ended_) {
        // A complete member followed by the end of the file ends the data; anything
        // else must be another member (concatenated .gz files inflate as one).
        if (stream_.avail_in == 0) break;
        inflateReset(&stream_);
        member_ended_ = false;
      }
      if (stream_.avail_in == 0) {
        return DataLoss(path_, "the gzip stream is cut short: the file ends at byte " +
                                   std::to_string(file_offset_) + " (" + Position() +
                                   ") before the stream's end; the file is truncated");
      }
      size_t want = std::min<size_t>(size - produced, UINT_MAX);
      stream_.next_out = out + produced;
      stream_.avail_out = static_cast<uInt>(want);
      int rc = inflate(&stream_, Z_NO_FLUSH);
      size_t got = want - stream_.avail_out;
      produced += got;
      offset_ += static_cast<int64_t>(got);
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_DATA_ERROR) {
        return DataLoss(path_, std::string("corrupt gzip stream near ") + Position() + ": " +
                                   (stream_.msg ? stream_.msg : "invalid data"));
      } else if (rc == Z_MEM_ERROR) {
        return ResourceExhausted(path_ + ": out of memory inflating the gzip stream");
      } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && stream_.avail_in == 0)) {
        return Internal(path_ + ": inflate failed at " + Position() + " (zlib code " +
                        std::to_string(rc) + ")");
      }
    }
    return produced;
  }

  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  int64_t file_size_ = 0;
  int64_t file_offset_ = 0;  // bytes read from the file so far
  int64_t offset_ = 0;       // bytes handed out by Read so far
  bool gzipped_ = false;
  bool member_ended_ = false;
  z_stream stream_{};
  std::vector<uint8_t> input_;
};

StatusOr<std::unique_ptr<IdxByteReader>> IdxByteReader::Open(const std::string& path) {
  std::unique_ptr<IdxByteReader> reader(new IdxByteReader(path));
  reader->file_.reset(std::fopen(path.c_str(), "rb"));
  if (reader->file_ == nullptr) {
    int error = errno;
    std::string message = path + ": cannot open: " + std::strerror(error);
    if (error == ENOENT || error == ENOTDIR) return NotFound(message);
    if (error == EACCES) return Status(Code::kPermissionDenied, message);
    return Internal(message);
  }
  struct stat info;
  if (fstat(fileno(reader->file_.get()), &info) != 0) return reader->ReadError();
  if (!S_ISREG(info.st_mode)) return InvalidArgument(path + ": not a regular file");
  reader->file_size_ = static_cast<int64_t>(info.st_size);

  uint8_t start[2] = {0, 0};
  size_t got = std::fread(start, 1, 2, reader->file_.get());
  if (got < 2 && std::ferror(reader->file_.get())) return reader->ReadError();
  if (got == 2 && start[0] == 0x1f && start[1] == 0x8b) {
    reader->gzipped_ = true;
    reader->input_.resize(kInputChunkBytes);
    std::memcpy(reader->input_.data(), start, 2);
    reader->stream_.next_in = reader->input_.data();
    reader->stream_.avail_in = 2;
    reader->file_offset_ = 2;
    // 16 + MAX_WBITS: a gzip wrapper only, so a zlib or raw stream is refused.
    if (inflateInit2(&reader->stream_, 16 + MAX_WBITS) != Z_OK) {
      reader->gzipped_ = false;  // nothing for the destructor to end
      return ResourceExhausted(path + ": cannot start inflating the gzip stream");
    }
  } else if (std::fseek(reader->file_.get(), 0, SEEK_SET) != 0) {
    return reader->ReadError();
  }
  return reader;
}

// Fills `out` with exactly `size` bytes of `what`, or says where the data ended.
Status ReadExactly(IdxByteReader& reader, const std::string& path, uint8_t* out, size_t size,
                   const std::string& what) {
  int64_t start = reader.offset();
  AF_ASSIGN_OR_RETURN(size_t got, reader.Read(out, size));
  if (got < size) {
    return DataLoss(path, "the data ends at byte offset " + std::to_string(reader.offset()) +
                              ", inside " + what + " (bytes " + std::to_string(start) + " to " +
                              std::to_string(start + static_cast<int64_t>(size)) +
                              "); the file is truncated");
  }
  return Status::OK();
}

// How many data bytes the file can hold at most: a cheap bound that refuses absurd
// dims before allocating for them.
int64_t MaxDataBytesHeld(const IdxByteReader& reader, int64_t header_bytes) {
  if (!reader.gzipped()) return std::max<int64_t>(0, reader.file_size() - header_bytes);
  int64_t bound = 0;
  if (!CheckedMul(reader.file_size(), kMaxDeflateExpansion, &bound)) return INT64_MAX;
  return bound;
}

// A tensor of `array`'s shape whose element i is convert(the bytes of element i).
template <typename Out, typename Convert>
Tensor ConvertElements(const IdxArray& array, Convert convert) {
  Tensor tensor = Tensor::Uninitialized(DTypeOf<Out>::value, array.shape);
  Out* out = tensor.data<Out>();
  const uint8_t* in = array.data.data();
  const int element_size = IdxElementSize(array.type);
  const int64_t count = tensor.NumElements();
  for (int64_t i = 0; i < count; ++i) out[i] = convert(in + i * element_size);
  return tensor;
}

}  // namespace

const char* IdxElementTypeName(IdxElementType type) {
  switch (type) {
    case IdxElementType::kUInt8: return "uint8";
    case IdxElementType::kInt8: return "int8";
    case IdxElementType::kInt16: return "int16";
    case IdxElementType::kInt32: return "int32";
    case IdxElementType::kFloat32: return "float32";
    case IdxElementType::kFloat64: return "float64";
  }
  return "unknown";
}

int IdxElementSize(IdxElementType type) {
  switch (type) {
    case IdxElementType::kUInt8:
    case IdxElementType::kInt8: return 1;
    case IdxElementType::kInt16: return 2;
    case IdxElementType::kInt32:
    case IdxElementType::kFloat32: return 4;
    case IdxElementType::kFloat64: return 8;
  }
  return 1;
}

StatusOr<IdxArray> ReadIdxFile(const std::string& path, const IdxReadOptions& options) {
  AF_ASSIGN_OR_RETURN(std::unique_ptr<IdxByteReader> reader, IdxByteReader::Open(path));
  uint8_t magic[4];
  AF_RETURN_IF_ERROR(ReadExactly(*reader, path, magic, 4, "the 4-byte magic number"));
  if (magic[0] != 0 || magic[1] != 0) {
    return InvalidArgument(path + ": not an IDX file: it starts with " + Hex(magic[0]) + " " +
                           Hex(magic[1]) + " at byte offset 0, where an IDX file has 0x00 0x00" +
                           (reader->gzipped() ? " (after gunzip)" : ""));
  }
  if (!IsKnownElementType(magic[2])) {
    return InvalidArgument(path + ": unknown IDX element type " + Hex(magic[2]) +
                           " at byte offset 2 (known: 0x08 uint8, 0x09 int8, 0x0b int16, "
                           "0x0c int32, 0x0d float32, 0x0e float64)");
  }
  IdxArray array;
  array.type = static_cast<IdxElementType>(magic[2]);
  const int rank = magic[3];
  std::vector<uint8_t> dim_bytes(static_cast<size_t>(rank) * 4);
  AF_RETURN_IF_ERROR(ReadExactly(*reader, path, dim_bytes.data(), dim_bytes.size(),
                                 "the " + std::to_string(rank) + " dims"));
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) dims[i] = LoadBigEndian32(&dim_bytes[i * 4]);
  array.shape = Shape(std::move(dims));
  const std::string described = "dims " + array.shape.ToString() + " of " +
                                IdxElementTypeName(array.type);

  int64_t elements = 1;
  int64_t data_bytes = 0;
  bool fits = true;
  for (int64_t dim : array.shape.dims()) fits = fits && CheckedMul(elements, dim, &elements);
  fits = fits && CheckedMul(elements, IdxElementSize(array.type), &data_bytes);
  if (!fits) {
    return InvalidArgument(path + ": the " + described +
                           " at byte offset 4 make more bytes than int64 counts: corrupt dims");
  }
  const int64_t header_bytes = 4 + 4 * int64_t{rank};
  if (data_bytes > options.max_data_bytes) {
    return ResourceExhausted(path + ": the " + described + " need " + std::to_string(data_bytes) +
                             " bytes, more than the limit of " +
                             std::to_string(options.max_data_bytes) +
                             " (IdxReadOptions::max_data_bytes)");
  }
  const int64_t held = MaxDataBytesHeld(*reader, header_bytes);
  if (data_bytes > held) {
    if (!reader->gzipped()) {
      return DataLoss(path, "the file is " + std::to_string(reader->file_size()) +
                                " bytes, but its " + described + " need " +
                                std::to_string(data_bytes) + " bytes after the " +
                                std::to_string(header_bytes) + "-byte header (to byte offset " +
                                std::to_string(header_bytes + data_bytes) +
                                "); the file is truncated or its dims are corrupt");
    }
    return InvalidArgument(path + ": the " + described + " need " + std::to_string(data_bytes) +
                           " bytes, more than a gzip file of " +
                           std::to_string(reader->file_size()) +
                           " bytes can hold: corrupt dims");
  }

  try {
    array.data.resize(static_cast<size_t>(data_bytes));
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(path + ": cannot allocate " + std::to_string(data_bytes) +
                             " bytes for the " + described);
  }
  AF_ASSIGN_OR_RETURN(size_t got, reader->Read(array.data.data(), array.data.size()));
  if (static_cast<int64_t>(got) < data_bytes) {
    return DataLoss(path, "the data ends at byte offset " + std::to_string(reader->offset()) +
                              ", but the " + described + " need " + std::to_string(data_bytes) +
                              " bytes after the " + std::to_string(header_bytes) +
                              "-byte header (to byte offset " +
                              std::to_string(header_bytes + data_bytes) +
                              "); the file is truncated");
  }
  uint8_t extra = 0;
  AF_ASSIGN_OR_RETURN(size_t extra_got, reader->Read(&extra, 1));
  if (extra_got != 0) {
    return InvalidArgument(path + ": more data after byte offset " +
                           std::to_string(header_bytes + data_bytes) + ", where the " +
                           described + " end: the dims do not describe the whole file");
  }
  return array;
}

Tensor IdxArrayToTensor(const IdxArray& array) {
  switch (array.type) {
    case IdxElementType::kUInt8:
      return ConvertElements<int32_t>(array, [](const uint8_t* p) { return int32_t{*p}; });
    case IdxElementType::kInt8:
      return ConvertElements<int32_t>(
          array, [](const uint8_t* p) { return int32_t{static_cast<int8_t>(*p)}; });
    case IdxElementType::kInt16:
      return ConvertElements<int32_t>(array, [](const uint8_t* p) {
        return int32_t{static_cast<int16_t>((uint16_t{p[0]} << 8) | p[1])};
      });
    case IdxElementType::kInt32:
      return ConvertElements<int32_t>(
          array, [](const uint8_t* p) { return static_cast<int32_t>(LoadBigEndian32(p)); });
    case IdxElementType::kFloat32:
      return ConvertElements<float>(array, [](const uint8_t* p) {
        uint32_t bits = LoadBigEndian32(p);
        float value;
        std::memcpy(&value, &bits, sizeof value);
        return value;
      });
    case IdxElementType::kFloat64:
      return ConvertElements<double>(array, [](const uint8_t* p) {
        uint64_t bits = LoadBigEndian64(p);
        double value;
        std::memcpy(&value, &bits, sizeof value);
        return value;
      });
  }
  return Tensor();
}

StatusOr<Tensor> ReadIdxTensor(const std::string& path, const IdxReadOptions& options) {
  AF_ASSIGN_OR_RETURN(IdxArray array, ReadIdxFile(path, options));
  try {
    return IdxArrayToTensor(array);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(path + ": cannot allocate a tensor for the dims " +
                             array.shape.ToString());
  }
}

}  // namespace actorflow
