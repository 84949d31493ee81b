#include "tests/fuzz/checkpoint_framing.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/crc32c.h"
#include "server/checkpoint_blocks.h"

namespace taups::fuzz {
namespace {

// The block types a record names (the index is what the record holds), so
// that most mutations of a type byte still name a type the reader knows.
constexpr uint16_t kFuzzBlockTypes[] = {
    static_cast<uint16_t>(BlockType::kEnd),
    static_cast<uint16_t>(BlockType::kShardHeader),
    static_cast<uint16_t>(BlockType::kSummary),
    static_cast<uint16_t>(BlockType::kFiles),
    static_cast<uint16_t>(BlockType::kConfig),
    static_cast<uint16_t>(BlockType::kTable),
    static_cast<uint16_t>(BlockType::kPolicy),
    static_cast<uint16_t>(BlockType::kDedup),
    // Incremental checkpoints; last, so earlier records keep their types.
    static_cast<uint16_t>(BlockType::kChain),
    static_cast<uint16_t>(BlockType::kDelta),
};
constexpr size_t kTypeCount = sizeof(kFuzzBlockTypes) / sizeof(uint16_t);

void Put16(std::string* out, uint16_t v) { out->append(reinterpret_cast<char*>(&v), 2); }
void Put32(std::string* out, uint32_t v) { out->append(reinterpret_cast<char*>(&v), 4); }
uint16_t Load16(const char* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
uint32_t Load32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }

void AppendPreamble(std::string* out) {
  out->append(kCheckpointMagic, sizeof(kCheckpointMagic));
  Put32(out, kCheckpointFormatVersion);
  Put32(out, crc32c::Value(out->data() + out->size() - 12, 12));
}

}  // namespace

std::string FrameBlocks(absl::string_view records) {
  std::string file;
  AppendPreamble(&file);
  while (!records.empty()) {
    const auto* p = reinterpret_cast<const uint8_t*>(records.data());
    const uint8_t type_index = p[0];
    const uint8_t flags = records.size() > 1 ? p[1] : 0;
    size_t length = records.size() > 3 ? (p[2] | (size_t{p[3]} << 8)) : 0;
    records.remove_prefix(std::min<size_t>(4, records.size()));
    length = std::min(length, records.size());
    const absl::string_view payload = records.substr(0, length);
    records.remove_prefix(length);

    const size_t header_at = file.size();
    Put16(&file, type_index < kTypeCount ? kFuzzBlockTypes[type_index]
                                         : uint16_t{1000} + type_index);
    Put16(&file, flags);
    Put32(&file, static_cast<uint32_t>(payload.size()));
    Put32(&file, crc32c::Value(payload.data(), payload.size()));
    Put32(&file, crc32c::Value(file.data() + header_at, 12));
    file.append(payload.data(), payload.size());
  }
  return file;
}

absl::StatusOr<std::string> RecordsOf(absl::string_view file) {
  if (file.size() < kPreambleBytes) {
    return absl::InvalidArgumentError("shorter than a preamble");
  }
  file.remove_prefix(kPreambleBytes);
  std::string records;
  while (!file.empty()) {
    if (file.size() < kBlockHeaderBytes) {
      return absl::InvalidArgumentError("a torn block header");
    }
    const uint16_t type = Load16(file.data());
    const uint16_t flags = Load16(file.data() + 2);
    const uint32_t length = Load32(file.data() + 4);
    file.remove_prefix(kBlockHeaderBytes);
    if (length > file.size() || length > 0xffff || flags > 0xff) {
      return absl::InvalidArgumentError("a block the records cannot hold");
    }
    const uint16_t* known =
        std::find(std::begin(kFuzzBlockTypes), std::end(kFuzzBlockTypes), type);
    if (known == std::end(kFuzzBlockTypes)) {
      return absl::InvalidArgumentError("an unknown block type");
    }
    records.push_back(static_cast<char>(known - std::begin(kFuzzBlockTypes)));
    records.push_back(static_cast<char>(flags));
    records.push_back(static_cast<char>(length & 0xff));
    records.push_back(static_cast<char>(length >> 8));
    records.append(file.data(), length);
    file.remove_prefix(length);
  }
  return records;
}

}  // namespace taups::fuzz
