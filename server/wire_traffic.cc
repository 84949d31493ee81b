#include "server/wire_traffic.h"

namespace taups {

void WireTraffic::CountPush(absl::string_view table, uint64_t raw,
                            uint64_t wire, bool encoded) {
  absl::MutexLock lock(&mu_);
  TableTraffic& t = tables_[table];
  t.push_raw_bytes += raw;
  t.push_wire_bytes += wire;
  t.encoded_pushes += encoded;
}

void WireTraffic::CountBadBlock(absl::string_view table) {
  absl::MutexLock lock(&mu_);
  ++tables_[table].bad_blocks;
}

void WireTraffic::CountPull(absl::string_view table, uint64_t raw,
                            uint64_t wire) {
  absl::MutexLock lock(&mu_);
  TableTraffic& t = tables_[table];
  t.pull_raw_bytes += raw;
  t.pull_wire_bytes += wire;
}

TableTraffic WireTraffic::Of(absl::string_view table) const {
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(table);
  return it == tables_.end() ? TableTraffic{} : it->second;
}

}  // namespace taups
