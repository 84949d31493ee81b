// Test helper: a dense SGD table and reproducible gradients, for tests that
// push through real shards and check the values they applied.
#ifndef TAUPS_TESTS_DENSE_PUSH_FIXTURES_H_
#define TAUPS_TESTS_DENSE_PUSH_FIXTURES_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "taups/table_config.h"

namespace taups {

// A power of two: a push of g from zero parameters applies exactly
// -kSgdRate * g.
constexpr float kSgdRate = 0.5f;

// A dense table of `n` floats updated by plain SGD at `learning_rate`.
inline TableConfig DenseSgd(const std::string& name, uint64_t n,
                            float learning_rate = kSgdRate) {
  TableConfig config = TableConfig::Dense(name, n);
  config.optimizer.learning_rate = learning_rate;
  return config;
}

// `n` draws of N(0, 1), the same for the same seed.
inline std::vector<float> RandomGradient(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(n);
  for (float& x : g) x = normal(rng);
  return g;
}

}  // namespace taups

#endif  // TAUPS_TESTS_DENSE_PUSH_FIXTURES_H_
