// Conversions between the wire messages (ps.proto) and the core's C++ types,
// shared by the server's and the client's gRPC adapters. The one place that
// knows both vocabularies.
#ifndef TAUPS_PROTO_WIRE_CONVERT_H_
#define TAUPS_PROTO_WIRE_CONVERT_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ps.pb.h"
#include "taups/table_config.h"

namespace taups {

void ToWire(const TableConfig& config, v1::TableConfig* wire);
// INVALID_ARGUMENT for enum values this build does not know.
absl::StatusOr<TableConfig> FromWire(const v1::TableConfig& wire);
void ToWire(const ConsistencyConfig& config, v1::ConsistencyConfig* wire);
absl::StatusOr<ConsistencyConfig> FromWire(const v1::ConsistencyConfig& wire);
void ToWire(const StalenessConfig& config, v1::StalenessConfig* wire);
absl::StatusOr<StalenessConfig> FromWire(const v1::StalenessConfig& wire);

// absl and gRPC status codes share their numbering.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace taups

#endif  // TAUPS_PROTO_WIRE_CONVERT_H_
