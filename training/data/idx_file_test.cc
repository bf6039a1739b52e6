#include "training/data/idx_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "graph/status_testing.h"
#include "training/data/idx_file_test_util.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

std::vector<int32_t> Int32Values(const Tensor& t) {
  return std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + t.NumElements());
}

// uint8 [2, 2, 3]: 0, 1, ..., 10, 255.
const std::vector<uint8_t> kPixels = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};
const std::string kImagesIdx = IdxUint8({2, 2, 3}, kPixels);

TEST(IdxFileTest, ReadsPlainUint8FileWithItsShapeAndBytes) {
  std::string path = WriteScratchFile("plain.idx", kImagesIdx);
  ASSERT_OK_AND_ASSIGN(IdxArray array, ReadIdxFile(path));
  EXPECT_EQ(array.type, IdxElementType::kUInt8);
  EXPECT_EQ(array.shape, (Shape{2, 2, 3}));
  EXPECT_EQ(array.data, kPixels);
}

TEST(IdxFileTest, ReadsGzippedFileLikeThePlainOne) {
  std::string gzipped = Gzip(kImagesIdx);
  ASSERT_EQ(static_cast<uint8_t>(gzipped[0]), 0x1f);
  std::string path = WriteScratchFile("images.idx.gz", gzipped);
  ASSERT_OK_AND_ASSIGN(IdxArray array, ReadIdxFile(path));
  EXPECT_EQ(array.shape, (Shape{2, 2, 3}));
  EXPECT_EQ(array.data, kPixels);
}

TEST(IdxFileTest, ReadsConcatenatedGzipMembersAsOneStream) {
  std::string path = WriteScratchFile(
      "two_members.idx.gz", Gzip(kImagesIdx.substr(0, 10)) + Gzip(kImagesIdx.substr(10)));
  ASSERT_OK_AND_ASSIGN(IdxArray array, ReadIdxFile(path));
  EXPECT_EQ(array.data, kPixels);
}

TEST(IdxFileTest, ReadsALargeGzippedFileAcrossManyInputChunks) {
  // 1 MiB of pseudo-random pixels compresses poorly, so the reader refills its
  // compressed input many times.
  std::vector<uint8_t> pixels(1 << 20);
  uint32_t state = 12345;
  for (uint8_t& p : pixels) p = static_cast<uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
  std::string path = WriteScratchFile("large.idx.gz", Gzip(IdxUint8({256, 64, 64}, pixels)));
  ASSERT_OK_AND_ASSIGN(IdxArray array, ReadIdxFile(path));
  EXPECT_EQ(array.shape, (Shape{256, 64, 64}));
  EXPECT_EQ(array.data, pixels);
}

TEST(IdxFileTest, TensorWidensUint8ToInt32OfTheFilesShape) {
  std::string path = WriteScratchFile("tensor.idx", kImagesIdx);
  ASSERT_OK_AND_ASSIGN(Tensor t, ReadIdxTensor(path));
  EXPECT_EQ(t.dtype(), DType::kInt32);
  EXPECT_EQ(t.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(Int32Values(t), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255}));
}

TEST(IdxFileTest, SignExtendsInt8AndReadsBigEndianInt16AndInt32) {
  std::string int8 = WriteScratchFile("int8.idx", IdxBytes(0x09, {3}, "\x80\xff\x7f"));
  ASSERT_OK_AND_ASSIGN(Tensor t8, ReadIdxTensor(int8));
  EXPECT_EQ(Int32Values(t8), (std::vector<int32_t>{-128, -1, 127}));

  std::string int16 =
      WriteScratchFile("int16.idx", IdxBytes(0x0B, {2}, std::string("\x01\x02\xff\xfe", 4)));
  ASSERT_OK_AND_ASSIGN(Tensor t16, ReadIdxTensor(int16));
  EXPECT_EQ(Int32Values(t16), (std::vector<int32_t>{0x0102, -2}));

  std::string int32 = WriteScratchFile(
      "int32.idx", IdxBytes(0x0C, {1, 2}, std::string("\x01\x02\x03\x04\xff\xff\xff\xfd", 8)));
  ASSERT_OK_AND_ASSIGN(Tensor t32, ReadIdxTensor(int32));
  EXPECT_EQ(t32.shape(), (Shape{1, 2}));
  EXPECT_EQ(Int32Values(t32), (std::vector<int32_t>{0x01020304, -3}));
}

