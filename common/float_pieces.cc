#include "common/float_pieces.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>

#include "common/vector_math.h"

namespace taups {
namespace {

// Walks the floats the pieces form: `bytes(first, src, n)` for the n whole
// floats of one piece at `src` (any alignment), `single(first, value)` for
// a float that straddles pieces, assembled here. In tensor order.
template <typename Bytes, typename Single>
void WalkFloats(absl::Span<const absl::string_view> pieces, Bytes bytes,
                Single single) {
  char partial[4];
  size_t have = 0;   // bytes of a straddling float gathered so far
  size_t first = 0;  // index of the next float
  for (absl::string_view piece : pieces) {
    const char* src = piece.data();
    size_t left = piece.size();
    if (have > 0) {
      const size_t take = std::min(left, sizeof(partial) - have);
      if (take > 0) std::memcpy(partial + have, src, take);
      have += take;
      src += take;
      left -= take;
      if (have < sizeof(partial)) continue;  // the piece ended first
      float value;
      std::memcpy(&value, partial, sizeof(value));
      single(first++, value);
      have = 0;
    }
    const size_t whole = left / 4;
    if (whole > 0) bytes(first, src, whole);
    first += whole;
    src += 4 * whole;
    left -= 4 * whole;
    if (left > 0) std::memcpy(partial, src, left);
    have = left;
  }
}

}  // namespace

float MaxAbsOfPieces(absl::Span<const absl::string_view> pieces) {
  float max = 0.0f;  // MaxAbs never answers NaN, so std::max is exact
  WalkFloats(
      pieces,
      [&](size_t, const char* src, size_t n) {
        max = std::max(max, MaxAbsOfBytes(src, n));
      },
      [&](size_t, float value) {
        max = std::max(max, MaxAbs(absl::MakeConstSpan(&value, 1)));
      });
  return max;
}

void ForEachFloatRun(
    absl::Span<const absl::string_view> pieces,
    absl::FunctionRef<void(size_t first, absl::Span<const float> floats)> run) {
  alignas(64) float bounce[kFloatRunBounce];
  WalkFloats(
      pieces,
      [&](size_t first, const char* src, size_t n) {
        if (reinterpret_cast<uintptr_t>(src) % alignof(float) == 0) {
          run(first, absl::MakeConstSpan(reinterpret_cast<const float*>(src), n));
          return;
        }
        for (size_t done = 0; done < n;) {
          const size_t k = std::min(n - done, kFloatRunBounce);
          std::memcpy(bounce, src + 4 * done, 4 * k);
          run(first + done, absl::MakeConstSpan(bounce, k));
          done += k;
        }
      },
      [&](size_t first, float value) {
        bounce[0] = value;
        run(first, absl::MakeConstSpan(bounce, 1));
      });
}

void ForEachFloatBytes(
    absl::Span<const absl::string_view> pieces,
    absl::FunctionRef<void(size_t first, const char* bytes, size_t n)> run) {
  WalkFloats(pieces, run, [&](size_t first, float value) {
    char bytes[sizeof(value)];
    std::memcpy(bytes, &value, sizeof(value));
    run(first, bytes, 1);
  });
}

FloatPieces::FloatPieces(absl::Span<const absl::string_view> pieces) {
  pieces_.reserve(pieces.size());
  starts_.reserve(pieces.size());
  for (absl::string_view piece : pieces) {
    if (piece.empty()) continue;
    pieces_.push_back(piece);
    starts_.push_back(bytes_);
    bytes_ += piece.size();
  }
}

void FloatPieces::ForEachBytes(
    size_t begin, size_t end,
    absl::FunctionRef<void(size_t first, const char* bytes, size_t n)> run)
    const {
  assert(begin <= end && end <= floats());
  if (begin >= end) return;
  // The last piece that starts at or before the first byte wanted.
  size_t piece = static_cast<size_t>(
      std::upper_bound(starts_.begin(), starts_.end(), 4 * begin) -
      starts_.begin() - 1);
  size_t at = 4 * begin - starts_[piece];  // byte offset in that piece
  size_t first = begin;
  while (first < end) {
    const absl::string_view p = pieces_[piece];
    const size_t whole = std::min((p.size() - at) / 4, end - first);
    if (whole > 0) {
      run(first, p.data() + at, whole);
      first += whole;
      at += 4 * whole;
    }
    if (first == end) break;
    if (at == p.size()) {
      ++piece;
      at = 0;
      continue;
    }
    // A float whose bytes lie in this piece and the next one(s).
    char straddling[4];
    for (size_t have = 0; have < sizeof(straddling);) {
      const size_t take =
          std::min(sizeof(straddling) - have, pieces_[piece].size() - at);
      std::memcpy(straddling + have, pieces_[piece].data() + at, take);
      have += take;
      at += take;
      if (at == pieces_[piece].size()) {
        ++piece;
        at = 0;
      }
    }
    run(first++, straddling, 1);
  }
}

void FloatPieces::CopyTo(size_t begin, size_t end, float* out) const {
  char* dst = reinterpret_cast<char*>(out);
  ForEachBytes(begin, end, [&](size_t first, const char* bytes, size_t n) {
    std::memcpy(dst + 4 * (first - begin), bytes, 4 * n);
  });
}

}  // namespace taups
