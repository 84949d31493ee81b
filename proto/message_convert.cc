#include "message_convert.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/histogram.h"
#include "server/parameter_store.h"
#include "server/push_types.h"
#include "server/table_info.h"
#include "server/wire_traffic.h"

namespace taups {

void ToWire(const TableConfig& config, v1::TableConfig* wire) {
  wire->set_name(config.name);
  wire->set_kind(config.kind == TableKind::kDense ? v1::TABLE_KIND_DENSE
                                                  : v1::TABLE_KIND_SPARSE);
  wire->set_dense_size(config.dense_size);
  wire->set_dim(config.dim);
  wire->set_sparse_max_rows(config.sparse_max_rows);
  wire->set_sparse_admit_after(config.sparse_admit_after);
  wire->set_sparse_max_bytes(config.sparse_max_bytes);
  wire->set_sparse_eviction(config.sparse_eviction == SparseEvictionKind::kLfu
                                ? v1::SPARSE_EVICTION_LFU
                                : v1::SPARSE_EVICTION_LRU);
  wire->set_sparse_ttl_s(config.sparse_ttl_s);
  wire->set_sparse_admit_probability(config.sparse_admit_probability);
  auto* opt = wire->mutable_optimizer();
  switch (config.optimizer.kind) {
    case OptimizerKind::kSgd: opt->set_kind(v1::OPTIMIZER_SGD); break;
    case OptimizerKind::kAdagrad: opt->set_kind(v1::OPTIMIZER_ADAGRAD); break;
    case OptimizerKind::kMomentum: opt->set_kind(v1::OPTIMIZER_MOMENTUM); break;
    case OptimizerKind::kAdam: opt->set_kind(v1::OPTIMIZER_ADAM); break;
    case OptimizerKind::kFtrl: opt->set_kind(v1::OPTIMIZER_FTRL); break;
  }
  opt->set_learning_rate(config.optimizer.learning_rate);
  opt->set_adagrad_initial_accumulator(
      config.optimizer.adagrad_initial_accumulator);
  opt->set_adagrad_epsilon(config.optimizer.adagrad_epsilon);
  opt->set_momentum(config.optimizer.momentum);
  opt->set_adam_beta1(config.optimizer.adam_beta1);
  opt->set_adam_beta2(config.optimizer.adam_beta2);
  opt->set_adam_epsilon(config.optimizer.adam_epsilon);
  opt->set_ftrl_beta(config.optimizer.ftrl_beta);
  opt->set_ftrl_l1(config.optimizer.ftrl_l1);
  opt->set_ftrl_l2(config.optimizer.ftrl_l2);
  auto* init = wire->mutable_initializer();
  switch (config.initializer.kind) {
    case InitializerKind::kZeros: init->set_kind(v1::INIT_ZEROS); break;
    case InitializerKind::kUniform: init->set_kind(v1::INIT_UNIFORM); break;
    case InitializerKind::kNormal: init->set_kind(v1::INIT_NORMAL); break;
  }
  init->set_scale(config.initializer.scale);
  init->set_seed(config.initializer.seed);
  ToWire(config.consistency, wire->mutable_consistency());
  ToWire(config.staleness, wire->mutable_staleness());
}

void ToWire(const ConsistencyConfig& c, v1::ConsistencyConfig* wire) {
  switch (c.kind) {
    case ConsistencyKind::kAsync: wire->set_kind(v1::CONSISTENCY_ASYNC); break;
    case ConsistencyKind::kSync: wire->set_kind(v1::CONSISTENCY_SYNC); break;
    case ConsistencyKind::kSemiSync: wire->set_kind(v1::CONSISTENCY_SEMI_SYNC); break;
    case ConsistencyKind::kSsp: wire->set_kind(v1::CONSISTENCY_SSP); break;
  }
  wire->set_num_workers(c.num_workers);
  wire->set_quorum(c.quorum);
  wire->set_step_timeout_s(c.step_timeout_s);
  switch (c.late) {
    case LatePolicy::kDrop: wire->set_late(v1::LATE_DROP); break;
    case LatePolicy::kReuseLast: wire->set_late(v1::LATE_REUSE_LAST); break;
    case LatePolicy::kApplyLate: wire->set_late(v1::LATE_APPLY_LATE); break;
  }
  wire->set_staleness_bound(c.staleness_bound);
}

void ToWire(const StalenessConfig& st, v1::StalenessConfig* wire) {
  wire->set_reject_above_tau_max(st.reject_above_tau_max);
  wire->set_tau_max(st.tau_max);
  switch (st.downweight) {
    case DownweightKind::kNone: wire->set_downweight(v1::DOWNWEIGHT_NONE); break;
    case DownweightKind::kInverse: wire->set_downweight(v1::DOWNWEIGHT_INVERSE); break;
    case DownweightKind::kInversePlusOne:
      wire->set_downweight(v1::DOWNWEIGHT_INVERSE_PLUS_ONE);
      break;
    case DownweightKind::kExponential:
      wire->set_downweight(v1::DOWNWEIGHT_EXPONENTIAL);
      break;
  }
  wire->set_downweight_lambda(st.downweight_lambda);
  wire->set_delay_compensation(st.delay_compensation);
  wire->set_delay_compensation_lambda(st.delay_compensation_lambda);
  wire->set_clip_norm(st.clip_norm);
  wire->set_warmup_versions(st.warmup_versions);
}

absl::StatusOr<ConsistencyConfig> FromWire(const v1::ConsistencyConfig& wire) {
  ConsistencyConfig c;
  switch (wire.kind()) {
    case v1::CONSISTENCY_UNSPECIFIED:
    case v1::CONSISTENCY_ASYNC: c.kind = ConsistencyKind::kAsync; break;
    case v1::CONSISTENCY_SYNC: c.kind = ConsistencyKind::kSync; break;
    case v1::CONSISTENCY_SEMI_SYNC: c.kind = ConsistencyKind::kSemiSync; break;
    case v1::CONSISTENCY_SSP: c.kind = ConsistencyKind::kSsp; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown consistency kind ", static_cast<int>(wire.kind())));
  }
  c.num_workers = wire.num_workers();
  // An unset quorum (proto3 default 0) means "all live workers".
  c.quorum = wire.quorum() == 0.0f ? 1.0f : wire.quorum();
  c.step_timeout_s = wire.step_timeout_s();
  switch (wire.late()) {
    case v1::LATE_DROP: c.late = LatePolicy::kDrop; break;
    case v1::LATE_REUSE_LAST: c.late = LatePolicy::kReuseLast; break;
    case v1::LATE_APPLY_LATE: c.late = LatePolicy::kApplyLate; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown late policy ", static_cast<int>(wire.late())));
  }
  c.staleness_bound = wire.staleness_bound();
  return c;
}

absl::StatusOr<StalenessConfig> FromWire(const v1::StalenessConfig& wire) {
  StalenessConfig st;
  st.reject_above_tau_max = wire.reject_above_tau_max();
  st.tau_max = wire.tau_max();
  switch (wire.downweight()) {
    case v1::DOWNWEIGHT_NONE: st.downweight = DownweightKind::kNone; break;
    case v1::DOWNWEIGHT_INVERSE: st.downweight = DownweightKind::kInverse; break;
    case v1::DOWNWEIGHT_INVERSE_PLUS_ONE:
      st.downweight = DownweightKind::kInversePlusOne;
      break;
    case v1::DOWNWEIGHT_EXPONENTIAL:
      st.downweight = DownweightKind::kExponential;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown down-weight function ", static_cast<int>(wire.downweight())));
  }
  st.downweight_lambda = wire.downweight_lambda();
  st.delay_compensation = wire.delay_compensation();
  st.delay_compensation_lambda = wire.delay_compensation_lambda();
  st.clip_norm = wire.clip_norm();
  st.warmup_versions = wire.warmup_versions();
  return st;
}

namespace {

// proto3 cannot tell an unset float from 0: a 0 hyper-parameter means the
// documented default (OptimizerConfig's, listed in ps.proto).
float OrDefault(float wire, float default_value) {
  return wire == 0.0f ? default_value : wire;
}

}  // namespace

absl::StatusOr<OptimizerConfig> FromWire(const v1::OptimizerConfig& wire) {
  const OptimizerConfig defaults;
  OptimizerConfig o;
  switch (wire.kind()) {
    case v1::OPTIMIZER_UNSPECIFIED:
    case v1::OPTIMIZER_SGD: o.kind = OptimizerKind::kSgd; break;
    case v1::OPTIMIZER_ADAGRAD: o.kind = OptimizerKind::kAdagrad; break;
    case v1::OPTIMIZER_MOMENTUM: o.kind = OptimizerKind::kMomentum; break;
    case v1::OPTIMIZER_ADAM: o.kind = OptimizerKind::kAdam; break;
    case v1::OPTIMIZER_FTRL: o.kind = OptimizerKind::kFtrl; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown optimizer ", static_cast<int>(wire.kind())));
  }
  o.learning_rate = OrDefault(wire.learning_rate(), defaults.learning_rate);
  o.adagrad_initial_accumulator =
      OrDefault(wire.adagrad_initial_accumulator(),
                defaults.adagrad_initial_accumulator);
  o.adagrad_epsilon = OrDefault(wire.adagrad_epsilon(), defaults.adagrad_epsilon);
  o.momentum = OrDefault(wire.momentum(), defaults.momentum);
  o.adam_beta1 = OrDefault(wire.adam_beta1(), defaults.adam_beta1);
  o.adam_beta2 = OrDefault(wire.adam_beta2(), defaults.adam_beta2);
  o.adam_epsilon = OrDefault(wire.adam_epsilon(), defaults.adam_epsilon);
  o.ftrl_beta = OrDefault(wire.ftrl_beta(), defaults.ftrl_beta);
  o.ftrl_l1 = wire.ftrl_l1();  // default 0
  o.ftrl_l2 = wire.ftrl_l2();
  return o;
}

absl::StatusOr<TableConfig> FromWire(const v1::TableConfig& wire) {
  TableConfig config;
  config.name = wire.name();
  switch (wire.kind()) {
    case v1::TABLE_KIND_DENSE: config.kind = TableKind::kDense; break;
    case v1::TABLE_KIND_SPARSE: config.kind = TableKind::kSparse; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("table ", QuotedName(wire.name()), ": unknown table kind ",
                       static_cast<int>(wire.kind())));
  }
  config.dense_size = wire.dense_size();
  config.dim = wire.dim();
  config.sparse_max_rows = wire.sparse_max_rows();
  config.sparse_admit_after = wire.sparse_admit_after();
  config.sparse_max_bytes = wire.sparse_max_bytes();
  switch (wire.sparse_eviction()) {
    case v1::SPARSE_EVICTION_LRU:
      config.sparse_eviction = SparseEvictionKind::kLru;
      break;
    case v1::SPARSE_EVICTION_LFU:
      config.sparse_eviction = SparseEvictionKind::kLfu;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("table ", QuotedName(wire.name()), ": unknown sparse eviction ",
                       static_cast<int>(wire.sparse_eviction())));
  }
  config.sparse_ttl_s = wire.sparse_ttl_s();
  // Unset (proto3 default 0) means "admit every key".
  config.sparse_admit_probability = wire.sparse_admit_probability() == 0.0f
                                        ? 1.0f
                                        : wire.sparse_admit_probability();
  absl::StatusOr<OptimizerConfig> optimizer = FromWire(wire.optimizer());
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table ", QuotedName(wire.name()), ": ", optimizer.status().message()));
  }
  config.optimizer = *optimizer;
  switch (wire.initializer().kind()) {
    case v1::INIT_UNSPECIFIED:
    case v1::INIT_ZEROS: config.initializer.kind = InitializerKind::kZeros; break;
    case v1::INIT_UNIFORM: config.initializer.kind = InitializerKind::kUniform; break;
    case v1::INIT_NORMAL: config.initializer.kind = InitializerKind::kNormal; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("table ", QuotedName(wire.name()), ": unknown initializer ",
                       static_cast<int>(wire.initializer().kind())));
  }
  config.initializer.scale = wire.initializer().scale();
  config.initializer.seed = wire.initializer().seed();
  absl::StatusOr<ConsistencyConfig> consistency = FromWire(wire.consistency());
  if (!consistency.ok()) return consistency.status();
  config.consistency = *consistency;
  absl::StatusOr<StalenessConfig> staleness = FromWire(wire.staleness());
  if (!staleness.ok()) return staleness.status();
  config.staleness = *staleness;
  return config;
}

