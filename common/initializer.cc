#include "common/initializer.h"

#include <cmath>

#include "common/shard_map.h"

namespace taups {
namespace {

// FNV-1a, so the table name contributes to the seed stably across builds.
uint64_t HashName(absl::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Uniform in (0, 1), from the top 24 bits (exact in float).
float UnitOpen(uint64_t bits) {
  return (static_cast<float>(bits >> 40) + 0.5f) * (1.0f / 16777216.0f);
}

}  // namespace

Initializer::Initializer(const InitializerConfig& config,
                         absl::string_view table_name)
    : config_(config), table_seed_(MixKey(config.seed ^ HashName(table_name))) {}

float Initializer::ValueAt(uint64_t stream, uint64_t index) const {
  const uint64_t a = MixKey(table_seed_ ^ MixKey(stream) ^ (index * 2));
  switch (config_.kind) {
    case InitializerKind::kZeros:
      return 0.0f;
    case InitializerKind::kUniform:
      return config_.scale * (2.0f * UnitOpen(a) - 1.0f);
    case InitializerKind::kNormal: {
      // Box-Muller on two independent draws.
      const uint64_t b = MixKey(a ^ 0x5851f42d4c957f2dULL);
      const float r = std::sqrt(-2.0f * std::log(UnitOpen(a)));
      return config_.scale * r * std::cos(6.28318530718f * UnitOpen(b));
    }
  }
  return 0.0f;
}

void Initializer::FillDense(uint64_t global_offset,
                            absl::Span<float> out) const {
  if (config_.kind == InitializerKind::kZeros) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = ValueAt(0, global_offset + i);
}

void Initializer::FillRow(uint64_t key, absl::Span<float> out) const {
  if (config_.kind == InitializerKind::kZeros) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  for (size_t j = 0; j < out.size(); ++j) out[j] = ValueAt(key + 1, j);
}

}  // namespace taups
