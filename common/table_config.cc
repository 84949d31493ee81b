#include "taups/table_config.h"

#include <cctype>
#include <cmath>

#include "absl/strings/string_view.h"
#include "absl/strings/escaping.h"
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
        "table name ", QuotedName(name), " must be 1..", kMaxTableNameLength,
        " characters, has ", name.size()));
  }
  for (unsigned char c : name) {
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table name ", QuotedName(name),
          " may only hold letters, digits and _-./"));
    }
  }
  if (kind == TableKind::kDense) {
    if (dense_size == 0 || dense_size > kMaxDenseTableSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dense table '", name, "': size ", dense_size, " outside 1..",
          kMaxDenseTableSize));
    }
    if (dim != 0 || sparse_max_rows != 0 || sparse_admit_after != 0 ||
        sparse_max_bytes != 0 || sparse_eviction != SparseEvictionKind::kLru ||
        sparse_ttl_s != 0.0 || sparse_admit_probability != 1.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dense table '", name, "': dim and the sparse_* settings are for "
          "sparse tables"));
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
    if (sparse_max_rows != 0 && sparse_max_rows < 64) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse table '", name, "': max_rows ", sparse_max_rows,
          " is below the 64 lock stripes it is split over (0 = unbounded)"));
    }
    // At most a billion seconds (~31.7 years): the table keeps the ttl in
    // int64 nanoseconds, which hold about 9.2e9 s.
    if (!std::isfinite(sparse_ttl_s) || sparse_ttl_s < 0.0 || sparse_ttl_s > 1e9) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse table '", name, "': ttl must be in [0, 1e9] seconds (0 "
          "= rows never expire), got ", sparse_ttl_s));
    }
    if (!(sparse_admit_probability > 0.0f && sparse_admit_probability <= 1.0f)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse table '", name, "': admit probability must be in (0, 1], "
          "got ", sparse_admit_probability));
    }
  }
  const float lr = optimizer.learning_rate;
  if (!std::isfinite(lr) || lr <= 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': learning rate must be finite and > 0, got ", lr));
  }
  // Only the hyper-parameters the chosen optimizer uses are checked; the
  // others are ignored whatever they hold. On the wire 0 means a field's
  // default, so a used field whose default is not 0 must not be 0 here.
  const OptimizerConfig& o = optimizer;
  auto bad = [&](absl::string_view what, float value, absl::string_view range,
                 absl::string_view zero_hint) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': ", OptimizerKindName(o.kind), " needs ", what,
        " in ", range, ", got ", value, zero_hint));
  };
  auto unit_open = [](float x) { return x > 0.0f && x < 1.0f; };
  auto positive = [](float x) { return std::isfinite(x) && x > 0.0f; };
  auto non_negative = [](float x) { return std::isfinite(x) && x >= 0.0f; };
  switch (o.kind) {
    case OptimizerKind::kSgd:
      break;
    case OptimizerKind::kMomentum:
      if (!unit_open(o.momentum)) {
        return bad("momentum", o.momentum, "(0, 1)",
                   " (for no momentum use sgd)");
      }
      break;
    case OptimizerKind::kAdagrad:
      if (!positive(o.adagrad_initial_accumulator)) {
        return bad("initial_accumulator", o.adagrad_initial_accumulator,
                   "(0, inf)", "");
      }
      if (!positive(o.adagrad_epsilon)) {
        return bad("epsilon", o.adagrad_epsilon, "(0, inf)", "");
      }
      break;
    case OptimizerKind::kAdam:
      if (!unit_open(o.adam_beta1)) return bad("beta1", o.adam_beta1, "(0, 1)", "");
      if (!unit_open(o.adam_beta2)) return bad("beta2", o.adam_beta2, "(0, 1)", "");
      if (!positive(o.adam_epsilon)) {
        return bad("epsilon", o.adam_epsilon, "(0, inf)", "");
      }
      break;
    case OptimizerKind::kFtrl:
      if (!positive(o.ftrl_beta)) return bad("beta", o.ftrl_beta, "(0, inf)", "");
      if (!non_negative(o.ftrl_l1)) return bad("l1", o.ftrl_l1, "[0, inf)", "");
      if (!non_negative(o.ftrl_l2)) return bad("l2", o.ftrl_l2, "[0, inf)", "");
      break;
  }
  if (!std::isfinite(initializer.scale) || initializer.scale < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': initializer scale must be finite and >= 0"));
  }
  const ConsistencyConfig& c = consistency;
  if (c.kind != ConsistencyKind::kAsync && c.num_workers == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': ", ConsistencyKindName(c.kind),
        " needs consistency.num_workers (workers expected) > 0"));
  }
  if (!(c.quorum > 0.0f && c.quorum <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': quorum must be in (0, 1], got ", c.quorum));
  }
  if (!std::isfinite(c.step_timeout_s) || c.step_timeout_s < 0.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': step timeout must be finite and >= 0"));
  }
  const StalenessConfig& st = staleness;
  if (!std::isfinite(st.downweight_lambda) || st.downweight_lambda < 0.0f ||
      !std::isfinite(st.delay_compensation_lambda) ||
      st.delay_compensation_lambda < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': staleness lambdas must be finite and >= 0"));
  }
  if (!std::isfinite(st.clip_norm) || st.clip_norm < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': clip_norm must be finite and >= 0"));
  }
  if (st.delay_compensation && kind != TableKind::kDense) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "': delay compensation is for dense tables"));
  }
  return absl::OkStatus();
}

