// The tables a cluster config names (server/cluster_config.h), created on
// a shard when it starts: ps_server --config makes them before it answers
// its first call, so workers find them instead of each creating its own.
//
// Not thread-safe with respect to `store`'s other users only in the sense
// that it is meant for start-up; ParameterStore itself is thread-safe.
#ifndef TAUPS_SERVER_CONFIGURED_TABLES_H_
#define TAUPS_SERVER_CONFIGURED_TABLES_H_

#include <vector>

#include "absl/status/status.h"
#include "taups/table_config.h"

namespace taups {

class ParameterStore;

// Creates this shard's part of every table in `tables` that `store` does
// not hold yet (logging each). A table it holds with the same config is
// left alone; one it holds with another config (restored from a
// checkpoint) keeps the checkpoint's, with a warning naming the table: the
// trained state wins over the file. Any other refusal (the shard's limits
// or budget) is returned, naming the table, and ends the start.
absl::Status CreateConfiguredTables(const std::vector<TableConfig>& tables,
                                    ParameterStore& store);

}  // namespace taups

#endif  // TAUPS_SERVER_CONFIGURED_TABLES_H_
