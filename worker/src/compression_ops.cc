// ClientCore's compression settings and transfer counters.
#include "absl/strings/str_cat.h"
#include "worker/src/client_core.h"

namespace taups {

absl::Status ClientCore::SetCompression(absl::string_view table,
                                        const CompressionConfig& config) {
  auto meta = Meta(table);
  if (!meta.ok()) return meta.status();
  absl::Status valid = config.Validate();
  if (!valid.ok()) return valid;
  const TableConfig& table_config = (*meta)->config;
  if (table_config.kind == TableKind::kSparse &&
      (config.error_feedback || config.accumulate_steps > 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table_config.name,
        "' is sparse: error feedback and accumulation are for dense tables"));
  }
  if (table_config.kind == TableKind::kDense && config.push.bucket_size == 0) {
    absl::Status dense_ok = config.push.Validate();  // 0 = per row: sparse only
    if (!dense_ok.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", table_config.name, "' is dense: ", dense_ok.message()));
    }
  }
  auto state = std::make_shared<TableCompression>(
      config, options_.worker_id,
      table_config.kind == TableKind::kDense ? table_config.dense_size : 0);
  absl::MutexLock lock(&mu_);
  compression_[table_config.name] = std::move(state);
  return absl::OkStatus();
}

absl::StatusOr<TransferCounters> ClientCore::Transfers(absl::string_view table) {
  auto meta = Meta(table);
  if (!meta.ok()) return meta.status();
  return CompressionOf((*meta)->config.name)->counters();
}

std::shared_ptr<TableCompression> ClientCore::CompressionOf(
    const std::string& table) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<TableCompression>& state = compression_[table];
  if (state == nullptr) {
    state = std::make_shared<TableCompression>(CompressionConfig{},
                                               options_.worker_id, 0);
  }
  return state;
}

}  // namespace taups
