#include "bench/raw_transfer_wire.h"

namespace taups::bench {

std::string FieldOnePrefix(uint8_t tag, uint64_t value) {
  std::string out(1, static_cast<char>(tag));
  do {
    char byte = static_cast<char>(value & 0x7f);
    value >>= 7;
    if (value != 0) byte |= static_cast<char>(0x80);
    out.push_back(byte);
  } while (value != 0);
  return out;
}

std::optional<FieldOneFront> ReadFieldOneFront(
    const std::vector<grpc::Slice>& slices, uint8_t tag) {
  FieldOneFront front;
  size_t s = 0, i = 0;  // slice, byte within it
  auto next = [&](uint8_t* byte) {
    while (s < slices.size() && i >= slices[s].size()) ++s, i = 0;
    if (s == slices.size()) return false;
    *byte = slices[s].begin()[i++];
    ++front.prefix_bytes;
    return true;
  };
  uint8_t byte = 0;
  if (!next(&byte)) {
    if (front.prefix_bytes == 0) return front;  // empty: the default message
    return std::nullopt;
  }
  if (byte != tag) return std::nullopt;
  for (int shift = 0;; shift += 7) {
    if (shift > 63 || !next(&byte)) return std::nullopt;
    front.value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  return front;
}

}  // namespace taups::bench
