// Conversions between the wire messages (ps.proto) and the core's C++ types,
// shared by the server and the client. The one place that knows both
// vocabularies. Pure protobuf: no gRPC here (the status mapping is in
// grpc_status_convert.h), so the client core builds without gRPC headers.
#ifndef TAUPS_PROTO_MESSAGE_CONVERT_H_
#define TAUPS_PROTO_MESSAGE_CONVERT_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
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

// INVALID_ARGUMENT for an optimizer kind this build does not know. A 0
// hyper-parameter (proto3's unset) means its documented default
// (OptimizerConfig); OPTIMIZER_UNSPECIFIED means sgd.
absl::StatusOr<OptimizerConfig> FromWire(const v1::OptimizerConfig& wire);

// The server core's answers (server/table_info.h, server/push_types.h,
// common/histogram.h), as the wire carries them.
struct TableInfo;
struct PushOutcome;
class Histogram;
void ToWire(const TableInfo& info, v1::TableInfo* wire);
// Every field but the per-row tau (RowTauToWire) and server_incarnation.
void ToWire(const PushOutcome& outcome, v1::PushResponse* wire);
// A sparse push's per-row tau summary, and with `with_taus` each key's tau.
void RowTauToWire(const PushOutcome& outcome, bool with_taus,
                  v1::PushResponse* wire);
// Count, mean, p50, p99, max and the buckets up to the last non-empty one.
void ToWire(const Histogram& histogram, v1::Distribution* wire);
// A shard's statistics, all but server_incarnation: `traffic_of` gives a
// table's wire traffic, `now` ages the workers' last-seen times.
struct StoreStats;
struct TableTraffic;
void ToWire(const StoreStats& stats,
            absl::FunctionRef<TableTraffic(absl::string_view)> traffic_of,
            absl::Time now, v1::StatsResponse* wire);

}  // namespace taups

#endif  // TAUPS_PROTO_MESSAGE_CONVERT_H_