void ToWire(const TableInfo& info, v1::TableInfo* wire) {
  ToWire(info.config, wire->mutable_config());
  wire->set_shard_index(info.shard_index);
  wire->set_num_shards(info.num_shards);
  wire->set_range_begin(info.range.begin);
  wire->set_range_end(info.range.end);
  wire->set_version(info.version);
  wire->set_sparse_rows(info.sparse_rows);
  wire->set_open_step(info.open_step);
  wire->set_sparse_evictions(info.sparse_evictions);
  wire->set_sparse_refused(info.sparse_refused);
  wire->set_sparse_ttl_expired(info.sparse_ttl_expired);
  wire->set_sparse_bytes(info.sparse_bytes);
  wire->set_sparse_row_limit(info.sparse_row_limit);
}

void ToWire(const PushOutcome& outcome, v1::PushResponse* wire) {
  wire->set_accepted(outcome.accepted);
  wire->set_tau(outcome.tau);
  wire->set_lr_factor(outcome.lr_factor);
  wire->set_new_version(outcome.new_version);
  wire->set_reject_reason(outcome.reject_reason);
  wire->set_staged(outcome.staged);
  wire->set_duplicate(outcome.duplicate);
}

void RowTauToWire(const PushOutcome& outcome, bool with_taus,
                  v1::PushResponse* wire) {
  wire->set_row_tau_rows(outcome.row_tau.rows);
  wire->set_row_tau_mean(outcome.row_tau.mean());
  wire->set_row_tau_max(outcome.row_tau.max);
  wire->set_row_tau_reborn(outcome.row_tau.reborn);
  if (with_taus) {
    std::string* bytes = wire->mutable_row_taus();
    bytes->resize(outcome.row_taus.size() * sizeof(uint64_t));
    std::copy_n(reinterpret_cast<const char*>(outcome.row_taus.data()),
                bytes->size(), bytes->data());
  }
}

