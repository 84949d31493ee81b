// `ps_admin status`: the cluster at a glance, from one ShardStatus call per
// shard (shard_admin.h), as aligned text tables or as JSON.
//
// Text: one row per shard, then one row per (table, shard):
//
//   SHARD ADDRESS INCARNATION UPTIME_S READY TABLES LIVE DEAD LEFT EVICTED
//     DRAINING BUDGET_USED_MIB BUDGET_MIB CKPT CKPT_AGE_S CKPT_FAILED
//   TABLE SHARD VERSION POLICY TAU_P50 TAU_P99 TAU_MAX PUSHES REJECTED
//     STEPS WAIT_P99_S STRAGGLER
//
// and, only while some shard still waits for workers a restored checkpoint
// knew (not registered again yet), a third block:
//
//   SHARD AWAITED WORKERS        (WORKERS: their ids, comma-separated)
//
// No cell holds a space; "-" stands for none (no checkpoint, no straggler,
// no draining worker). DEAD counts every registered worker without a lease
// except the awaited ones (not dead: barriers still wait for them); LEFT
// and EVICTED say how many of the dead said Leave or were evicted by an
// admin. JSON's "workers" adds "awaited" (the count) and "awaited_ids". A
// shard that did not answer has no rows: its error is in `errors` (and
// ps_admin prints it to stderr and exits 1).
//
// Pure functions; thread-safe.
#ifndef TAUPS_WORKER_TOOLS_CLUSTER_STATUS_H_
#define TAUPS_WORKER_TOOLS_CLUSTER_STATUS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ps.pb.h"

namespace taups {

struct ClusterStatus {
  std::vector<std::string> addresses;  // shard order
  // Per shard: its answer, or the error naming it.
  std::vector<absl::StatusOr<v1::ShardStatusResponse>> shards;
  // Tables to show; empty: every table.
  std::vector<std::string> tables;
};

// "sync/n=4", "semi_sync/n=4,q=0.75", "ssp/s=3", "async".
std::string PolicyCell(const v1::ConsistencyConfig& consistency);

std::string StatusText(const ClusterStatus& status);
// {"shards":[{"shard":0,"address":..,"incarnation":"<hex>",...,
//   "tables":[{"name":..,"policy":..,"version":..,...}]}],"errors":[..]}
std::string StatusJson(const ClusterStatus& status);

// Rows as columns padded to the widest cell, two spaces apart.
std::string AlignedRows(const std::vector<std::vector<std::string>>& rows);
// A JSON string literal.
std::string JsonQuoted(const std::string& s);

}  // namespace taups

#endif  // TAUPS_WORKER_TOOLS_CLUSTER_STATUS_H_
