// Test helpers for DenseTable called directly (no store, no shard): a
// config with a non-trivial optimizer, reproducible gradients, and
// bit-for-bit comparisons of what two tables hold.
#ifndef TAUPS_TESTS_DENSE_TABLE_FIXTURES_H_
#define TAUPS_TESTS_DENSE_TABLE_FIXTURES_H_

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "server/dense_table.h"
#include "server/table.h"
#include "taups/table_config.h"

namespace taups {

// A dense table "w" of `size` floats: `kind` at rate 0.05, uniform in
// [-0.5, 0.5], with or without delay compensation (lambda 0.3).
inline TableConfig DenseTestConfig(OptimizerKind kind, uint64_t size, bool dc) {
  TableConfig config = TableConfig::Dense("w", size);
  config.optimizer.kind = kind;
  config.optimizer.learning_rate = 0.05f;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.5f;
  config.staleness.delay_compensation = dc;
  config.staleness.delay_compensation_lambda = 0.3f;
  return config;
}

// `n` draws uniform in [-2, 2], the same for the same seed.
inline std::vector<float> UniformGradient(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> g(n);
  for (float& v : g) v = dist(rng);
  return g;
}

// Bit-for-bit equality (a NaN equals itself, -0 differs from +0).
inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

// Values and optimizer state equal bit for bit.
inline bool SameTable(const DenseTable& a, const DenseTable& b) {
  const TableSnapshot x = a.Export();
  const TableSnapshot y = b.Export();
  return SameBits(x.values, y.values) && SameBits(x.state, y.state);
}

// A dense gradient part at global `offset`, viewing `g`.
inline GradientPart DensePart(uint64_t offset, const std::vector<float>& g) {
  GradientPart part;
  part.offset = offset;
  part.values = g;
  return part;
}

}  // namespace taups

#endif  // TAUPS_TESTS_DENSE_TABLE_FIXTURES_H_
