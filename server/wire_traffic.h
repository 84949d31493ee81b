// Bytes each table's tensors took on the wire at this shard, next to their
// float32 size: what compression saved, measured where it arrives.
//
// Thread-safe: counters are updated by concurrent RPC handlers.
#ifndef TAUPS_SERVER_WIRE_TRAFFIC_H_
#define TAUPS_SERVER_WIRE_TRAFFIC_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace taups {

struct TableTraffic {
  uint64_t push_raw_bytes = 0;   // float32 size of the gradients applied
  uint64_t push_wire_bytes = 0;  // their size as received
  uint64_t encoded_pushes = 0;   // requests carrying an encoded block
  uint64_t bad_blocks = 0;       // encoded blocks refused as malformed
  uint64_t pull_raw_bytes = 0;   // float32 size of the values pulled
  uint64_t pull_wire_bytes = 0;  // their size as sent
};

class WireTraffic {
 public:
  void CountPush(absl::string_view table, uint64_t raw, uint64_t wire,
                 bool encoded);
  void CountBadBlock(absl::string_view table);
  void CountPull(absl::string_view table, uint64_t raw, uint64_t wire);
  // Zeros for a table never counted.
  TableTraffic Of(absl::string_view table) const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, TableTraffic> tables_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_WIRE_TRAFFIC_H_
