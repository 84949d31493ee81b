#include "server/configured_tables.h"

#include "absl/strings/str_cat.h"
#include "server/parameter_store.h"
#include "spdlog/spdlog.h"

namespace taups {

absl::Status CreateConfiguredTables(const std::vector<TableConfig>& tables,
                                    ParameterStore& store) {
  for (const TableConfig& config : tables) {
    bool created = false;
    absl::StatusOr<TableInfo> info =
        store.CreateTable(config, /*exist_ok=*/true, &created);
    if (absl::IsAlreadyExists(info.status())) {
      spdlog::warn("table '{}' restored from the checkpoint differs from the "
                   "config file's; the checkpoint's settings stay (change "
                   "them with ps_admin set-policy, or drop the table)",
                   config.name);
      continue;
    }
    if (!info.ok()) {
      return absl::Status(info.status().code(),
                          absl::StrCat("config file table '", config.name,
                                       "': ", info.status().message()));
    }
    if (created) {
      spdlog::info("created table '{}' ({}) from the config file", config.name,
                   TableKindName(config.kind));
    }
  }
  return absl::OkStatus();
}

}  // namespace taups
