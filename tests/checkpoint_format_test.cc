// The bottom layers of checkpoints: CRC32C against RFC 3720's vectors, the
// block format's checks, and the limits that keep a crafted file (valid
// checksums, absurd counts) from making the reader allocate.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "server/checkpoint_blocks.h"
#include "server/checkpoint_format.h"

namespace taups {
namespace {

class StringFile final : public CheckpointWritableFile {
 public:
  explicit StringFile(std::string* out) : out_(out) {}
  absl::Status Append(absl::string_view data) override {
    out_->append(data.data(), data.size());
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Close() override { return absl::OkStatus(); }

 private:
  std::string* out_;
};

class StringReader final : public CheckpointReadableFile {
 public:
  explicit StringReader(std::string data) : data_(std::move(data)) {}
  absl::StatusOr<size_t> Read(char* buffer, size_t n) override {
    const size_t take = std::min(n, data_.size() - pos_);
    std::memcpy(buffer, data_.data() + pos_, take);
    pos_ += take;
    return take;
  }

 private:
  std::string data_;
  size_t pos_ = 0;
};

TEST_CASE("crc32c matches RFC 3720 B.4 and the check value") {
  std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xFF), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<unsigned char>(i);
    down[i] = static_cast<unsigned char>(31 - i);
  }
  for (auto* fn : {&crc32c::ExtendPortable, &crc32c::ExtendHardware}) {
    REQUIRE(fn(0, zeros.data(), 32) == 0x8A9136AAu);
    REQUIRE(fn(0, ones.data(), 32) == 0x62A8AB43u);
    REQUIRE(fn(0, up.data(), 32) == 0x46DD794Eu);
    REQUIRE(fn(0, down.data(), 32) == 0x113FDB5Cu);
    REQUIRE(fn(0, "123456789", 9) == 0xE3069283u);
    REQUIRE(fn(0, "", 0) == 0u);
  }
}

TEST_CASE("crc32c: both implementations agree at every length and alignment") {
  std::mt19937_64 rng(11);
  std::vector<unsigned char> data(4096 + 16);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096}) {
      const uint32_t portable = crc32c::ExtendPortable(0, data.data() + offset, n);
      REQUIRE(crc32c::ExtendHardware(0, data.data() + offset, n) == portable);
      // Extending in two pieces is the same as one pass.
      const size_t cut = n / 3;
      REQUIRE(crc32c::Extend(crc32c::Value(data.data() + offset, cut),
                             data.data() + offset + cut, n - cut) == portable);
    }
  }
}

std::string WriteSection(BlockType type, const std::function<void(BlockWriter&)>& fill) {
  std::string out;
  StringFile file(&out);
  BlockWriter w(&file);
  REQUIRE(w.Start().ok());
  w.Begin(type);
  fill(w);
  REQUIRE(w.End().ok());
  REQUIRE(w.Finish().ok());
  REQUIRE(w.bytes_written() == out.size());
  return out;
}

TEST_CASE("blocks: values cross block boundaries and the digest matches") {
  std::vector<float> big(3 * kMaxBlockPayload / sizeof(float) + 5);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i);
  std::string out;
  StringFile file(&out);
  BlockWriter w(&file);
  REQUIRE(w.Start().ok());
  w.Begin(BlockType::kTable);
  w.PutU32(7);
  w.PutArray<float>(big);
  w.PutString("tail");
  REQUIRE(w.End().ok());
  REQUIRE(w.Finish().ok());

  StringReader in(out);
  BlockReader r(&in, "t", out.size());
  REQUIRE(r.Start().ok());
  REQUIRE(r.Begin(BlockType::kTable).ok());
  uint32_t seven = 0;
  REQUIRE(r.GetU32(&seven).ok());
  std::vector<float> back;
  REQUIRE(r.GetArray(uint64_t{1} << 30, &back).ok());
  std::string tail;
  REQUIRE(r.GetString(16, &tail).ok());
  REQUIRE(r.End().ok());
  REQUIRE(r.Finish().ok());
  REQUIRE(seven == 7);
  REQUIRE(back == big);
  REQUIRE(tail == "tail");
  REQUIRE(r.digest() == w.digest());
}

absl::Status ReadOneArray(const std::string& bytes, uint64_t limit) {
  StringReader in(bytes);
  BlockReader r(&in, "crafted", bytes.size());
  absl::Status s = r.Start();
  if (s.ok()) s = r.Begin(BlockType::kTable);
  std::vector<float> values;
  if (s.ok()) s = r.GetArray(limit, &values);
  return s;
}

TEST_CASE("blocks: a count the file cannot hold is refused before allocating") {
  // Checksums valid: only the limits stand between this file and a 4 TiB
  // allocation.
  const std::string huge = WriteSection(BlockType::kTable, [](BlockWriter& w) {
    w.PutU64(uint64_t{1} << 40);
    w.PutF32(1.0f);
  });
  absl::Status s = ReadOneArray(huge, UINT64_MAX);
  REQUIRE(s.code() == absl::StatusCode::kDataLoss);
  REQUIRE_THAT(std::string(s.message()), Catch::Contains("bytes left"));
  s = ReadOneArray(huge, 1000);
  REQUIRE(s.code() == absl::StatusCode::kDataLoss);
  REQUIRE_THAT(std::string(s.message()), Catch::Contains("above its limit"));
  // A string length past its limit.
  const std::string name = WriteSection(BlockType::kTable, [](BlockWriter& w) {
    w.PutString(std::string(300, 'x'));
  });
  StringReader in(name);
  BlockReader r(&in, "crafted", name.size());
  REQUIRE(r.Start().ok());
  REQUIRE(r.Begin(BlockType::kTable).ok());
  std::string out;
  REQUIRE(r.GetString(128, &out).code() == absl::StatusCode::kDataLoss);
}

