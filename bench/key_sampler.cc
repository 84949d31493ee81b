#include "bench/key_sampler.h"

#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/random/uniform_int_distribution.h"
#include "absl/random/zipf_distribution.h"

namespace taups::bench {

std::vector<uint64_t> UniformKeys(size_t count, uint64_t key_space,
                                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  absl::uniform_int_distribution<uint64_t> dist(0, key_space - 1);
  std::vector<uint64_t> keys(count);
  for (uint64_t& key : keys) key = dist(rng);
  return keys;
}

std::vector<uint64_t> ZipfKeys(size_t count, uint64_t key_space,
                               double exponent, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // P(r) ~ (v + r)^-q over r in [0, k]; v = 1 makes it (r + 1)^-exponent.
  absl::zipf_distribution<uint64_t> dist(key_space - 1, exponent, 1.0);
  // Odd multiplier: a bijection modulo any power of two.
  constexpr uint64_t kScatter = 0x9e3779b97f4a7c15ULL;
  std::vector<uint64_t> keys(count);
  for (uint64_t& key : keys) key = (dist(rng) * kScatter) % key_space;
  return keys;
}

size_t CountUnique(absl::Span<const uint64_t> keys) {
  absl::flat_hash_set<uint64_t> seen(keys.begin(), keys.end());
  return seen.size();
}

}  // namespace taups::bench
