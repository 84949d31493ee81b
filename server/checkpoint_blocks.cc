#include "server/checkpoint_blocks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"

namespace taups {
namespace {

void Store32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void Store16(char* p, uint16_t v) { std::memcpy(p, &v, 2); }
uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint16_t Load16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

bool KnownType(uint16_t t) {
  switch (static_cast<BlockType>(t)) {
    case BlockType::kEnd:
    case BlockType::kShardHeader:
    case BlockType::kSummary:
    case BlockType::kFiles:
    case BlockType::kChain:
    case BlockType::kDelta:
    case BlockType::kConfig:
    case BlockType::kTable:
    case BlockType::kPolicy:
    case BlockType::kDedup:
      return true;
  }
  return false;
}

}  // namespace

BlockWriter::BlockWriter(CheckpointWritableFile* file) : file_(file) {
  buffer_.reserve(kBlockHeaderBytes + kMaxBlockPayload);
}

absl::Status BlockWriter::Start() {
  char preamble[kPreambleBytes];
  std::memcpy(preamble, kCheckpointMagic, 8);
  Store32(preamble + 8, kCheckpointFormatVersion);
  Store32(preamble + 12, crc32c::Value(preamble, 12));
  digest_ = crc32c::Extend(digest_, preamble, kPreambleBytes);
  bytes_ += kPreambleBytes;
  return file_->Append(absl::string_view(preamble, kPreambleBytes));
}

void BlockWriter::Begin(BlockType type) {
  type_ = type;
  buffer_.assign(kBlockHeaderBytes, '\0');
}

void BlockWriter::PutString(absl::string_view s) {
  PutU64(s.size());
  PutRaw(s.data(), s.size());
}

void BlockWriter::PutRaw(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const size_t room = kBlockHeaderBytes + kMaxBlockPayload - buffer_.size();
    if (room == 0) {
      if (status_.ok()) status_ = Flush(false);
      buffer_.assign(kBlockHeaderBytes, '\0');
      continue;
    }
    const size_t take = std::min(room, n);
    buffer_.append(p, take);
    p += take;
    n -= take;
  }
}

absl::Status BlockWriter::Flush(bool last) {
  const size_t length = buffer_.size() - kBlockHeaderBytes;
  char* h = buffer_.data();
  Store16(h, static_cast<uint16_t>(type_));
  Store16(h + 2, last ? kLastOfSection : 0);
  Store32(h + 4, static_cast<uint32_t>(length));
  Store32(h + 8, crc32c::Value(h + kBlockHeaderBytes, length));
  Store32(h + 12, crc32c::Value(h, 12));
  digest_ = crc32c::Extend(digest_, h, kBlockHeaderBytes);
  bytes_ += buffer_.size();
  return file_->Append(buffer_);
}

absl::Status BlockWriter::End() {
  if (status_.ok()) status_ = Flush(true);
  buffer_.clear();
  absl::Status status = status_;
  status_ = absl::OkStatus();
  return status;
}

absl::Status BlockWriter::Finish() {
  Begin(BlockType::kEnd);
  return End();
}

BlockReader::BlockReader(CheckpointReadableFile* file, std::string name,
                         uint64_t file_size)
    : file_(file), name_(std::move(name)), file_size_(file_size) {}

absl::Status BlockReader::Corrupt(absl::string_view what) const {
  return absl::DataLossError(
      absl::StrCat("checkpoint file ", name_, " at byte ", offset_, " of ",
                   file_size_, ": ", what));
}

absl::Status BlockReader::ReadExactly(char* out, size_t n) {
  if (n > file_size_ - offset_) return Corrupt("truncated");
  absl::StatusOr<size_t> got = file_->Read(out, n);
  if (!got.ok()) return got.status();
  if (*got != n) return Corrupt("file shorter than its size");
  offset_ += n;
  return absl::OkStatus();
}

absl::Status BlockReader::Start() {
  char preamble[kPreambleBytes];
  absl::Status s = ReadExactly(preamble, kPreambleBytes);
  if (!s.ok()) return s;
  if (std::memcmp(preamble, kCheckpointMagic, 8) != 0) return Corrupt("bad magic");
  if (Load32(preamble + 12) != crc32c::Value(preamble, 12)) {
    return Corrupt("preamble checksum mismatch");
  }
  const uint32_t version = Load32(preamble + 8);
  if (version != kCheckpointFormatVersion) {
    return Corrupt(absl::StrCat("format version ", version, ", this build reads ",
                                kCheckpointFormatVersion));
  }
  digest_ = crc32c::Extend(digest_, preamble, kPreambleBytes);
  return absl::OkStatus();
}