// Rewrites the header CRC of the block at `offset` after editing it, so only
// the structural checks can catch the edit.
void ResealHeader(std::string& bytes, size_t offset) {
  const uint32_t crc = crc32c::Value(bytes.data() + offset, 12);
  std::memcpy(bytes.data() + offset + 12, &crc, 4);
}

TEST_CASE("blocks: resealed headers with bad lengths, types or flags are refused") {
  const std::string good = WriteSection(BlockType::kTable, [](BlockWriter& w) {
    w.PutU64(3);
    for (int i = 0; i < 3; ++i) w.PutF32(1.0f);
  });
  REQUIRE(ReadOneArray(good, 10).ok());
  const size_t h = kPreambleBytes;
  auto with = [&](size_t at, uint32_t value, size_t width) {
    std::string bytes = good;
    std::memcpy(bytes.data() + h + at, &value, width);
    ResealHeader(bytes, h);
    return bytes;
  };
  // A length above the block limit, and one past the end of the file.
  REQUIRE(ReadOneArray(with(4, kMaxBlockPayload + 1, 4), 10).code() ==
          absl::StatusCode::kDataLoss);
  REQUIRE(ReadOneArray(with(4, 1000, 4), 10).code() == absl::StatusCode::kDataLoss);
  REQUIRE(ReadOneArray(with(0, 999, 2), 10).code() == absl::StatusCode::kDataLoss);
  REQUIRE(ReadOneArray(with(0, static_cast<uint32_t>(BlockType::kPolicy), 2), 10).code() ==
          absl::StatusCode::kDataLoss);
  REQUIRE(ReadOneArray(with(2, 0x8001, 2), 10).code() == absl::StatusCode::kDataLoss);
  // Another format version (preamble resealed).
  std::string version = good;
  const uint32_t v2 = kCheckpointFormatVersion + 1;
  std::memcpy(version.data() + 8, &v2, 4);
  const uint32_t crc = crc32c::Value(version.data(), 12);
  std::memcpy(version.data() + 12, &crc, 4);
  absl::Status s = ReadOneArray(version, 10);
  REQUIRE(s.code() == absl::StatusCode::kDataLoss);
  REQUIRE_THAT(std::string(s.message()), Catch::Contains("format version"));
}

TEST_CASE("blocks: every single-bit flip of a small file is caught") {
  const std::string good = WriteSection(BlockType::kTable, [](BlockWriter& w) {
    w.PutU64(4);
    for (int i = 0; i < 4; ++i) w.PutF32(0.5f * i);
  });
  for (size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bytes = good;
      bytes[byte] = static_cast<char>(bytes[byte] ^ (1 << bit));
      StringReader in(bytes);
      BlockReader r(&in, "flip", bytes.size());
      absl::Status s = r.Start();
      if (s.ok()) s = r.Begin(BlockType::kTable);
      std::vector<float> values;
      if (s.ok()) s = r.GetArray(100, &values);
      if (s.ok()) s = r.End();
      if (s.ok()) s = r.Finish();
      INFO("byte " << byte << " bit " << bit);
      REQUIRE(s.code() == absl::StatusCode::kDataLoss);
    }
  }
}

TEST_CASE("manifest: round trip and file naming checks") {
  CheckpointManifest m;
  m.header.sequence = 9;
  m.header.shard_index = 1;
  m.header.shard_count = 2;
  m.header.incarnation = 0xABCDEF;
  m.header.created = absl::FromUnixMicros(1'700'000'000'123'456);
  m.header.sync_step = 300;
  PartitionSummary s;
  s.file = PartitionFileName(0);
  s.table = "w";
  s.version = 1200;
  m.partitions.push_back(s);
  m.files.push_back(ManifestFile{PartitionFileName(0), 4096, 0x1234});
  std::string bytes;
  StringFile file(&bytes);
  REQUIRE(WriteManifestFile(&file, m).ok());
  StringReader in(bytes);
  absl::StatusOr<CheckpointManifest> back = ReadManifestFile(&in, "MANIFEST", bytes.size());
  REQUIRE(back.ok());
  REQUIRE(back->header == m.header);
  REQUIRE(back->partitions == m.partitions);
  REQUIRE(back->files == m.files);

  // A file name that is not the writer's (say, a path) is refused.
  m.files[0].name = "../../etc/passwd";
  bytes.clear();
  REQUIRE(WriteManifestFile(&file, m).ok());
  StringReader bad(bytes);
  REQUIRE(ReadManifestFile(&bad, "MANIFEST", bytes.size()).status().code() ==
          absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace taups
