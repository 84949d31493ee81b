// Loops over the rows of a sparse table (`dim` floats each), compiled per
// common row width: WithRowWidth picks the width once per call (the client's
// gradient merge, pull landing and the shard's pull loop use it), CopyRow
// copies one row.
//
// memcpy of a size known only at run time is a call into libc and a
// dispatch on the size, for every row of a call of tens of thousands. The
// row widths tables commonly use (4, 8, 16, 32 and 64 floats) are copied
// here by a memcpy of a compile-time size instead, which the compiler emits
// as a few vector moves; any other width goes through memcpy.
//
// Thread-compatible (pure functions).
#ifndef TAUPS_COMMON_ROW_COPY_H_
#define TAUPS_COMMON_ROW_COPY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace taups {

// Calls fn(std::integral_constant<uint32_t, D>{}) with D = dim for the
// common widths, or D = 0 (the width is only known at run time) for any
// other; returns what fn returns. Lets a loop over many rows be compiled
// once per common width.
template <typename Fn>
decltype(auto) WithRowWidth(uint32_t dim, Fn&& fn) {
  switch (dim) {
    case 4: return fn(std::integral_constant<uint32_t, 4>{});
    case 8: return fn(std::integral_constant<uint32_t, 8>{});
    case 16: return fn(std::integral_constant<uint32_t, 16>{});
    case 32: return fn(std::integral_constant<uint32_t, 32>{});
    case 64: return fn(std::integral_constant<uint32_t, 64>{});
    default: return fn(std::integral_constant<uint32_t, 0>{});
  }
}

// Copies one row of `dim` floats; kDim, when not 0, must equal dim (as
// WithRowWidth passes it) and fixes the copy's size at compile time.
template <uint32_t kDim = 0>
inline void CopyRow(float* dst, const float* src, uint32_t dim) {
  const size_t bytes = (kDim > 0 ? kDim : dim) * sizeof(float);
  std::memcpy(dst, src, bytes);
}

}  // namespace taups

#endif  // TAUPS_COMMON_ROW_COPY_H_
