// common/vector_math: the branch-free scans against plain loops, at every
// length around the vector widths, with NaN, infinities, -0 and the largest
// finite float anywhere in the run.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/vector_math.h"

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
