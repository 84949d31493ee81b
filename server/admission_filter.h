// AdmissionFilter: decides when a key that has no row in a stripe gets one.
//
// Two gates, both deterministic per key:
//   admit_after = a > 1   the key's a-th sighting is the first admitted;
//   probability = p < 1   the key draws u in [0, 1) from a hash of (key,
//                         seed) and needs n(key) sightings, the smallest
//                         n >= 1 with 1 - (1 - p)^n > u: geometric with
//                         parameter p, so a key seen once is admitted with
//                         probability p and a key seen n times with
//                         1 - (1 - p)^n, as if every sighting flipped a coin.
// A key needs max(a, n(key)) sightings. Sightings are counted in a
// count-min sketch (4 x 4096 16-bit counters, 32 KiB): collisions can only
// overcount, so a key is never admitted later than its rule says; counters
// saturate at 65535, which also caps n(key). A key whose rule is one
// sighting is admitted without touching the sketch.
//
// Thread-compatible: the stripe's mutex guards it.
#ifndef TAUPS_SERVER_ADMISSION_FILTER_H_
#define TAUPS_SERVER_ADMISSION_FILTER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace taups {

class AdmissionFilter {
 public:
  static constexpr size_t kSketchBytes = 4 * 4096 * sizeof(uint16_t);

  // `seed` makes the probability draws differ between tables.
  AdmissionFilter(uint32_t admit_after, float admit_probability, uint64_t seed);

  // False when every key is admitted on first sight (no sketch kept).
  bool enabled() const { return !sketch_.empty(); }
  // Counts one sighting of `key`, which has no row; true if it is admitted.
  bool Sight(uint64_t key);
  // Sightings `key` needs before it is admitted (>= 1).
  uint32_t SightingsNeeded(uint64_t key) const;

  size_t memory_bytes() const { return sketch_.size() * sizeof(sketch_[0]); }

 private:
  static constexpr int kDepth = 4;
  static constexpr int kWidth = 4096;

  const uint32_t admit_after_;
  const double log_refuse_;  // log(1 - p); 0 when p == 1
  const uint64_t seed_;
  std::vector<std::array<uint16_t, kWidth>> sketch_;  // empty if disabled
};

}  // namespace taups

#endif  // TAUPS_SERVER_ADMISSION_FILTER_H_
