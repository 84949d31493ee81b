#include "taups/table_config.h"

#include <cctype>
#include <cmath>

#include "absl/strings/string_view.h"
#include "absl/strings/str_cat.h"

namespace taups {

TableConfig TableConfig::Dense(std::string name, uint64_t size) {
  TableConfig config;
  config.name = std::move(name);
  config.kind = TableKind::kDense;
  config.dense_size = size;
  return config;
}

TableConfig TableConfig::Sparse(std::string name, uint32_t dim) {
  TableConfig config;
  config.name = std::move(name);
  config.kind = TableKind::kSparse;
  config.dim = dim;
  return config;
}

absl::Status TableConfig::Validate() const {
  if (name.empty() || name.size() > kMaxTableNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table name must be 1..", kMaxTableNameLength, " characters"));
  }
  for (unsigned char c : name) {
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table name '", name, "' may only hold letters, digits and _-./"));
    }
  }
  if (kind == TableKind::kDense) {
    if (dense_size == 0 || dense_size > kMaxDenseTableSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dense table '", name, "': size ", dense_size, " outside 1..",
          kMaxDenseTableSize));
    }
    if (dim != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dense table '", name, "': dim is for sparse tables"));
    }
  } else {
    if (dim == 0 || dim > kMaxSparseDim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse table '", name, "': dim ", dim, " outside 1..", kMaxSparseDim));
    }
    if (dense_size != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse table '", name, "': dense_size is for dense tables"));
    }
  }
  const float lr = optimizer.learning_rate;
  if (!std::isfinite(lr) || lr <= 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': learning rate must be finite and > 0, got ", lr));
  }
  if (optimizer.kind == OptimizerKind::kAdagrad) {
    if (!std::isfinite(optimizer.adagrad_initial_accumulator) ||
        optimizer.adagrad_initial_accumulator < 0.0f ||
        !std::isfinite(optimizer.adagrad_epsilon) ||
        optimizer.adagrad_epsilon <= 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", name,
          "': adagrad needs initial_accumulator >= 0 and epsilon > 0"));
    }
  }
  if (!std::isfinite(initializer.scale) || initializer.scale < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': initializer scale must be finite and >= 0"));
  }
  return absl::OkStatus();
}

bool operator==(const OptimizerConfig& a, const OptimizerConfig& b) {
  return a.kind == b.kind && a.learning_rate == b.learning_rate &&
         a.adagrad_initial_accumulator == b.adagrad_initial_accumulator &&
         a.adagrad_epsilon == b.adagrad_epsilon;
}

bool operator==(const InitializerConfig& a, const InitializerConfig& b) {
  return a.kind == b.kind && a.scale == b.scale && a.seed == b.seed;
}

bool operator==(const TableConfig& a, const TableConfig& b) {
  return a.name == b.name && a.kind == b.kind &&
         a.dense_size == b.dense_size && a.dim == b.dim &&
         a.optimizer == b.optimizer && a.initializer == b.initializer &&
         a.consistency == b.consistency;
}

const char* TableKindName(TableKind kind) {
  return kind == TableKind::kDense ? "dense" : "sparse";
}

const char* OptimizerKindName(OptimizerKind kind) {
  return kind == OptimizerKind::kSgd ? "sgd" : "adagrad";
}

}  // namespace taups
