// Typed read-only views of packed little-endian bytes without a copy when the
// bytes are suitably aligned (they are, for protobuf-owned strings), with a
// copy into caller-owned storage otherwise.
#ifndef TAUPS_COMMON_ALIGNED_VIEW_H_
#define TAUPS_COMMON_ALIGNED_VIEW_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/float_bytes.h"

namespace taups {

// Returns `bytes` as a span of T, or INVALID_ARGUMENT (naming `what`) when
// the length is not a whole number of T. `scratch` backs the view when the
// bytes are misaligned and must outlive it.
template <typename T>
absl::StatusOr<absl::Span<const T>> ViewAs(absl::string_view bytes,
                                          std::vector<T>* scratch,
                                          absl::string_view what) {
  absl::Status ok = CheckPacked<T>(bytes, what);
  if (!ok.ok()) return ok;
  const size_t n = bytes.size() / sizeof(T);
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(T) == 0) {
    return absl::Span<const T>(reinterpret_cast<const T*>(bytes.data()), n);
  }
  scratch->resize(n);
  if (n > 0) std::memcpy(scratch->data(), bytes.data(), bytes.size());
  return absl::Span<const T>(*scratch);
}

}  // namespace taups

#endif  // TAUPS_COMMON_ALIGNED_VIEW_H_
