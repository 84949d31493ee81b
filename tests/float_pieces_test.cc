// common/float_pieces: the piecewise max |x| and float runs against the
// gathered tensor, for every base misalignment (0-3 bytes), pieces of every
// size from 1 to 13 bytes and random cuts, with NaN and infinities at the
// first, a middle and the last float, and a trailing partial float.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/float_pieces.h"
#include "common/vector_math.h"

namespace taups {
namespace {

// `floats`' bytes (plus `tail` stray bytes) placed `shift` bytes past a
// 4-aligned address of `storage`, cut every `cut(i)` bytes.
template <typename Cutter>
std::vector<absl::string_view> Cut(const std::vector<float>& floats,
                                   size_t shift, size_t tail, Cutter cut,
                                   std::vector<uint32_t>* storage) {
  const size_t size = 4 * floats.size() + tail;
  storage->assign((shift + size) / 4 + 2, 0xa5a5a5a5u);
  char* base = reinterpret_cast<char*>(storage->data()) + shift;
  if (!floats.empty()) std::memcpy(base, floats.data(), 4 * floats.size());
  for (size_t i = 0; i < tail; ++i) base[4 * floats.size() + i] = 0x7f;
  std::vector<absl::string_view> pieces;
  for (size_t at = 0, i = 0; at < size; ++i) {
    const size_t n = std::min(cut(i), size - at);
    pieces.emplace_back(base + at, n);
    at += n;
  }
  return pieces;
}

// The floats ForEachFloatRun hands out, checking the runs are consecutive.
std::vector<uint32_t> RunBits(const std::vector<absl::string_view>& pieces) {
  std::vector<uint32_t> bits;
  ForEachFloatRun(pieces, [&](size_t first, absl::Span<const float> run) {
    REQUIRE(first == bits.size());
    REQUIRE(!run.empty());
    REQUIRE(reinterpret_cast<uintptr_t>(run.data()) % alignof(float) == 0);
    for (float x : run) {
      uint32_t b;
      std::memcpy(&b, &x, 4);
      bits.push_back(b);
    }
  });
  return bits;
}

// The floats a walk of byte runs hands its `run`, checking the runs are
// consecutive from float `begin` on: walk(run) calls run(first, bytes, n).
template <typename Walk>
std::vector<uint32_t> WalkedBits(size_t begin, Walk walk) {
  std::vector<uint32_t> bits;
  walk([&](size_t first, const char* bytes, size_t n) {
    REQUIRE(first == begin + bits.size());
    REQUIRE(n > 0);
    for (size_t i = 0; i < n; ++i) {
      uint32_t b;
      std::memcpy(&b, bytes + 4 * i, 4);
      bits.push_back(b);
    }
  });
  return bits;
}

// The same through ForEachFloatBytes.
std::vector<uint32_t> ByteRunBits(const std::vector<absl::string_view>& pieces) {
  return WalkedBits(0, [&](auto run) { ForEachFloatBytes(pieces, run); });
}

std::vector<uint32_t> Bits(const std::vector<float>& floats) {
  std::vector<uint32_t> bits(floats.size());
  if (!floats.empty()) std::memcpy(bits.data(), floats.data(), 4 * floats.size());
  return bits;
}

TEST_CASE("piecewise max |x| and runs match the gathered tensor") {
  std::mt19937 rng(14);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::max()};
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{17}, size_t{40}}) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    for (size_t shift = 0; shift < 4; ++shift) {
      for (size_t tail = 0; tail < 4; ++tail) {
        for (size_t piece = 1; piece <= 13; ++piece) {
          INFO("n " << n << " shift " << shift << " tail " << tail
                    << " piece " << piece);
          std::vector<uint32_t> storage;
          auto pieces = Cut(v, shift, tail, [&](size_t) { return piece; },
                            &storage);
          REQUIRE(MaxAbsOfPieces(pieces) == MaxAbs(v));
          REQUIRE(RunBits(pieces) == Bits(v));
          REQUIRE(ByteRunBits(pieces) == Bits(v));
          for (size_t at : {size_t{0}, n / 2, n - 1}) {
            if (n == 0) break;
            for (float special : specials) {
              std::vector<float> w = v;
              w[at] = special;
              INFO("at " << at << " value " << special);
              auto bad = Cut(w, shift, tail, [&](size_t) { return piece; },
                             &storage);
              REQUIRE(MaxAbsOfPieces(bad) == MaxAbs(w));
              REQUIRE(RunBits(bad) == Bits(w));
              REQUIRE(ByteRunBits(bad) == Bits(w));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("random cuts, empty pieces and long misaligned runs") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<size_t> size(0, 9000);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int round = 0; round < 200; ++round) {
    std::vector<float> v(size(rng) / 3);
    for (float& x : v) x = normal(rng);
    const size_t shift = round % 4;
    std::uniform_int_distribution<size_t> cut(0, round % 2 == 0 ? 9 : 6000);
    std::vector<uint32_t> storage;
    auto pieces = Cut(v, shift, round % 3, [&](size_t) { return cut(rng); },
                      &storage);
    INFO("round " << round << " floats " << v.size());
    REQUIRE(MaxAbsOfPieces(pieces) == MaxAbs(v));
    REQUIRE(RunBits(pieces) == Bits(v));
    REQUIRE(ByteRunBits(pieces) == Bits(v));
  }
}

TEST_CASE("an aligned piece is handed out in place, a misaligned one bounced") {
  std::vector<float> v(3000, 0.5f);
  std::vector<uint32_t> storage;
  for (size_t shift = 0; shift < 4; ++shift) {
    auto pieces = Cut(v, shift, 0, [](size_t) { return size_t{1} << 30; },
                      &storage);
    size_t runs = 0;
    bool in_place = false;
    ForEachFloatRun(pieces, [&](size_t, absl::Span<const float> run) {
      ++runs;
      in_place = reinterpret_cast<const char*>(run.data()) == pieces[0].data();
    });
    INFO("shift " << shift);
    if (shift == 0) {
      REQUIRE(runs == 1);
      REQUIRE(in_place);
    } else {
      REQUIRE(runs == (3000 + kFloatRunBounce - 1) / kFloatRunBounce);
      REQUIRE(!in_place);
    }
  }
}

// The floats FloatPieces hands out for [begin, end).
std::vector<uint32_t> RangeBits(const FloatPieces& pieces, size_t begin,
                                size_t end) {
  return WalkedBits(begin,
                    [&](auto run) { pieces.ForEachBytes(begin, end, run); });
}

TEST_CASE("any range of FloatPieces reads the gathered tensor's floats") {
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int round = 0; round < 300; ++round) {
    std::vector<float> v(1 + rng() % 700);
    for (float& x : v) x = normal(rng);
    // Pieces of 0 to 23 bytes (empty ones included), or a few large ones.
    std::uniform_int_distribution<size_t> cut(0, round % 3 == 0 ? 900 : 23);
    std::vector<uint32_t> storage;
    const auto cuts = Cut(v, round % 4, 0, [&](size_t) { return cut(rng); },
                          &storage);
    const FloatPieces pieces(cuts);
    INFO("round " << round << " floats " << v.size());
    REQUIRE(pieces.floats() == v.size());
    REQUIRE(pieces.bytes() == 4 * v.size());
    for (const absl::string_view piece : pieces.pieces()) {
      REQUIRE(!piece.empty());  // empty ones are dropped
    }
    const std::vector<uint32_t> all = Bits(v);
    for (int k = 0; k < 20; ++k) {
      size_t begin = rng() % (v.size() + 1);
      size_t end = rng() % (v.size() + 1);
      if (begin > end) std::swap(begin, end);
      INFO("range [" << begin << ", " << end << ")");
      const std::vector<uint32_t> want(all.begin() + begin, all.begin() + end);
      REQUIRE(RangeBits(pieces, begin, end) == want);
      std::vector<float> copied(end - begin, -7.0f);
      pieces.CopyTo(begin, end, copied.data());
      REQUIRE(Bits(copied) == want);
    }
    REQUIRE(RangeBits(pieces, 0, v.size()) == all);
  }
}

}  // namespace
}  // namespace taups
