// The two messages of proto/raw_transfer.proto as bytes, for the raw
// reference's hand-made calls on both ends: each is field 1 alone (RawSize:
// a varint; RawBlob: length-delimited bytes), so its wire form is a tag, a
// varint and, for a blob, the payload.
//
// Thread-safety: pure functions.
#ifndef TAUPS_BENCH_RAW_TRANSFER_WIRE_H_
#define TAUPS_BENCH_RAW_TRANSFER_WIRE_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taups::bench {

inline constexpr uint8_t kVarintFieldOne = 0x08;  // RawSize.size
inline constexpr uint8_t kBytesFieldOne = 0x0a;   // RawBlob.data

// `tag` and `value` as a varint: a whole RawSize, or a RawBlob's prefix
// (value = the payload's length).
std::string FieldOnePrefix(uint8_t tag, uint64_t value);

// Where a message received as `slices` starts: field 1 with `tag`; its
// varint and the bytes the tag and varint took. An empty message is the
// default one: {0, 0}. nullopt when the front is anything else.
struct FieldOneFront {
  uint64_t value = 0;
  size_t prefix_bytes = 0;
};
std::optional<FieldOneFront> ReadFieldOneFront(
    const std::vector<grpc::Slice>& slices, uint8_t tag);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_RAW_TRANSFER_WIRE_H_
