// Table configuration shared by the server core and the worker client API.
//
// A table is either dense (one flat float32 tensor of `dense_size` elements,
// split into contiguous ranges across shards) or sparse (uint64 key -> row of
// `dim` floats, rows hashed to shards and created on first touch).
//
// Plain value types; no thread-safety concerns.
#ifndef TAUPS_TABLE_CONFIG_H_
#define TAUPS_TABLE_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/status/status.h"

namespace taups {

enum class TableKind { kDense, kSparse };
enum class OptimizerKind { kSgd, kAdagrad };
enum class InitializerKind { kZeros, kUniform, kNormal };
enum class ConsistencyKind { kAsync };

// Server-side update rule applied to every accepted gradient.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;
  // Adagrad: accumulator starts here; update is lr * g / (sqrt(acc) + eps).
  float adagrad_initial_accumulator = 0.1f;
  float adagrad_epsilon = 1e-8f;
};

// How parameters are born. Deterministic: the same (seed, table, position or
// key) always gives the same value, on any shard layout.
struct InitializerConfig {
  InitializerKind kind = InitializerKind::kZeros;
  float scale = 0.0f;  // uniform: U(-scale, scale); normal: N(0, scale^2)
  uint64_t seed = 0;
};

struct TableConfig {
  std::string name;
  TableKind kind = TableKind::kDense;
  uint64_t dense_size = 0;  // dense only: total elements across all shards
  uint32_t dim = 0;         // sparse only: floats per row
  OptimizerConfig optimizer;
  InitializerConfig initializer;
  ConsistencyKind consistency = ConsistencyKind::kAsync;

  static TableConfig Dense(std::string name, uint64_t size);
  static TableConfig Sparse(std::string name, uint32_t dim);

  // OK, or INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

bool operator==(const OptimizerConfig& a, const OptimizerConfig& b);
bool operator==(const InitializerConfig& a, const InitializerConfig& b);
bool operator==(const TableConfig& a, const TableConfig& b);

const char* TableKindName(TableKind kind);
const char* OptimizerKindName(OptimizerKind kind);

// Limits that keep one request or table from exhausting a shard.
inline constexpr uint64_t kMaxDenseTableSize = uint64_t{1} << 34;  // 64 GiB fp32
inline constexpr uint32_t kMaxSparseDim = 4096;
inline constexpr size_t kMaxTableNameLength = 128;

}  // namespace taups

#endif  // TAUPS_TABLE_CONFIG_H_
