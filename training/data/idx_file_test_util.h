// Helpers shared by the IDX tests (idx_file_test.cc, idx_file_dataset_test.cc): IDX
// bytes built by hand, gzip through zlib, and files written into the test's scratch
// space.
#ifndef ACTORFLOW_TRAINING_DATA_IDX_FILE_TEST_UTIL_H_
#define ACTORFLOW_TRAINING_DATA_IDX_FILE_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/test_files.h"

namespace actorflow {

// An IDX header (magic with `type_byte`, then each dim big-endian) followed by `data`.
inline std::string IdxBytes(uint8_t type_byte, const std::vector<uint32_t>& dims,
                            const std::string& data) {
  std::string bytes = {'\0', '\0', static_cast<char>(type_byte), static_cast<char>(dims.size())};
  for (uint32_t dim : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>((dim >> shift) & 0xFF);
  }
  return bytes + data;
}

// A uint8 IDX file of `values` with `dims`.
inline std::string IdxUint8(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values) {
  return IdxBytes(0x08, dims, std::string(values.begin(), values.end()));
}

// `data` as one gzip member (what gzip(1) writes), by zlib's deflate.
inline std::string Gzip(const std::string& data) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                         Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&stream, data.size()) + 64, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(&out[0]);
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// Writes `contents` to a fresh file named `name` in the scratch space; its path.
inline std::string WriteScratchFile(const std::string& name, const std::string& contents) {
  static const std::string dir = NewTestTempDir("idx");
  std::string path = dir + "/" + name;
  EXPECT_TRUE(WriteTestFile(path, contents)) << path;
  return path;
}

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_IDX_FILE_TEST_UTIL_H_