TEST(IdxFileTest, ReadsBigEndianFloat32AndFloat64) {
  // 1.5f is 0x3FC00000; -2.0 is 0xC000000000000000.
  std::string f32 = WriteScratchFile(
      "f32.idx", IdxBytes(0x0D, {2}, std::string("\x3f\xc0\x00\x00\x00\x00\x00\x00", 8)));
  ASSERT_OK_AND_ASSIGN(Tensor t32, ReadIdxTensor(f32));
  ASSERT_EQ(t32.dtype(), DType::kFloat32);
  EXPECT_EQ(t32.data<float>()[0], 1.5f);
  EXPECT_EQ(t32.data<float>()[1], 0.0f);

  std::string f64 =
      WriteScratchFile("f64.idx", IdxBytes(0x0E, {1}, std::string("\xc0\0\0\0\0\0\0\0", 8)));
  ASSERT_OK_AND_ASSIGN(Tensor t64, ReadIdxTensor(f64));
  ASSERT_EQ(t64.dtype(), DType::kFloat64);
  EXPECT_EQ(t64.data<double>()[0], -2.0);
}

TEST(IdxFileTest, ReadsAnEmptyArrayWhenADimIsZero) {
  std::string path = WriteScratchFile("empty.idx", IdxUint8({0, 28, 28}, {}));
  ASSERT_OK_AND_ASSIGN(Tensor t, ReadIdxTensor(path));
  EXPECT_EQ(t.shape(), (Shape{0, 28, 28}));
}

// --- Bad input: every error names the file --------------------------------------------

TEST(IdxFileTest, MissingFileIsNotFoundNamingThePath) {
  std::string path = TestTempPath("no_such_dir/no_such.idx");
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr(path));
}

TEST(IdxFileTest, DirectoryIsRefused) {
  std::string dir = NewTestTempDir("idx_dir");
  StatusOr<IdxArray> result = ReadIdxFile(dir);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(dir));
}

TEST(IdxFileTest, WrongMagicNamesTheFileAndOffset) {
  std::string bytes = kImagesIdx;
  bytes[1] = 0x08;  // 0x00 0x08 0x03 ...: not 0x00 0x00
  std::string path = WriteScratchFile("bad_magic.idx", bytes);
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(path));
  EXPECT_THAT(result.status().message(), HasSubstr("not an IDX file"));
  EXPECT_THAT(result.status().message(), HasSubstr("0x00 0x08 at byte offset 0"));
}

TEST(IdxFileTest, TextFileIsNotAnIdxFile) {
  std::string path = WriteScratchFile("text.csv", "a,b,c\n1,2,3\n");
  EXPECT_EQ(ReadIdxFile(path).status().code(), Code::kInvalidArgument);
}

TEST(IdxFileTest, UnknownElementTypeIsNamed) {
  std::string path = WriteScratchFile("type07.idx", IdxBytes(0x07, {1}, "x"));
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(path));
  EXPECT_THAT(result.status().message(), HasSubstr("element type 0x07 at byte offset 2"));
}

TEST(IdxFileTest, EmptyFileAndCutHeaderAreDataLoss) {
  std::string empty = WriteScratchFile("empty_file.idx", "");
  StatusOr<IdxArray> result = ReadIdxFile(empty);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + empty));
  EXPECT_THAT(result.status().message(), HasSubstr("magic number"));

  // The header says 3 dims, the file stops inside the second one.
  std::string cut = WriteScratchFile("cut_header.idx", kImagesIdx.substr(0, 10));
  result = ReadIdxFile(cut);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr(cut));
  EXPECT_THAT(result.status().message(), HasSubstr("ends at byte offset 10, inside the 3 dims"));
}

TEST(IdxFileTest, PlainFileShorterThanItsDimsIsDataLossNamingOffsets) {
  // 16-byte header + 12 pixels, minus the last 2 pixels.
  std::string path = WriteScratchFile("short.idx", kImagesIdx.substr(0, kImagesIdx.size() - 2));
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + path));
  EXPECT_THAT(result.status().message(), HasSubstr("the file is 26 bytes"));
  EXPECT_THAT(result.status().message(), HasSubstr("to byte offset 28"));
}

TEST(IdxFileTest, GzippedFileShorterThanItsDimsIsDataLossNamingOffsets) {
  // A valid gzip stream whose content lacks the last 2 pixels.
  std::string path =
      WriteScratchFile("short.idx.gz", Gzip(kImagesIdx.substr(0, kImagesIdx.size() - 2)));
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + path));
  EXPECT_THAT(result.status().message(), HasSubstr("data ends at byte offset 26"));
  EXPECT_THAT(result.status().message(), HasSubstr("to byte offset 28"));
}

TEST(IdxFileTest, BytesAfterTheDataAreRefused) {
  std::string plain = WriteScratchFile("long.idx", kImagesIdx + "xyz");
  StatusOr<IdxArray> result = ReadIdxFile(plain);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(plain));
  EXPECT_THAT(result.status().message(), HasSubstr("more data after byte offset 28"));

  std::string gzipped = WriteScratchFile("long.idx.gz", Gzip(kImagesIdx + "z"));
  EXPECT_EQ(ReadIdxFile(gzipped).status().code(), Code::kInvalidArgument);
}

