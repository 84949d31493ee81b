#include "wire_convert.h"

#include "absl/strings/str_cat.h"

namespace taups {

void ToWire(const TableConfig& config, v1::TableConfig* wire) {
  wire->set_name(config.name);
  wire->set_kind(config.kind == TableKind::kDense ? v1::TABLE_KIND_DENSE
                                                  : v1::TABLE_KIND_SPARSE);
  wire->set_dense_size(config.dense_size);
  wire->set_dim(config.dim);
  auto* opt = wire->mutable_optimizer();
  opt->set_kind(config.optimizer.kind == OptimizerKind::kSgd
                    ? v1::OPTIMIZER_SGD
                    : v1::OPTIMIZER_ADAGRAD);
  opt->set_learning_rate(config.optimizer.learning_rate);
  opt->set_adagrad_initial_accumulator(
      config.optimizer.adagrad_initial_accumulator);
  opt->set_adagrad_epsilon(config.optimizer.adagrad_epsilon);
  auto* init = wire->mutable_initializer();
  switch (config.initializer.kind) {
    case InitializerKind::kZeros: init->set_kind(v1::INIT_ZEROS); break;
    case InitializerKind::kUniform: init->set_kind(v1::INIT_UNIFORM); break;
    case InitializerKind::kNormal: init->set_kind(v1::INIT_NORMAL); break;
  }
  init->set_scale(config.initializer.scale);
  init->set_seed(config.initializer.seed);
  wire->set_consistency(v1::CONSISTENCY_ASYNC);
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
  switch (wire.optimizer().kind()) {
    case v1::OPTIMIZER_SGD: config.optimizer.kind = OptimizerKind::kSgd; break;
    case v1::OPTIMIZER_ADAGRAD:
      config.optimizer.kind = OptimizerKind::kAdagrad;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("table '", wire.name(), "': unknown optimizer ",
                       static_cast<int>(wire.optimizer().kind())));
  }
  config.optimizer.learning_rate = wire.optimizer().learning_rate();
  config.optimizer.adagrad_initial_accumulator =
      wire.optimizer().adagrad_initial_accumulator();
  config.optimizer.adagrad_epsilon = wire.optimizer().adagrad_epsilon();
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
  if (wire.consistency() != v1::CONSISTENCY_UNSPECIFIED &&
      wire.consistency() != v1::CONSISTENCY_ASYNC) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", wire.name(), "': unknown consistency ",
                     static_cast<int>(wire.consistency())));
  }
  config.consistency = ConsistencyKind::kAsync;
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
