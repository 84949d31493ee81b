// `ps_admin status`: one row per (table, shard) of what the shards report
// through Stats and GetTable, as an aligned text table or as JSON.
//
//   TABLE    SHARD VERSION POLICY TAU_P50 TAU_P99 REJECTED WAIT_P99_S STRAGGLER LIVE DEAD
//
// DEAD counts every registered worker not holding a lease (the Stats RPC
// does not tell a worker that left from one that died). Shard incarnations, memory budget use and checkpoint age are not in these
// RPCs; the shards' /metrics has them.
//
// Thread-compatible; the Client is used only for the call's duration.
#ifndef TAUPS_WORKER_TOOLS_CLUSTER_STATUS_H_
#define TAUPS_WORKER_TOOLS_CLUSTER_STATUS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "taups/client.h"

namespace taups {

struct TableStatus {
  TableConfig config;
  std::vector<TableShardStats> shards;
};

// Asks every shard about each of `tables`; the first error (e.g. NOT_FOUND
// naming the table) if one cannot be read.
absl::StatusOr<std::vector<TableStatus>> ReadClusterStatus(
    Client& client, const std::vector<std::string>& tables);

std::string StatusText(const std::vector<TableStatus>& status);
// {"tables":[{"name":..,"policy":..,"shards":[{"shard":0,...}]}]}
std::string StatusJson(const std::vector<TableStatus>& status);

}  // namespace taups

#endif  // TAUPS_WORKER_TOOLS_CLUSTER_STATUS_H_
