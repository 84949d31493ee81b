// Key batches for the sparse benchmark: uniformly random keys, and keys with
// a Zipf (power-law) popularity as real embedding lookups have, where a few
// hot keys repeat many times within one batch.
//
// Deterministic for a given seed. Pure functions; thread-compatible.
#ifndef TAUPS_BENCH_KEY_SAMPLER_H_
#define TAUPS_BENCH_KEY_SAMPLER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace taups::bench {

// `count` keys drawn uniformly from [0, key_space).
std::vector<uint64_t> UniformKeys(size_t count, uint64_t key_space,
                                  uint64_t seed);

// `count` keys from [0, key_space) where the key of popularity rank r
// (0-based) has probability proportional to (r + 1)^-exponent. exponent > 1.
// Ranks are scattered over the key space (multiplied by an odd constant: a
// bijection when key_space is a power of two), so hot keys are not
// numerically adjacent.
std::vector<uint64_t> ZipfKeys(size_t count, uint64_t key_space,
                               double exponent, uint64_t seed);

// Number of distinct keys in `keys`.
size_t CountUnique(absl::Span<const uint64_t> keys);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_KEY_SAMPLER_H_
