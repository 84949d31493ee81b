#include "worker/trainer/table_setup.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace taups::trainer {

absl::Status EnsureTable(Client& client, const TableConfig& config,
                         bool create, absl::Duration wait) {
  if (create) {
    absl::Status status = client.CreateTable(config);
    if (absl::IsAlreadyExists(status)) {
      return absl::AlreadyExistsError(absl::StrCat(
          status.message(),
          " (every worker must pass the same --lr and --seed; or the servers "
          "still hold a table from an earlier run: restart them)"));
    }
    return status;
  }
  const absl::Time deadline = absl::Now() + wait;
  while (true) {
    absl::StatusOr<TableConfig> existing = client.OpenTable(config.name);
    if (existing.ok()) {
      if (existing->kind != config.kind ||
          existing->dense_size != config.dense_size ||
          existing->dim != config.dim) {
        return absl::FailedPreconditionError(absl::StrCat(
            "table '", config.name, "' exists with another shape than this "
            "model needs"));
      }
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(existing.status())) return existing.status();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "table '", config.name, "' did not appear within ",
          absl::FormatDuration(wait),
          "; start one worker with --create_tables=true"));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace taups::trainer
