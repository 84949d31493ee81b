// One shard's part of a sparse (embedding) table: uint64 key -> row of `dim`
// floats plus the optimizer's per-row state and a row version.
//
// Rows are created lazily, on first pull or push, by the table's
// deterministic initializer, so a key reads the same on any shard layout.
// Memory is bounded by the config's sparse_* settings (row limit or byte
// budget, lru/lfu eviction, ttl expiry, admission; see TableConfig and
// StripeRows).
//
// Row versions: every row counts the updates applied to it (each Apply that
// reaches it, including a sync step's mean, is one). A row that is evicted
// or expired and comes back is re-created: initial values, fresh optimizer
// state, version 0. A pull can return the versions it read; a push that
// carries them back gets each row's tau = version now - version read,
// measured atomically with the update, and recorded in row_tau().
//
// Thread-safe. Keys are spread over kStripes stripes by hash; each stripe has
// its own mutex, hash map and row arena, so requests for different keys
// mostly run in parallel; a request locks each stripe it touches once.
// A large Pull, Apply or MeasureRowTau (at least min_parallel keys) shares
// its stripes among the cores of an TaskPool (the process's shared one
// unless SetTaskPool says otherwise): each stripe is still handled by one
// thread, under its lock, in the request's key order, and rows of different
// stripes never interact, so the result is the same bits as a serial pass.
// The caller's lock (the partition's) is held throughout.
// Callers validate requests before calling. Checkpoints cut it stripe by
// stripe (BeginCut, copy on write).
#ifndef TAUPS_SERVER_SPARSE_TABLE_H_
#define TAUPS_SERVER_SPARSE_TABLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/clock.h"
#include "common/histogram.h"
#include "common/initializer.h"
#include "server/optimizer.h"
#include "server/stripe_rows.h"
#include "server/table.h"
#include "taups/table_config.h"

namespace taups {

class TaskPool;

class SparseTable final : public Table {
 public:
  static constexpr int kStripes = 64;
  // Below this many keys a call handles its stripes on the calling thread.
  static constexpr size_t kParallelMinKeys = size_t{1} << 13;
  // Set aside from a byte budget per stripe, before rows: the stripe's
  // fixed structures and its hash index's small-size slack.
  static constexpr uint64_t kStripeFixedBytes = 2048;

  // Bytes one row costs (the formula of TableConfig::sparse_max_bytes).
  static uint64_t RowFootprintBytes(const TableConfig& config);
  // Rows one shard may hold, 0 = unbounded: the smaller of sparse_max_rows
  // and what sparse_max_bytes buys. INVALID_ARGUMENT if the byte budget
  // buys fewer than kStripes rows.
  static absl::StatusOr<uint64_t> RowLimit(const TableConfig& config);

  // `config` must be valid (Validate and RowLimit OK). `clock` measures
  // idle time for the ttl and must outlive the table.
  explicit SparseTable(const TableConfig& config,
                       const Clock* clock = RealClock::Get());
  SparseTable(const SparseTable&) = delete;
  SparseTable& operator=(const SparseTable&) = delete;

  // Which pool large calls share their stripes with (null: none, always
  // serial), from how many keys (tests use small figures). Call before the
  // table is shared between threads; `pool` must outlive the table.
  void SetTaskPool(TaskPool* pool, size_t min_parallel = kParallelMinKeys);

  const TableConfig& config() const override { return config_; }
  uint32_t dim() const { return dim_; }
  uint64_t row_limit() const { return row_limit_; }  // per shard; 0 = none

  struct Counters {
    uint64_t rows = 0;
    uint64_t evictions = 0;    // rows evicted to make room
    uint64_t ttl_expired = 0;  // rows removed after ttl idle
    uint64_t refused = 0;      // touches of keys not admitted yet
    uint64_t bytes = 0;        // storage held now (all stripes)
  };
  Counters counters() const;
  // Every per-row tau measured so far.
  Histogram row_tau() const;