bool operator==(const ConsistencyConfig& a, const ConsistencyConfig& b) {
  return a.kind == b.kind && a.num_workers == b.num_workers &&
         a.quorum == b.quorum && a.step_timeout_s == b.step_timeout_s &&
         a.late == b.late && a.staleness_bound == b.staleness_bound;
}

bool operator==(const StalenessConfig& a, const StalenessConfig& b) {
  return a.reject_above_tau_max == b.reject_above_tau_max &&
         a.tau_max == b.tau_max && a.downweight == b.downweight &&
         a.downweight_lambda == b.downweight_lambda &&
         a.delay_compensation == b.delay_compensation &&
         a.delay_compensation_lambda == b.delay_compensation_lambda &&
         a.clip_norm == b.clip_norm && a.warmup_versions == b.warmup_versions;
}

bool operator==(const OptimizerConfig& a, const OptimizerConfig& b) {
  return a.kind == b.kind && a.learning_rate == b.learning_rate &&
         a.adagrad_initial_accumulator == b.adagrad_initial_accumulator &&
         a.adagrad_epsilon == b.adagrad_epsilon && a.momentum == b.momentum &&
         a.adam_beta1 == b.adam_beta1 && a.adam_beta2 == b.adam_beta2 &&
         a.adam_epsilon == b.adam_epsilon && a.ftrl_beta == b.ftrl_beta &&
         a.ftrl_l1 == b.ftrl_l1 && a.ftrl_l2 == b.ftrl_l2;
}

bool operator==(const InitializerConfig& a, const InitializerConfig& b) {
  return a.kind == b.kind && a.scale == b.scale && a.seed == b.seed;
}

bool operator==(const TableConfig& a, const TableConfig& b) {
  return a.name == b.name && a.kind == b.kind &&
         a.dense_size == b.dense_size && a.dim == b.dim &&
         a.sparse_max_rows == b.sparse_max_rows &&
         a.sparse_admit_after == b.sparse_admit_after &&
         a.sparse_max_bytes == b.sparse_max_bytes &&
         a.sparse_eviction == b.sparse_eviction &&
         a.sparse_ttl_s == b.sparse_ttl_s &&
         a.sparse_admit_probability == b.sparse_admit_probability &&
         a.optimizer == b.optimizer && a.initializer == b.initializer &&
         a.consistency == b.consistency && a.staleness == b.staleness;
}

