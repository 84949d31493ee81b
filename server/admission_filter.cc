#include "server/admission_filter.h"

#include <algorithm>
#include <cmath>

#include "common/shard_map.h"

namespace taups {

AdmissionFilter::AdmissionFilter(uint32_t admit_after, float admit_probability,
                                 uint64_t seed)
    : admit_after_(admit_after),
      log_refuse_(admit_probability >= 1.0f
                      ? 0.0
                      : std::log1p(-static_cast<double>(admit_probability))),
      seed_(seed) {
  if (admit_after_ > 1 || admit_probability < 1.0f) {
    sketch_.assign(kDepth, std::array<uint16_t, kWidth>{});
  }
}

uint32_t AdmissionFilter::SightingsNeeded(uint64_t key) const {
  uint32_t needed = std::max<uint32_t>(admit_after_, 1);
  if (log_refuse_ < 0.0) {
    // u in [0, 1) from the top 53 bits; n = floor(log(1-u) / log(1-p)) + 1.
    const double u =
        static_cast<double>(MixKey(key ^ seed_) >> 11) * 0x1.0p-53;
    const double n = std::floor(std::log1p(-u) / log_refuse_) + 1.0;
    needed = std::max<uint32_t>(
        needed, static_cast<uint32_t>(std::min(n, double{UINT16_MAX})));
  }
  return needed;
}

bool AdmissionFilter::Sight(uint64_t key) {
  if (sketch_.empty()) return true;
  const uint32_t needed = SightingsNeeded(key);
  if (needed <= 1) return true;
  uint32_t estimate = UINT16_MAX;
  for (int d = 0; d < kDepth; ++d) {
    uint16_t& cell =
        sketch_[d][MixKey(key ^ (0x9e3779b97f4a7c15ULL * (d + 1))) % kWidth];
    if (cell < UINT16_MAX) ++cell;
    estimate = std::min<uint32_t>(estimate, cell);
  }
  return estimate >= needed;
}

}  // namespace taups
