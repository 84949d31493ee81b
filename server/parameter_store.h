// ParameterStore: everything one ps_server shard holds — its tables, their
// clocks and optimizers — behind a network-free API. The gRPC service is a
// thin adapter over this class; tests drive it directly.
//
// Every method validates its request completely before changing anything:
// an unknown table is NOT_FOUND, a range outside this shard or a size
// mismatch is INVALID_ARGUMENT (OUT_OF_RANGE for ranges), a NaN/Inf gradient
// is INVALID_ARGUMENT and is counted; none of them touches a table.
//
// Thread-safe. The table directory is behind a reader/writer mutex taken
// briefly to find a table; the data path then runs on the table's own
// fine-grained locks (see DenseTable, SparseTable). No lock is global to the
// data path.
#ifndef TAUPS_SERVER_PARAMETER_STORE_H_
#define TAUPS_SERVER_PARAMETER_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/shard_map.h"
#include "server/dense_table.h"
#include "server/push_types.h"
#include "server/sparse_table.h"
#include "taups/table_config.h"

namespace taups {

// What this shard holds of a table, at one moment.
struct TableInfo {
  TableConfig config;
  uint32_t shard_index = 0;
  uint32_t num_shards = 1;
  Range range;  // dense: this shard's global range; sparse: empty
  uint64_t version = 0;
  uint64_t sparse_rows = 0;
  StalenessStats staleness;
};

// Upper bound on keys in one sparse request, so a client cannot make the
// shard allocate without bound.
inline constexpr size_t kMaxKeysPerRequest = size_t{1} << 22;

class ParameterStore {
 public:
  ParameterStore(uint32_t shard_index, uint32_t num_shards);
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  uint32_t shard_index() const { return shard_index_; }
  uint32_t num_shards() const { return num_shards_; }

  // Creates this shard's part of `config`. If the table exists with an
  // identical config and exist_ok, returns it with *created = false; with a
  // different config, ALREADY_EXISTS.
  absl::StatusOr<TableInfo> CreateTable(const TableConfig& config,
                                        bool exist_ok, bool* created);
  absl::StatusOr<TableInfo> GetTable(absl::string_view name) const;
  std::vector<TableInfo> ListTables() const;

  // Dense: copies [offset, offset + out.size()) into out; returns the version.
  absl::StatusOr<uint64_t> PullDense(absl::string_view table, uint64_t offset,
                                     absl::Span<float> out) const;
  // Dense: applies one slice of a push (slices_in_push >= 1).
  absl::StatusOr<PushOutcome> PushDense(absl::string_view table,
                                        uint64_t offset,
                                        absl::Span<const float> gradient,
                                        const PushOrigin& origin,
                                        uint64_t base_version,
                                        uint32_t slices_in_push);

  // Sparse: rows for `keys` (each must belong to this shard) into out
  // (keys.size() * dim floats); returns the version.
  absl::StatusOr<uint64_t> PullSparse(absl::string_view table,
                                      absl::Span<const uint64_t> keys,
                                      absl::Span<float> out);
  // Sparse: keys must be unique and belong to this shard.
  absl::StatusOr<PushOutcome> PushSparse(absl::string_view table,
                                         absl::Span<const uint64_t> keys,
                                         absl::Span<const float> gradients,
                                         const PushOrigin& origin,
                                         uint64_t base_version);

  // Pushes refused because a gradient held NaN or Inf.
  uint64_t nonfinite_rejections() const { return nonfinite_rejections_.load(); }

 private:
  struct Entry {
    std::unique_ptr<DenseTable> dense;
    std::unique_ptr<SparseTable> sparse;
  };
  absl::StatusOr<std::shared_ptr<Entry>> Find(absl::string_view name) const;
  absl::StatusOr<DenseTable*> FindDense(absl::string_view name,
                                        std::shared_ptr<Entry>* hold) const;
  absl::StatusOr<SparseTable*> FindSparse(absl::string_view name,
                                          std::shared_ptr<Entry>* hold) const;
  TableInfo InfoOf(const Entry& entry) const;
  absl::Status CheckFinite(absl::string_view table,
                           absl::Span<const float> values);
  absl::Status CheckSparseKeys(const SparseTable& table,
                               absl::Span<const uint64_t> keys,
                               bool require_unique) const;

  const uint32_t shard_index_;
  const uint32_t num_shards_;
  mutable absl::Mutex mu_;
  // Tables are never removed while the store lives; shared_ptr lets a request
  // keep using one without holding mu_.
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> tables_
      ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> nonfinite_rejections_{0};
};

}  // namespace taups

#endif  // TAUPS_SERVER_PARAMETER_STORE_H_