std::string QuotedName(absl::string_view name) {
  const absl::string_view shown = name.substr(0, kMaxQuotedNameBytes);
  std::string quoted = absl::StrCat("'", absl::CHexEscape(shown));
  if (shown.size() < name.size()) {
    absl::StrAppend(&quoted, "...' (", name.size(), " bytes)");
  } else {
    quoted.push_back('\'');
  }
  return quoted;
}

const char* TableKindName(TableKind kind) {
  return kind == TableKind::kDense ? "dense" : "sparse";
}

const char* OptimizerKindName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdagrad: return "adagrad";
    case OptimizerKind::kMomentum: return "momentum";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kFtrl: return "ftrl";
  }
  return "?";
}

}  // namespace taups

namespace taups {

const char* ConsistencyKindName(ConsistencyKind kind) {
  switch (kind) {
    case ConsistencyKind::kAsync: return "async";
    case ConsistencyKind::kSync: return "sync";
    case ConsistencyKind::kSemiSync: return "semi_sync";
    case ConsistencyKind::kSsp: return "ssp";
  }
  return "?";
}

const char* LatePolicyName(LatePolicy late) {
  switch (late) {
    case LatePolicy::kDrop: return "drop";
    case LatePolicy::kReuseLast: return "reuse_last";
    case LatePolicy::kApplyLate: return "apply_late";
  }
  return "?";
}

const char* DownweightKindName(DownweightKind kind) {
  switch (kind) {
    case DownweightKind::kNone: return "none";
    case DownweightKind::kInverse: return "inverse";
    case DownweightKind::kInversePlusOne: return "inverse_plus_one";
    case DownweightKind::kExponential: return "exp";
  }
  return "?";
}

const char* SparseEvictionKindName(SparseEvictionKind kind) {
  switch (kind) {
    case SparseEvictionKind::kLru: return "lru";
    case SparseEvictionKind::kLfu: return "lfu";
  }
  return "?";
}

namespace {

template <typename Enum, size_t N>
absl::Status ParseByName(absl::string_view what, absl::string_view text,
                         const Enum (&values)[N], const char* (*name)(Enum),
                         Enum* out) {
  std::string valid;
  for (Enum v : values) {
    if (text == name(v)) {
      *out = v;
      return absl::OkStatus();
    }
    absl::StrAppend(&valid, valid.empty() ? "" : "|", name(v));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ", what, " '", text, "'; expected ", valid));
}

}  // namespace

absl::Status ParseConsistencyKind(absl::string_view text, ConsistencyKind* out) {
  static constexpr ConsistencyKind kAll[] = {
      ConsistencyKind::kAsync, ConsistencyKind::kSync,
      ConsistencyKind::kSemiSync, ConsistencyKind::kSsp};
  return ParseByName("consistency", text, kAll, ConsistencyKindName, out);
}

absl::Status ParseLatePolicy(absl::string_view text, LatePolicy* out) {
  static constexpr LatePolicy kAll[] = {LatePolicy::kDrop, LatePolicy::kReuseLast,
                                        LatePolicy::kApplyLate};
  return ParseByName("late policy", text, kAll, LatePolicyName, out);
}

absl::Status ParseDownweightKind(absl::string_view text, DownweightKind* out) {
  static constexpr DownweightKind kAll[] = {
      DownweightKind::kNone, DownweightKind::kInverse,
      DownweightKind::kInversePlusOne, DownweightKind::kExponential};
  return ParseByName("down-weight function", text, kAll, DownweightKindName, out);
}

absl::Status ParseSparseEvictionKind(absl::string_view text,
                                     SparseEvictionKind* out) {
  static constexpr SparseEvictionKind kAll[] = {SparseEvictionKind::kLru,
                                                SparseEvictionKind::kLfu};
  return ParseByName("sparse eviction policy", text, kAll,
                     SparseEvictionKindName, out);
}

}  // namespace taups