  // Copies row keys[i] into out[i * dim, (i + 1) * dim), creating missing
  // rows (a key not admitted yet reads its initial values). With
  // row_versions non-empty (keys.size() entries), also writes each row's
  // version (0 for a key not admitted).
  void Pull(absl::Span<const uint64_t> keys, absl::Span<float> out,
            absl::Span<uint64_t> row_versions = {});

  // Applies part.values[i * dim ...] to row part.keys[i] (created if
  // missing; dropped for a key not admitted yet) and counts one update of
  // each row. Keys must be unique. Measures per-row tau into part.row_tau
  // when set.
  void Apply(const GradientPart& part, float lr_factor,
             uint32_t worker) override;
  std::unique_ptr<StepBuffer> NewBuffer() const override;
  void ApplyBuffer(const StepBuffer& buffer, float scale,
                   float lr_factor) override;

  // The key at the smallest position i of `keys` with keys[j] == keys[i]
  // for some j < i (what a scan with a set of the keys seen so far stops
  // at); nullopt if all are distinct. The set is a StampedKeyTable that
  // each thread keeps for calls of up to kMaxRetainedRepeatKeys keys (at
  // most 2 MiB; larger calls use their own), so such a push allocates
  // nothing. Thread-safe (touches no table).
  static constexpr size_t kMaxRetainedRepeatKeys = size_t{1} << 16;
  static std::optional<uint64_t> FirstRepeatedKey(
      absl::Span<const uint64_t> keys);

  // Measures the per-row tau of `keys` against sink->base_versions from the
  // rows as they are now, without touching or creating rows (for pushes
  // that are gathered or refused rather than applied at once).
  void MeasureRowTau(absl::Span<const uint64_t> keys, RowTauSink* sink);

  bool UpdateStaysFinite(const GradientPart& part, float lr_factor,
                         uint32_t worker) const override;
  bool BufferStaysFinite(const StepBuffer& buffer, float scale,
                         float lr_factor) const override;
  // Every row with its state and version, grouped by stripe. Import starts
  // the counters (evictions, refusals) and the eviction order anew.
  TableSnapshot Export() const override;
  absl::Status Import(const TableSnapshot& snapshot) override;

  // Incremental checkpoints: the rows created or updated, and the keys
  // whose rows went (evicted, expired), since the export of cut `since`
  // (0: since the table began: every row); later changes belong to the
  // epoch after `cut`, which must exceed every cut before. Each stripe is
  // read and advanced under its lock, so a change made while this runs is
  // in this export or in the next, never lost; the caller keeps writers
  // out (the partition's snapshot does) for a cut consistent with the
  // version. `complete` is false when some change since `since` cannot be
  // told (tracking started by this call, a restore, or too many removals):
  // a full export is then needed. Tracking starts on the first call.
  struct Changes {
    TableSnapshot rows;             // as Export, for the changed rows only
    std::vector<uint64_t> removed;  // keys without a row now
    bool complete = true;
  };
  Changes ExportChanges(uint32_t since, uint32_t cut);
  // Copy on write by stripe: a request about to lock a stripe the pending
  // cut lacks (Pull, Apply, ExpireIdle, Import, and the read-only checks,
  // which go through the same path) copies its rows first, under its
  // lock, so rows created, updated, evicted or expired after the cut are
  // in it as they were at the cut; a request waits for at most one
  // stripe's copy per stripe it touches. Finish gives Export's order.
  std::unique_ptr<TableCut> BeginCut() override;

  // Expires rows idle for the ttl (bounded work per stripe per call; the
  // rest go on the next call or on their next touch). No-op without a ttl.
  void ExpireIdle() override;

