// The block layer of checkpoint files: a file is a preamble followed by
// blocks, each a 16-byte header and a payload of at most kMaxBlockPayload
// bytes.
//
//   preamble (16 B): magic "tauPSckp" | u32 format version | u32 CRC32C of
//                    the 12 bytes before it
//   block header (16 B): u16 type | u16 flags | u32 payload length |
//                        u32 CRC32C of the payload | u32 CRC32C of the
//                        12 header bytes before it
//
// Integers are little-endian. A section (a config, a table, ...) is a run
// of blocks of one type, the last one flagged kLastOfSection; the file ends
// with one empty block of type kEnd, and nothing may follow it. The file's
// digest (what the manifest records) is the CRC32C of the preamble and every
// block header in order: since each header holds its payload's CRC, the
// digest covers every byte, at the cost of hashing 16 bytes per block.
//
// BlockWriter and BlockReader are thread-compatible.
#ifndef TAUPS_SERVER_CHECKPOINT_BLOCKS_H_
#define TAUPS_SERVER_CHECKPOINT_BLOCKS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/checkpoint_fs.h"

namespace taups {

inline constexpr char kCheckpointMagic[8] = {'t', 'a', 'u', 'P', 'S', 'c', 'k', 'p'};
inline constexpr uint32_t kCheckpointFormatVersion = 1;
inline constexpr size_t kPreambleBytes = 16;
inline constexpr size_t kBlockHeaderBytes = 16;
inline constexpr size_t kMaxBlockPayload = size_t{4} << 20;

enum class BlockType : uint16_t {
  kEnd = 1,
  kShardHeader = 2,  // manifest
  kSummary = 3,      // manifest
  kFiles = 4,        // manifest
  kChain = 5,        // manifest of an incremental checkpoint
  kConfig = 10,      // partition file
  kTable = 11,
  kPolicy = 12,
  kDedup = 13,
  kDelta = 14,  // partition file of an incremental checkpoint
};
inline constexpr uint16_t kLastOfSection = 1;

// Writes a block file through `file` (which it does not own, sync or close).
class BlockWriter {
 public:
  explicit BlockWriter(CheckpointWritableFile* file);

  // Writes the preamble; first.
  absl::Status Start();
  // A section of `type`: Begin, Put*, End.
  void Begin(BlockType type);
  void PutU8(uint8_t v) { PutRaw(&v, 1); }
  void PutU32(uint32_t v) { PutRaw(&v, 4); }
  void PutU64(uint64_t v) { PutRaw(&v, 8); }
  void PutI64(int64_t v) { PutRaw(&v, 8); }
  void PutF32(float v) { PutRaw(&v, 4); }
  void PutF64(double v) { PutRaw(&v, 8); }
  void PutString(absl::string_view s);
  // A u64 count, then the elements' bytes.
  template <typename T>
  void PutArray(absl::Span<const T> values) {
    static_assert(std::is_arithmetic_v<T>);
    PutU64(values.size());
    PutRaw(values.data(), values.size() * sizeof(T));
  }
  // Flushes the section's last block. Returns the first write error of the
  // section (Put* only buffer and record it).
  absl::Status End();
  // The kEnd block; last.
  absl::Status Finish();

  uint64_t bytes_written() const { return bytes_; }
  uint32_t digest() const { return digest_; }

 private:
  void PutRaw(const void* data, size_t n);
  absl::Status Flush(bool last);

  CheckpointWritableFile* const file_;
  std::string buffer_;  // header space + payload of the block being filled
  BlockType type_ = BlockType::kEnd;
  absl::Status status_;
  uint64_t bytes_ = 0;
  uint32_t digest_ = 0;
};

// Reads and checks a block file of known size. Every failure of the file's
// contents is DATA_LOSS naming the file, the byte offset and what is wrong;
// read errors of the filesystem pass through. No count read from the file
// is trusted for an allocation before it is checked against a limit and
// against the bytes the file still holds.
class BlockReader {
 public:
  BlockReader(CheckpointReadableFile* file, std::string name, uint64_t file_size);

  absl::Status Start();
  absl::Status Begin(BlockType type);
  // A section of either type; *got says which.
  absl::Status BeginEither(BlockType a, BlockType b, BlockType* got);
  absl::Status GetU8(uint8_t* v) { return GetRaw(v, 1); }
  absl::Status GetU32(uint32_t* v) { return GetRaw(v, 4); }
  absl::Status GetU64(uint64_t* v) { return GetRaw(v, 8); }
  absl::Status GetI64(int64_t* v) { return GetRaw(v, 8); }
  absl::Status GetF32(float* v) { return GetRaw(v, 4); }
  absl::Status GetF64(double* v) { return GetRaw(v, 8); }
  absl::Status GetBool(bool* v);
  absl::Status GetString(size_t max_bytes, std::string* s);
  // A count of items each taking at least `min_item_bytes` in the file:
  // refused above `limit` or above what the rest of the file can hold.
  absl::Status GetCount(uint64_t limit, size_t min_item_bytes, uint64_t* count);
  template <typename T>
  absl::Status GetArray(uint64_t limit, std::vector<T>* values) {
    static_assert(std::is_arithmetic_v<T>);
    uint64_t n = 0;
    absl::Status s = GetCount(limit, sizeof(T), &n);
    if (!s.ok()) return s;
    values->resize(n);
    return GetRaw(values->data(), n * sizeof(T));
  }
  // The section's last block must be used up.
  absl::Status End();
  // The kEnd block, and then the end of the file.
  absl::Status Finish();

  uint32_t digest() const { return digest_; }
  // A DATA_LOSS error at the current offset.
  absl::Status Corrupt(absl::string_view what) const;

 private:
  absl::Status GetRaw(void* out, size_t n);
  // Reads the next block header and payload; it must be of `type` (or of
  // `other`), which *got is set to.
  absl::Status NextBlock(BlockType type, BlockType other, BlockType* got);
  absl::Status NextBlock(BlockType type) { return NextBlock(type, type, nullptr); }
  absl::Status ReadExactly(char* out, size_t n);

  CheckpointReadableFile* const file_;
  const std::string name_;
  const uint64_t file_size_;
  uint64_t offset_ = 0;  // bytes of the file read so far
  std::string payload_;
  size_t pos_ = 0;  // in payload_
  BlockType type_ = BlockType::kEnd;
  bool last_ = true;  // the current block ends its section
  uint32_t digest_ = 0;
};

}  // namespace taups

#endif  // TAUPS_SERVER_CHECKPOINT_BLOCKS_H_