absl::Status BlockReader::NextBlock(BlockType type, BlockType other,
                                    BlockType* got) {
  char h[kBlockHeaderBytes];
  absl::Status s = ReadExactly(h, kBlockHeaderBytes);
  if (!s.ok()) return s;
  if (Load32(h + 12) != crc32c::Value(h, 12)) {
    return Corrupt("block header checksum mismatch");
  }
  const uint16_t t = Load16(h);
  const uint16_t flags = Load16(h + 2);
  const uint32_t length = Load32(h + 4);
  if (!KnownType(t)) return Corrupt(absl::StrCat("unknown block type ", t));
  if (t != static_cast<uint16_t>(type) && t != static_cast<uint16_t>(other)) {
    return Corrupt(absl::StrCat("block type ", t, " where ",
                                static_cast<uint16_t>(type), " belongs"));
  }
  if ((flags & ~kLastOfSection) != 0) return Corrupt("unknown block flags");
  if (length > kMaxBlockPayload) {
    return Corrupt(absl::StrCat("block of ", length, " bytes, limit ", kMaxBlockPayload));
  }
  if (length > file_size_ - offset_) return Corrupt("block runs past the end of the file");
  payload_.resize(length);
  s = ReadExactly(payload_.data(), length);
  if (!s.ok()) return s;
  if (Load32(h + 8) != crc32c::Value(payload_.data(), length)) {
    return Corrupt("block payload checksum mismatch");
  }
  digest_ = crc32c::Extend(digest_, h, kBlockHeaderBytes);
  type_ = static_cast<BlockType>(t);
  if (got != nullptr) *got = type_;
  last_ = (flags & kLastOfSection) != 0;
  pos_ = 0;
  return absl::OkStatus();
}

absl::Status BlockReader::Begin(BlockType type) { return NextBlock(type); }

absl::Status BlockReader::BeginEither(BlockType a, BlockType b, BlockType* got) {
  return NextBlock(a, b, got);
}

absl::Status BlockReader::GetRaw(void* out, size_t n) {
  char* p = static_cast<char*>(out);
  while (n > 0) {
    if (pos_ == payload_.size()) {
      if (last_) return Corrupt("section ends early");
      absl::Status s = NextBlock(type_);
      if (!s.ok()) return s;
      continue;
    }
    const size_t take = std::min(payload_.size() - pos_, n);
    std::memcpy(p, payload_.data() + pos_, take);
    pos_ += take;
    p += take;
    n -= take;
  }
  return absl::OkStatus();
}

absl::Status BlockReader::GetBool(bool* v) {
  uint8_t b = 0;
  absl::Status s = GetU8(&b);
  if (!s.ok()) return s;
  if (b > 1) return Corrupt(absl::StrCat("boolean ", b));
  *v = b == 1;
  return absl::OkStatus();
}

absl::Status BlockReader::GetCount(uint64_t limit, size_t min_item_bytes,
                                   uint64_t* count) {
  uint64_t n = 0;
  absl::Status s = GetU64(&n);
  if (!s.ok()) return s;
  const uint64_t left = (file_size_ - offset_) + (payload_.size() - pos_);
  const uint64_t fits = left / std::max<size_t>(min_item_bytes, 1);
  if (n > limit) return Corrupt(absl::StrCat("count ", n, " above its limit ", limit));
  if (n > fits) {
    return Corrupt(absl::StrCat("count ", n, " of ", min_item_bytes,
                                "-byte items, only ", left, " bytes left"));
  }
  *count = n;
  return absl::OkStatus();
}

absl::Status BlockReader::GetString(size_t max_bytes, std::string* out) {
  uint64_t n = 0;
  absl::Status s = GetCount(max_bytes, 1, &n);
  if (!s.ok()) return s;
  out->resize(n);
  return GetRaw(out->data(), n);
}

absl::Status BlockReader::End() {
  if (!last_) return Corrupt("section continues past its end");
  if (pos_ != payload_.size()) {
    return Corrupt(absl::StrCat(payload_.size() - pos_, " unread bytes at the end of a section"));
  }
  return absl::OkStatus();
}

absl::Status BlockReader::Finish() {
  absl::Status s = NextBlock(BlockType::kEnd);
  if (!s.ok()) return s;
  if (!payload_.empty() || !last_) return Corrupt("malformed end block");
  if (offset_ != file_size_) {
    return Corrupt(absl::StrCat(file_size_ - offset_, " bytes after the end block"));
  }
  return absl::OkStatus();
}

}  // namespace taups