 private:
  struct Stripe {
    Stripe(size_t row_stride, const StripeOptions& options)
        : rows(row_stride, options) {}
    mutable absl::Mutex mu;
    StripeRows rows ABSL_GUARDED_BY(mu);
  };
  // A pending cut's copy: stripe s's entries are guarded by stripes_[s]->mu.
  struct CutState;
  class Cut;
  std::shared_ptr<CutState> PendingCut() const;
  // Copies stripe s into `cut` unless it holds it; stripes_[s]->mu held.
  void CopyStripeLocked(CutState& cut, int s) const;
  // Every stripe into `cut`, each under its lock.
  void CopyAllStripes(CutState& cut) const;
  static int StripeIndexOf(uint64_t key);
  int64_t NowNanos() const;
  // How a call over a request's stripes runs: on the calling thread, or
  // shared with the pool's cores when the request is large enough.
  enum class Spread { kSerial, kPoolWhenLarge };
  // Calls fn(stripe_index, stripe, positions, group_keys) once per stripe
  // that keys hit, holding that stripe's lock: `positions` are the i with
  // keys[i] in it, ascending, and group_keys[j] = keys[positions[j]] (a
  // copy, so that the stripe's keys are read in order, not all over the
  // request). With kPoolWhenLarge, calls for different stripes may run
  // at once on different threads (fn must allow it); all have returned when
  // this does.
  template <typename Fn>
  void ForEachStripeGroup(absl::Span<const uint64_t> keys, Spread spread,
                          Fn&& fn) const;
  // Calls fn(stripe_index, stripe, i, keys[i]) for every i in
  // [0, keys.size()), grouped by the stripe of keys[i] and holding that
  // stripe's lock; spread as above.
  template <typename Fn>
  void ForEachKeyByStripe(absl::Span<const uint64_t> keys, Spread spread,
                          Fn&& fn) const;
  // The pool a call of `keys` keys shares its stripes with; null: serial.
  TaskPool* PoolFor(size_t keys) const;
  // The slot of `key`'s row, created (and initialized) if absent; kNoSlot
  // if not admitted. Inline: the warm path is one hash lookup.
  uint32_t FindOrCreateLocked(Stripe& stripe, uint64_t key, int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(stripe.mu) {
    const uint32_t slot = stripe.rows.Find(key, now_ns);
    return slot != StripeRows::kNoSlot ? slot : CreateLocked(stripe, key, now_ns);
  }
  // A new initialized row for `key` (absent); kNoSlot if not admitted.
  uint32_t CreateLocked(Stripe& stripe, uint64_t key, int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(stripe.mu);
  std::unique_ptr<Stripe> NewStripe() const;
  // Appends `slot`'s row (key, values, state, version) to `out`.
  void CopyRowLocked(const Stripe& stripe, uint64_t key, uint32_t slot,
                     TableSnapshot& out) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(stripe.mu);
  // Records the taus `sink` measured (counted rows only) in row_tau_.
  void RecordRowTau(const RowTauSink& sink, absl::Span<const uint8_t> counted);

  const TableConfig config_;
  const uint32_t dim_;
  const std::unique_ptr<Optimizer> optimizer_;
  const size_t row_stride_;
  const Initializer initializer_;
  const Clock* const clock_;
  const int64_t ttl_ns_;
  const uint64_t row_limit_;
  StripeOptions stripe_options_;
  bool pool_set_ = false;  // false: TaskPool::Shared(), made on first use
  TaskPool* pool_ = nullptr;
  size_t parallel_min_ = kParallelMinKeys;
  // Import replaces the stripes under it (writer); a cut's copier, which
  // does not hold the partition's lock, reads stripes_ under it (reader).
  mutable absl::Mutex stripes_mu_;
  std::vector<std::unique_ptr<Stripe>> stripes_;
  mutable absl::Mutex cut_mu_;  // a leaf: guards the pointer only
  std::shared_ptr<CutState> cut_ ABSL_GUARDED_BY(cut_mu_);
  mutable absl::Mutex tau_mu_;  // a leaf lock: taken after stripe locks
  Histogram row_tau_ ABSL_GUARDED_BY(tau_mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_SPARSE_TABLE_H_
