// Reading a float tensor in place where it arrived: as little-endian bytes
// cut into pieces at arbitrary byte offsets (the slices gRPC delivers a
// large message in, one per HTTP/2 data frame), without first gathering the
// pieces into one buffer.
//
// The pieces, read end to end, form floats of 4 bytes each; a float whose
// bytes lie in two (or more) pieces "straddles" and is put together in a
// 4-byte bounce. A trailing partial float (a byte count not a multiple of
// 4) is not a float and is never visited.
//
// These are the piecewise forms of MaxAbs (common/vector_math.h) and of a
// walk an element-wise update (every Optimizer rule) can run over: a rule
// applied run by run gives the same bits as applied to the gathered tensor.
//
// Thread-safety: pure functions on caller-owned memory; the pieces are only
// read, and must not change during a call.
#ifndef TAUPS_COMMON_FLOAT_PIECES_H_
#define TAUPS_COMMON_FLOAT_PIECES_H_

#include <cstddef>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace taups {

// MaxAbs of the floats the pieces form, reading every byte once and writing
// nothing but a 4-byte bounce per straddling float: +infinity when one is
// NaN or infinite, 0 when there is none.
float MaxAbsOfPieces(absl::Span<const absl::string_view> pieces);

// Floats per run handed out from the bounce block when a piece's floats are
// not 4-aligned in memory (the block, 4 KiB, stays in L1).
inline constexpr size_t kFloatRunBounce = 1024;

// Calls `run(first, floats)` for consecutive runs that cover every float of
// the pieces once, in order: `floats` are floats [first, first + size) of
// the tensor, always 4-aligned. A run points into a piece where the piece's
// floats are 4-aligned, else at a bounce block they were copied to
// (kFloatRunBounce floats at most per run); a straddling float comes as a
// run of one. `floats` is valid only during the call. Nothing is allocated.
void ForEachFloatRun(
    absl::Span<const absl::string_view> pieces,
    absl::FunctionRef<void(size_t first, absl::Span<const float> floats)> run);

// The same walk with the floats left as bytes where they lie:
// `run(first, bytes, n)` for floats [first, first + n) whose little-endian
// bytes start at `bytes`, any alignment (read them with std::memcpy, which
// compiles to unaligned loads), so nothing is copied but a straddling float,
// which comes as a run of one from a 4-byte bounce. `bytes` is valid only
// during the call.
void ForEachFloatBytes(
    absl::Span<const absl::string_view> pieces,
    absl::FunctionRef<void(size_t first, const char* bytes, size_t n)> run);

// A raw float tensor left in the pieces it arrived in, with where each
// piece starts, so that any range of its floats can be walked in place
// without walking from the first piece (a dense push's gradient, applied
// lock block by lock block, on several threads at once).
//
// Thread-safety: immutable after construction; the pieces' bytes must stay
// valid and unchanged while the object is used.
class FloatPieces {
 public:
  FloatPieces() = default;
  // `pieces` read end to end (empty ones are dropped).
  explicit FloatPieces(absl::Span<const absl::string_view> pieces);

  size_t bytes() const { return bytes_; }
  // Whole floats; a trailing partial float is not one (callers refuse a
  // byte count that is not a multiple of 4 before they read).
  size_t floats() const { return bytes_ / 4; }
  absl::Span<const absl::string_view> pieces() const { return pieces_; }

  // ForEachFloatBytes over floats [begin, end) only (begin <= end <=
  // floats()): `run(first, bytes, n)` with `first` the index in the whole
  // tensor. The piece holding `begin` is found by binary search.
  void ForEachBytes(
      size_t begin, size_t end,
      absl::FunctionRef<void(size_t first, const char* bytes, size_t n)> run)
      const;
  // Floats [begin, end) copied to `out` (end - begin floats).
  void CopyTo(size_t begin, size_t end, float* out) const;

 private:
  std::vector<absl::string_view> pieces_;
  std::vector<size_t> starts_;  // starts_[i]: byte offset of pieces_[i]
  size_t bytes_ = 0;
};

}  // namespace taups

#endif  // TAUPS_COMMON_FLOAT_PIECES_H_
