// Packing float32 and uint64 arrays into wire `bytes` and back.
//
// The wire format is little-endian; tauPS only builds on little-endian hosts
// (checked at compile time), so packing is a memcpy. Unpacking validates that
// the byte count is a whole number of elements.
#ifndef TAUPS_COMMON_FLOAT_BYTES_H_
#define TAUPS_COMMON_FLOAT_BYTES_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace taups {

static_assert(std::endian::native == std::endian::little,
              "tauPS's wire format is little-endian; big-endian hosts are not supported");

template <typename T>
inline void PackInto(absl::Span<const T> values, std::string* out) {
  out->resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out->data(), values.data(), out->size());
}

template <typename T>
inline std::string Pack(absl::Span<const T> values) {
  std::string out;
  PackInto(values, &out);
  return out;
}

// CheckPacked for a payload of `size` bytes held elsewhere (in pieces).
template <typename T>
inline absl::Status CheckPackedSize(size_t size, absl::string_view what) {
  if (size % sizeof(T) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", size, " bytes is not a multiple of ",
                     sizeof(T)));
  }
  return absl::OkStatus();
}

// Number of T in `bytes`, or INVALID_ARGUMENT naming `what` when it is not a
// whole number of elements.
template <typename T>
inline absl::Status CheckPacked(absl::string_view bytes, absl::string_view what) {
  return CheckPackedSize<T>(bytes.size(), what);
}

// Views packed bytes as elements. Requires CheckPacked<T>() to have passed.
// Copies into `out`, which must hold bytes.size() / sizeof(T) elements.
template <typename T>
inline void UnpackInto(absl::string_view bytes, absl::Span<T> out) {
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
}

}  // namespace taups

#endif  // TAUPS_COMMON_FLOAT_BYTES_H_
