// TableInfo: what one shard holds of a table, at one moment. A plain value
// (the store fills it; the gRPC edge converts it, proto/wire_convert.h).
#ifndef TAUPS_SERVER_TABLE_INFO_H_
#define TAUPS_SERVER_TABLE_INFO_H_

#include <cstdint>

#include "common/shard_map.h"
#include "taups/table_config.h"

namespace taups {

struct TableInfo {
  TableConfig config;  // with the consistency/staleness now in force
  uint32_t shard_index = 0;
  uint32_t num_shards = 1;
  Range range;  // dense: this shard's global range; sparse: empty
  // Dense: lock blocks copied because a push wrote them while a pull's
  // answer was still sending them (DenseTable::lent_block_copies).
  uint64_t dense_block_copies = 0;
  uint64_t version = 0;
  uint64_t open_step = 0;  // sync / semi_sync
  uint64_t sparse_rows = 0;
  uint64_t sparse_evictions = 0;  // rows evicted to stay under the limit
  uint64_t sparse_refused = 0;    // touches of keys not admitted yet
  uint64_t sparse_ttl_expired = 0;  // rows removed after the ttl idle
  uint64_t sparse_bytes = 0;        // storage the rows hold now
  uint64_t sparse_row_limit = 0;    // rows allowed (max_rows, max_bytes); 0 = none
  // What this part is counted for against the shard's memory budget
  // (server/limits.h).
  uint64_t reserved_bytes = 0;
  // Workers with state in this part (max_workers_per_table).
  uint64_t workers = 0;
};

}  // namespace taups

#endif  // TAUPS_SERVER_TABLE_INFO_H_