TEST(IdxFileTest, DimsWhoseProductOverflowsAreRefused) {
  // 0xFFFFFFFF^3 elements do not fit in int64.
  std::string path = WriteScratchFile(
      "overflow.idx", IdxBytes(0x08, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, "abc"));
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(path));
  EXPECT_THAT(result.status().message(), HasSubstr("more bytes than int64 counts"));
}

TEST(IdxFileTest, AbsurdDimsFailBeforeAllocating) {
  // 2^16 x 2^16 x 2^4 float64 = 512 GiB claimed by a few bytes: refused by the limit...
  const std::vector<uint32_t> absurd = {65536, 65536, 16};
  std::string plain = WriteScratchFile("absurd.idx", IdxBytes(0x0E, absurd, "abcdefgh"));
  EXPECT_EQ(ReadIdxFile(plain).status().code(), Code::kResourceExhausted);

  // ...and, under a limit that allows it, by the size of the file itself.
  IdxReadOptions no_limit;
  no_limit.max_data_bytes = INT64_MAX;
  StatusOr<IdxArray> result = ReadIdxFile(plain, no_limit);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + plain));

  std::string gzipped =
      WriteScratchFile("absurd.idx.gz", Gzip(IdxBytes(0x0E, absurd, "abcdefgh")));
  result = ReadIdxFile(gzipped, no_limit);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(gzipped));
  EXPECT_THAT(result.status().message(), HasSubstr("more than a gzip file of"));
}

TEST(IdxFileTest, DataLimitIsResourceExhaustedNamingTheLimit) {
  std::string path = WriteScratchFile("limited.idx", kImagesIdx);
  IdxReadOptions options;
  options.max_data_bytes = 11;  // the file holds 12
  StatusOr<IdxArray> result = ReadIdxFile(path, options);
  EXPECT_EQ(result.status().code(), Code::kResourceExhausted);
  EXPECT_THAT(result.status().message(), HasSubstr(path));
  EXPECT_THAT(result.status().message(), HasSubstr("max_data_bytes"));
  options.max_data_bytes = 12;
  EXPECT_OK(ReadIdxFile(path, options));
}

TEST(IdxFileTest, TruncatedGzipStreamIsDataLoss) {
  std::string gzipped = Gzip(kImagesIdx);
  // Cut inside the deflate data, and cut only the 8-byte CRC/size trailer: both are
  // errors, although in the second case every pixel has been inflated.
  for (size_t keep : {gzipped.size() / 2, gzipped.size() - 8, gzipped.size() - 1}) {
    std::string path =
        WriteScratchFile("truncated_" + std::to_string(keep) + ".idx.gz", gzipped.substr(0, keep));
    StatusOr<IdxArray> result = ReadIdxFile(path);
    EXPECT_EQ(result.status().code(), Code::kInternal) << keep;
    EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + path));
    EXPECT_THAT(result.status().message(), HasSubstr("cut short")) << result.status();
  }
}

TEST(IdxFileTest, GzipWithBadCrcIsDataLoss) {
  std::string gzipped = Gzip(kImagesIdx);
  gzipped[gzipped.size() - 8] ^= 0x01;  // the first byte of the CRC-32 trailer
  std::string path = WriteScratchFile("bad_crc.idx.gz", gzipped);
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + path));
  EXPECT_THAT(result.status().message(), HasSubstr("corrupt gzip stream"));
  EXPECT_THAT(result.status().message(), HasSubstr("incorrect data check"));
}

TEST(IdxFileTest, GzipMagicFollowedByGarbageIsDataLoss) {
  std::string path = WriteScratchFile("garbage.idx.gz", "\x1f\x8bthis is not deflate data");
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + path));
  EXPECT_THAT(result.status().message(), HasSubstr("compressed byte offset"));
}

TEST(IdxFileTest, GarbageAfterAGzipMemberIsDataLoss) {
  std::string path = WriteScratchFile("trailing.idx.gz", Gzip(kImagesIdx) + "junk");
  StatusOr<IdxArray> result = ReadIdxFile(path);
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("data loss: " + path));
}

TEST(IdxFileTest, EveryDamagedByteOfAGzipFileIsAnErrorNeverWrongData) {
  // Flipping any one byte after the gzip header (the deflate data or the trailer)
  // either fails or, where deflate tolerates it, must still give the exact pixels
  // (the CRC guards that); it never returns different data.
  std::string gzipped = Gzip(kImagesIdx);
  for (size_t i = 10; i < gzipped.size(); ++i) {
    std::string damaged = gzipped;
    damaged[i] ^= 0x55;
    std::string path = WriteScratchFile("flip_" + std::to_string(i) + ".idx.gz", damaged);
    StatusOr<IdxArray> result = ReadIdxFile(path);
    if (result.ok()) {
      EXPECT_EQ(result.value().data, kPixels) << "byte " << i;
    } else {
      EXPECT_THAT(result.status().message(), HasSubstr(path)) << "byte " << i;
    }
  }
}

}  // namespace
}  // namespace actorflow
