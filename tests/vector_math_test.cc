// common/vector_math: the branch-free scans against plain loops, at every
// length around the vector widths, with NaN, infinities, -0 and the largest
// finite float anywhere in the run.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "common/vector_math.h"
#include "common/vector_math_testing.h"

namespace taups {
namespace {

float PlainMaxAbs(const std::vector<float>& v) {
  float max = 0.0f;
  for (float x : v) {
    if (!std::isfinite(x)) return std::numeric_limits<float>::infinity();
    max = std::max(max, std::abs(x));
  }
  return max;
}

TEST_CASE("MaxAbs and AllFinite match plain loops") {
  // Both forms of the scan: AVX2 (where this CPU has it) and SSE2.
  const bool narrow = GENERATE(false, true);
  NarrowMaxAbsForTesting(narrow);
  INFO((MaxAbsUsesAvx2() ? "avx2" : "sse2 or portable") << " scan");
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(), -0.0f};
  for (size_t n = 0; n < 70; ++n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    INFO("n " << n);
    REQUIRE(MaxAbs(v) == PlainMaxAbs(v));
    REQUIRE(AllFinite(v));
    for (size_t at = 0; at < n; ++at) {
      for (float special : specials) {
        std::vector<float> w = v;
        w[at] = special;
        INFO("at " << at << " value " << special);
        REQUIRE(MaxAbs(w) == PlainMaxAbs(w));
        REQUIRE(AllFinite(w) == std::isfinite(special));
      }
    }
  }
  REQUIRE(MaxAbs({}) == 0.0f);
  NarrowMaxAbsForTesting(false);
}

// A float's bits placed at `dst` (any alignment).
void Put(float x, char* dst) { std::memcpy(dst, &x, sizeof(x)); }

TEST_CASE("CopyMaxAbs copies exactly and measures like a plain loop, at any alignment") {
  std::mt19937 rng(20261202);
  std::normal_distribution<float> normal(0.0f, 1e3f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            -0.0f};
  std::vector<size_t> sizes = {0,  1,  2,  3,  15, 16,  17,  31,
                               32, 33, 63, 65, 95, 96, 97, 129};
  for (int i = 0; i < 40; ++i) sizes.push_back(rng() % 3000);
  // Both forms of the scan: AVX2 (where this CPU has it) and SSE2.
  const bool narrow = GENERATE(false, true);
  NarrowMaxAbsForTesting(narrow);
  INFO((MaxAbsUsesAvx2() ? "avx2" : "sse2 or portable") << " scan");
  for (size_t n : sizes) {
    for (size_t src_shift = 0; src_shift < 4; ++src_shift) {
      const size_t dst_shift = (src_shift * 3 + n) % 4;
      std::vector<float> v(n);
      for (float& x : v) {
        // Normal values, tiny ones (denormals among them) and -0.
        const uint32_t kind = rng() % 8;
        x = kind == 0 ? normal(rng) * 1e-42f : kind == 1 ? -0.0f : normal(rng);
      }
      // At most two specials, at random places.
      for (int k = 0; n > 0 && k < static_cast<int>(rng() % 3); ++k) {
        v[rng() % n] = specials[rng() % std::size(specials)];
      }
      std::vector<char> src(4 * n + 8), dst(4 * n + 8, '\x5a');
      for (size_t i = 0; i < n; ++i) Put(v[i], src.data() + src_shift + 4 * i);
      INFO("n " << n << " src shift " << src_shift << " dst shift " << dst_shift);
      const float expected = PlainMaxAbs(v);
      REQUIRE(MaxAbsOfBytes(src.data() + src_shift, n) == expected);
      REQUIRE(CopyMaxAbs(src.data() + src_shift, dst.data() + dst_shift, n) ==
              expected);
      // Every byte copied (NaN payloads and -0 included), none beyond.
      REQUIRE(std::memcmp(dst.data() + dst_shift, src.data() + src_shift,
                          4 * n) == 0);
      for (size_t i = 0; i < dst.size(); ++i) {
        if (i < dst_shift || i >= dst_shift + 4 * n) REQUIRE(dst[i] == '\x5a');
      }
    }
  }
  NarrowMaxAbsForTesting(false);
}

TEST_CASE("AllSumsFinite sees a sum that overflows") {
  const float big = std::numeric_limits<float>::max();
  std::vector<float> a(37, 1.0f), b(37, 2.0f);
  REQUIRE(AllSumsFinite(a, b));
  a[33] = big;
  b[33] = big;
  REQUIRE_FALSE(AllSumsFinite(a, b));
}

}  // namespace
}  // namespace taups
