#include "wire_convert.h"

#include "absl/strings/str_cat.h"

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

absl::StatusOr<TableConfig> FromWire(const v1::TableConfig& wire) {
  TableConfig config;
  config.name = wire.name();
  switch (wire.kind()) {
    case v1::TABLE_KIND_DENSE: config.kind = TableKind::kDense; break;
    case v1::TABLE_KIND_SPARSE: config.kind = TableKind::kSparse; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("table '", wire.name(), "': unknown table kind ",
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
          absl::StrCat("table '", wire.name(), "': unknown sparse eviction ",
                       static_cast<int>(wire.sparse_eviction())));
  }
  config.sparse_ttl_s = wire.sparse_ttl_s();
  // Unset (proto3 default 0) means "admit every key".
  config.sparse_admit_probability = wire.sparse_admit_probability() == 0.0f
                                        ? 1.0f
                                        : wire.sparse_admit_probability();
  switch (wire.optimizer().kind()) {
    case v1::OPTIMIZER_SGD: config.optimizer.kind = OptimizerKind::kSgd; break;
    case v1::OPTIMIZER_ADAGRAD:
      config.optimizer.kind = OptimizerKind::kAdagrad;
      break;
    case v1::OPTIMIZER_MOMENTUM:
      config.optimizer.kind = OptimizerKind::kMomentum;
      break;
    case v1::OPTIMIZER_ADAM: config.optimizer.kind = OptimizerKind::kAdam; break;
    case v1::OPTIMIZER_FTRL: config.optimizer.kind = OptimizerKind::kFtrl; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("table '", wire.name(), "': unknown optimizer ",
                       static_cast<int>(wire.optimizer().kind())));
  }
  config.optimizer.learning_rate = wire.optimizer().learning_rate();
  config.optimizer.adagrad_initial_accumulator =
      wire.optimizer().adagrad_initial_accumulator();
  config.optimizer.adagrad_epsilon = wire.optimizer().adagrad_epsilon();
  config.optimizer.momentum = wire.optimizer().momentum();
  config.optimizer.adam_beta1 = wire.optimizer().adam_beta1();
  config.optimizer.adam_beta2 = wire.optimizer().adam_beta2();
  config.optimizer.adam_epsilon = wire.optimizer().adam_epsilon();
  config.optimizer.ftrl_beta = wire.optimizer().ftrl_beta();
  config.optimizer.ftrl_l1 = wire.optimizer().ftrl_l1();
  config.optimizer.ftrl_l2 = wire.optimizer().ftrl_l2();
  switch (wire.initializer().kind()) {
    case v1::INIT_UNSPECIFIED:
    case v1::INIT_ZEROS: config.initializer.kind = InitializerKind::kZeros; break;
    case v1::INIT_UNIFORM: config.initializer.kind = InitializerKind::kUniform; break;
    case v1::INIT_NORMAL: config.initializer.kind = InitializerKind::kNormal; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("table '", wire.name(), "': unknown initializer ",
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

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

}  // namespace taups