void ToWire(const Histogram& h, v1::Distribution* wire) {
  wire->set_count(h.count());
  wire->set_mean(h.mean());
  wire->set_p50(h.Percentile(0.5));
  wire->set_p99(h.Percentile(0.99));
  wire->set_max(h.max());
  // Only buckets up to the last non-empty one, to keep responses small.
  size_t last = 0;
  for (size_t i = 0; i < h.counts().size(); ++i) {
    if (h.counts()[i] != 0) last = i + 1;
  }
  for (size_t i = 0; i < last; ++i) {
    wire->add_bucket_bounds(i < h.bounds().size() ? h.bounds()[i] : h.max());
    wire->add_bucket_counts(h.counts()[i]);
  }
}

void ToWire(const StoreStats& stats,
            absl::FunctionRef<TableTraffic(absl::string_view)> traffic_of,
            absl::Time now, v1::StatsResponse* wire) {
  wire->set_shard_index(stats.shard_index);
  wire->set_lease_expirations(stats.lease_expirations);
  std::map<uint32_t, const WorkerStatus*> members;
  for (const WorkerStatus& w : stats.workers) {
    members[w.worker_id] = &w;
    if (w.live) {
      wire->set_live_workers(wire->live_workers() + 1);
    } else if (w.awaited) {
      wire->set_awaited_workers(wire->awaited_workers() + 1);
    } else {
      wire->set_dead_workers(wire->dead_workers() + 1);
    }
  }
  for (const auto& [info, table] : stats.tables) {
    v1::TableStats* t = wire->add_tables();
    ToWire(info, t->mutable_info());
    if (info.config.kind == TableKind::kSparse) {
      ToWire(table.row_tau, t->mutable_info()->mutable_sparse_row_tau());
    }
    ToWire(table.tau, t->mutable_tau());
    t->set_pushes(table.pushes);
    const TableTraffic traffic = traffic_of(info.config.name);
    t->set_push_raw_bytes(traffic.push_raw_bytes);
    t->set_push_wire_bytes(traffic.push_wire_bytes);
    t->set_encoded_pushes(traffic.encoded_pushes);
    t->set_bad_blocks(traffic.bad_blocks);
    t->set_pull_raw_bytes(traffic.pull_raw_bytes);
    t->set_pull_wire_bytes(traffic.pull_wire_bytes);
    t->set_rejected(table.rejected);
    t->set_downweighted(table.downweighted);
    t->set_nonfinite_rejected(stats.nonfinite_rejections);
    t->set_late_pushes(table.late);
    t->set_steps_closed(table.steps_closed);
    t->set_quorum_closes(table.quorum_closes);
    t->set_timeout_closes(table.timeout_closes);
    ToWire(table.step_wait_s, t->mutable_step_wait_s());
    t->set_last_straggler(table.last_straggler < 0
                              ? 0
                              : static_cast<uint32_t>(table.last_straggler));
    t->set_has_straggler(table.last_straggler >= 0);
    for (const auto& [id, w] : table.workers) {
      v1::WorkerStats* ws = t->add_workers();
      ws->set_worker_id(id);
      auto member = members.find(id);
      if (member != members.end()) {
        ws->set_live(member->second->live);
        ws->set_awaited(member->second->awaited);
        ws->set_last_seen_age_s(
            absl::ToDoubleSeconds(now - member->second->last_seen));
      }
      ws->set_clock(w.clock);
      ToWire(w.tau, ws->mutable_tau());
      ws->set_rejected(w.rejected);
      ws->set_downweighted(w.downweighted);
      ws->set_steps_closed_last(w.closed_steps_as_last);
      ws->set_missed_steps(w.missed_steps);
    }
  }
}

}  // namespace taups
