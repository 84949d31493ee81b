// ParameterStore: everything one ps_server shard holds — its tables with
// their clocks, consistency policies and optimizers, and the membership of
// workers — behind a network-free API. The gRPC service is a thin adapter
// over this class; tests and the simulation harness drive it directly.
//
// Every method validates its request completely before changing anything:
// an unknown table is NOT_FOUND, a range outside this shard is OUT_OF_RANGE,
// a size mismatch or a NaN/Inf gradient is INVALID_ARGUMENT (and counted);
// none of them touches a table.
//
// Each table's part is a Partition: every change to it runs on that
// partition's ordered apply path (see partition.h), so pushes are applied
// whole, exactly once, in one order.
//
// Memory: every table's part and every worker's state in it are charged to
// the shard's MemoryBudget (limits.h says what each costs) before they are
// allocated; what does not fit is refused RESOURCE_EXHAUSTED with the
// numbers, and nothing changes. DropTable gives a table's charges back.
// A pull that must wait for its policy takes a WaitingCalls seat first
// (refused past --max_waiting_per_worker / --max_waiting_calls); it blocks
// its thread, or, for an edge that sets PullContext::park, is parked on
// its partition without one.
//
// Thread-safe. The table directory is behind a reader/writer mutex taken
// briefly to find a table; the data path then runs on the partition's locks.
// No lock is global to the data path.
#ifndef TAUPS_SERVER_PARAMETER_STORE_H_
#define TAUPS_SERVER_PARAMETER_STORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/clock.h"
#include "common/ownership_map.h"
#include "common/shard_map.h"
#include "server/dense_table.h"
#include "server/lent_values.h"
#include "server/limits.h"
#include "server/membership.h"
#include "server/memory_budget.h"
#include "server/partition.h"
#include "server/pull_waiters.h"
#include "server/push_types.h"
#include "server/sparse_table.h"
#include "server/table_info.h"
#include "server/table_workers.h"
#include "server/update_trigger.h"
#include "server/restore_losses.h"
#include "server/waiting_calls.h"
#include "server/worker_drains.h"
#include "taups/table_config.h"

namespace taups {

// Who pulls, at which clock, and how long the pull may wait for its policy.
struct PullContext {
  uint32_t worker = 0;
  uint64_t clock = 0;
  // absl::InfinitePast(): do not wait (FAILED... DEADLINE_EXCEEDED if not ready).
  absl::Time deadline = absl::InfiniteFuture();
  // Set by an edge that must not block a thread: a pull that has to wait
  // is parked instead (Partition::ReadOrPark) — *park is moved there, with
  // the pull's WaitingCalls seat, and the result's `parked` names it; the
  // caller pulls again when it is woken with OK. Unset: the pull blocks
  // until its policy lets it read or the deadline passes.
  PullWaiters::Wake* park = nullptr;
  // The ownership map epoch the pull was routed by; 0 = not said
  // (CheckOwnershipEpoch).
  uint64_t ownership_epoch = 0;
};

struct PullResult {
  uint64_t version = 0;
  uint64_t step = 0;  // sync / semi_sync: the open step; else 0
  // PullContext::park: set when nothing was read and the pull is parked.
  ParkedPull parked;
};

// Everything about a push but its payload.
struct PushMeta {
  PushOrigin origin;
  uint64_t base_version = 0;
  uint64_t clock = 0;
  uint32_t slices = 1;       // slices of this push to this shard
  uint32_t slice_index = 0;  // which one this is, < slices
  double push_norm_sq = 0.0;
  // Sparse only, optional: per key, the row version its gradient was
  // computed on (from a pull with row versions; kUnknownRowVersion where
  // unknown). When given, the outcome carries each row's tau.
  absl::Span<const uint64_t> row_base_versions;
  // The ownership map epoch the push was routed by; 0 = not said
  // (CheckOwnershipEpoch).
  uint64_t ownership_epoch = 0;
};

struct Registration {
  absl::Duration lease;
  absl::Duration heartbeat_every;
  std::map<std::string, uint64_t> start_clock;  // per table
};

// The budget and the limits counted in metrics.
struct ResourceStats {
  uint64_t budget_bytes = 0;
  uint64_t table_bytes = 0;         // charged by tables
  uint64_t worker_state_bytes = 0;  // charged by per-worker state
  uint64_t staged_bytes = 0;        // charged by staged push slices
  uint64_t budget_refusals = 0;     // charges the budget refused
  uint64_t waiting_calls = 0;       // pulls waiting for their policy now
  uint64_t waiting_refused_per_worker = 0;
  uint64_t waiting_refused_total = 0;
  uint64_t tables_dropped = 0;
};

struct StoreStats {
  uint32_t shard_index = 0;
  std::vector<WorkerStatus> workers;
  uint64_t lease_expirations = 0;
  uint64_t nonfinite_rejections = 0;
  std::vector<std::pair<TableInfo, TableStats>> tables;
  ResourceStats resources;
  // Restored tables only, by name: updates known lost (RestoreLosses).
  std::vector<std::pair<std::string, uint64_t>> updates_lost;
};

class ParameterStore {
 public:
  // `clock` must outlive the store. `limits` must be valid (Validate).
  ParameterStore(uint32_t shard_index, uint32_t num_shards,
                 const Clock* clock = RealClock::Get(),
                 absl::Duration default_lease = absl::Seconds(10),
                 const ServerLimits& limits = {});
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  uint32_t shard_index() const { return shard_index_; }
  const OwnershipMap& ownership() const { return ownership_; }
  // Whether a request routed by ownership map `epoch` may be served here:
  // OK for this shard's epoch and for 0 (a client that does not say);
  // otherwise FAILED_PRECONDITION naming both epochs. Pushes, pulls and
  // RefusePush check it before anything else, so a request routed by
  // another map changes nothing.
  absl::Status CheckOwnershipEpoch(uint64_t epoch) const;
  uint32_t num_shards() const { return num_shards_; }
  const ServerLimits& limits() const { return limits_; }
  // Bytes the tables' parts are charged to the budget for.
  uint64_t reserved_bytes() const;
  const MemoryBudget& budget() const { return budget_; }
  // Every version step of the shard's tables, counted on the apply path
  // (the checkpointer's version trigger arms it).
  UpdateTrigger& updates() { return updates_; }
  // What the restore of each table lost, as the workers report it
  // (thread-safe).
  RestoreLosses& restore_losses() { return restore_losses_; }
  const RestoreLosses& restore_losses() const { return restore_losses_; }
  ResourceStats Resources() const;

  // Creates this shard's part of `config`. If the table exists with an
  // identical config and exist_ok, returns it with *created = false; with a
  // different config, ALREADY_EXISTS. Before allocating anything the part's
  // cost (limits.h) is checked against the per-table limit and what the
  // shard's budget has left, and the name and table count against theirs:
  // RESOURCE_EXHAUSTED with the numbers, and nothing is created. A sparse
  // table without a bound of its own gets the default row limit, and its
  // config (GetTable, ListTables) says so in sparse_max_rows.
  absl::StatusOr<TableInfo> CreateTable(const TableConfig& config,
                                        bool exist_ok, bool* created);
  // Admin: removes this shard's part of `name` and gives its budget back
  // (its cost and its workers' state); returns the bytes given back.
  // NOT_FOUND if there is no such table. Requests already inside the table
  // finish on it; later ones, and pulls still waiting on it when they wake,
  // see NOT_FOUND. The name may be created again at once.
  absl::StatusOr<uint64_t> DropTable(absl::string_view name);
  // Admin: charges the `bytes` a rollback to sync step `step` will hold (its
  // loaded checkpoint and the undo copies of the parts it restores) to the
  // budget as BudgetUse::kRollback, for as long as the Reservation lives.
  // RESOURCE_EXHAUSTED naming the bytes needed and the bytes the budget has
  // left when they do not fit; nothing is taken then.
  absl::StatusOr<Reservation> ReserveRollback(uint64_t step, uint64_t bytes);
  absl::StatusOr<TableInfo> GetTable(absl::string_view name) const;
  // What a request needs to size its buffers: cheaper than GetTable (no
  // stripe locks, no counters).
  struct Shape {
    TableKind kind = TableKind::kDense;
    uint32_t dim = 0;  // sparse
    Range range;       // dense: this shard's range
  };
  absl::StatusOr<Shape> ShapeOf(absl::string_view name) const;
  std::vector<TableInfo> ListTables() const;
  // Admin: changes a table's consistency and staleness settings.
  absl::StatusOr<TableInfo> SetConsistency(absl::string_view name,
                                           const ConsistencyConfig& consistency,
                                           const StalenessConfig& staleness);

  // What a request may make the shard allocate, checked before anything
  // is: the floats of a pull's answer (dense: the range must be this
  // shard's; sparse: at most max_keys_per_request keys; both within
  // max_pull_bytes, with 8 bytes per key for row versions).
  absl::StatusOr<uint64_t> DensePullFloats(absl::string_view table,
                                           uint64_t offset,
                                           uint64_t count) const;
  absl::StatusOr<uint64_t> SparsePullFloats(absl::string_view table,
                                            uint64_t keys,
                                            bool with_row_versions) const;
  // Seats `worker` among `table`'s workers as its pull would (with a
  // delay-compensation table's copy of this shard's range charged), so
  // that a worker past max_workers_per_table or the memory budget is
  // refused before the pull's answer is allocated. The pull seats its
  // worker too; after this call that is a lookup.
  absl::Status SeatPuller(absl::string_view table, uint32_t worker);
  // The gradient a push to `table` of `kind` carries: raw float32 bytes
  // viewed in place (or copied into `scratch` when unaligned), or an encoded
  // block decoded into `scratch` once its declared size was checked: more
  // values than the push can hold (the shard's range; keys x dim) is
  // INVALID_ARGUMENT, more than max_block_values RESOURCE_EXHAUSTED. `what`
  // names the field in errors.
  absl::StatusOr<absl::Span<const float>> ReadGradient(
      absl::string_view table, TableKind kind, uint64_t keys,
      absl::string_view bytes, bool encoded, std::vector<float>* scratch,
      absl::string_view what) const;

  // Dense: copies [offset, offset + out.size()) into out once the table's
  // policy lets `ctx` read (or fails with DEADLINE_EXCEEDED at ctx.deadline).
  absl::StatusOr<PullResult> PullDense(absl::string_view table, uint64_t offset,
                                       absl::Span<float> out,
                                       const PullContext& ctx = {});
  // The same read of `count` values, lent from the table's memory instead
  // of copied (DenseTable::Lend): `out` is filled when the result is
  // neither an error nor parked, and left empty otherwise.
  absl::StatusOr<PullResult> LendDense(absl::string_view table, uint64_t offset,
                                       uint64_t count, const PullContext& ctx,
                                       LentValues* out);
  // Dense: one slice of a push (meta.slices >= 1). `holder`, when given,
  // keeps `gradient`'s floats alive and unchanged as long as it lives: a
  // slice that waits for its push's other slices is then staged as a
  // reference to them, not a copy. `max_abs`, when not negative, is
  // MaxAbs(gradient) measured by the caller (+infinity: a NaN or Inf is
  // there), so the finite check does not scan the gradient again.
  absl::StatusOr<PushOutcome> PushDense(
      absl::string_view table, uint64_t offset,
      absl::Span<const float> gradient, const PushMeta& meta,
      std::shared_ptr<const void> holder = nullptr, float max_abs = -1.0f);
  // The same slice with its raw floats left in the pieces they were
  // received in (no gather): measured (MaxAbsOfPieces) for the finite check
  // and applied from the pieces in place. `holder` (required: not null)
  // keeps `gradient` and the bytes it views alive and unchanged, for a
  // slice that is staged.
  absl::StatusOr<PushOutcome> PushDense(absl::string_view table,
                                        uint64_t offset,
                                        const FloatPieces& gradient,
                                        const PushMeta& meta,
                                        std::shared_ptr<const void> holder);
  // Sparse: rows for `keys` (each must belong to this shard) into out
  // (keys.size() * dim floats). With row_versions non-empty (keys.size()
  // entries) also each row's version (see SparseTable).
  absl::StatusOr<PullResult> PullSparse(absl::string_view table,
                                        absl::Span<const uint64_t> keys,
                                        absl::Span<float> out,
                                        const PullContext& ctx = {},
                                        absl::Span<uint64_t> row_versions = {});
  // Sparse: keys must be unique and belong to this shard. With
  // meta.row_base_versions, the outcome's row_tau / row_taus hold per-row
  // tau: measured atomically with the update when the push applies at once
  // (async, ssp), at arrival for sync / semi-sync (whose steps apply
  // later), and from the rows as they are for a refused push. `max_abs`
  // is PushDense's.
  absl::StatusOr<PushOutcome> PushSparse(absl::string_view table,
                                         absl::Span<const uint64_t> keys,
                                         absl::Span<const float> gradients,
                                         const PushMeta& meta,
                                         float max_abs = -1.0f);

  // A slice of a push was refused before it reached the table (e.g. a
  // malformed encoded block): the push's other slices are refused too.
  void RefusePush(absl::string_view table, const PushMeta& meta,
                  const absl::Status& why);

  // The partition holding this shard's part of `table` (tests, snapshots).
  absl::StatusOr<std::shared_ptr<Partition>> PartitionOf(
      absl::string_view table) const;

  // Whether a pull of `table` by ctx.worker at ctx.clock would be served now.
  absl::StatusOr<bool> PullReady(absl::string_view table,
                                 const PullContext& ctx) const;

  // Membership. CheckRegistration says whether Register would take this
  // request: the worker id within max_workers (RESOURCE_EXHAUSTED), the
  // lease asked for finite and within [0, limits().max_lease_s] s, 0 = the
  // default (INVALID_ARGUMENT naming --max_lease_s: limits.h CheckLease).
  absl::Status CheckRegistration(uint32_t worker, double lease_s) const;
  Registration Register(uint32_t worker, uint64_t incarnation,
                        absl::Duration lease);
  bool Heartbeat(uint32_t worker, uint64_t incarnation);
  // The worker is done: it leaves every barrier and quorum now.
  bool Leave(uint32_t worker, uint64_t incarnation);
  // After a restore (the tables hold a checkpoint's clocks, no worker has
  // registered yet): every worker those clocks know is awaited for one
  // default lease plus one heartbeat interval (Membership::AwaitReturning),
  // so a sync / semi-sync step waits for them as it did before the restart
  // instead of closing with only the first worker back; and only their
  // reports of what they saw before the restart count (RestoreLosses).
  // Returns how many workers are awaited.
  size_t AwaitRestoredWorkers();
  // Expires leases, closes semi-sync steps whose timeout passed and expires
  // sparse rows idle for their table's ttl. The server calls it every few
  // milliseconds; simulations after moving time.
  void Tick();

  // Admin (psctl evict): declares `worker` dead now on every table, so no
  // step, quorum or SSP minimum waits for it (it may register again). With
  // `drain`, it may first finish the step each sync / semi-sync table has
  // open now (worker_drains.h): Tick declares it dead once those steps
  // closed; its later pushes and its registrations are refused until the
  // shard restarts. NOT_FOUND, and nothing changed, for a worker that never
  // registered here.
  struct Eviction {
    bool was_live = false;
    std::vector<std::string> draining_tables;  // drain: still waited for
  };
  absl::StatusOr<Eviction> EvictWorker(uint32_t worker, bool drain);
  // Workers being drained now, in id order.
  std::vector<uint32_t> DrainingWorkers() const { return drains_.Draining(); }

  // Shutdown: wakes every parked pull with `why`, and refuses with it
  // every pull that would park from now on.
  void CloseWaits(const absl::Status& why);

  StoreStats Stats(absl::string_view table = "") const;
  // Pushes refused because a gradient held NaN or Inf.
  uint64_t nonfinite_rejections() const { return nonfinite_rejections_.load(); }

 private:
  // A table's part here: its partition, and the typed storage inside it.
  struct Entry {
    std::shared_ptr<Partition> partition;
    DenseTable* dense = nullptr;
    SparseTable* sparse = nullptr;
    Reservation reservation;  // the part's cost, on budget_
    std::unique_ptr<TableWorkers> workers;
  };
  absl::StatusOr<std::shared_ptr<Entry>> Find(absl::string_view name) const;
  absl::StatusOr<std::shared_ptr<Entry>> FindKind(absl::string_view name,
                                                  TableKind kind) const;
  std::vector<std::shared_ptr<Entry>> Entries() const;
  TableInfo InfoOf(const Entry& entry) const;
  void PublishMembership();
  // max |values|, or INVALID_ARGUMENT (counted) if one is NaN or Inf.
  // `known`, when not negative, is MaxAbs(values) already measured: only a
  // non-finite one makes the values be read (to name the element).
  absl::StatusOr<float> CheckFinite(absl::string_view table,
                                    absl::Span<const float> values,
                                    float known = -1.0f);
  // The same for a part's floats, in one array or in pieces.
  absl::StatusOr<float> CheckFinite(absl::string_view table,
                                    const GradientPart& part);
  // Both PushDense forms once `part` holds the gradient: every check, then
  // the slice to the partition.
  absl::StatusOr<PushOutcome> PushDensePart(absl::string_view table,
                                            const PushMeta& meta,
                                            GradientPart part,
                                            std::shared_ptr<const void> holder);
  // Hands one validated slice to the partition, or `refused` for it
  // (`holder`: see PushDense).
  absl::StatusOr<PushOutcome> PushSliceTo(
      Entry& entry, const PushMeta& meta, const GradientPart& part,
      std::shared_ptr<const void> holder = nullptr);
  // What the pull or push of `worker` needs before it touches the entry:
  // a seat among the table's workers (with `copy_bytes` of delay
  // compensation for a dense pull of a DC table).
  absl::Status Admit(Entry& entry, uint32_t worker, uint64_t copy_bytes);
  // What a dense pull of `entry` keeps for its worker: a copy of the
  // shard's range when the table compensates delay, else nothing.
  static uint64_t PullCopyBytes(const Entry& entry);
  // Reads through the partition; a pull that would wait takes a seat in
  // waiting_ first.
  absl::StatusOr<PartitionRead> ReadEntry(Entry& entry, const PullContext& ctx,
                                          absl::FunctionRef<void()> read);
  // A dense pull's checks, then read(table) through ReadEntry: PullDense's
  // and LendDense's common part.
  absl::StatusOr<PullResult> ReadDense(absl::string_view table,
                                       uint64_t offset, uint64_t count,
                                       const PullContext& ctx,
                                       absl::FunctionRef<void(DenseTable&)> read);
  // ReadEntry for a pull that parks rather than blocks (ctx.park set).
  absl::StatusOr<PartitionRead> ReadOrParkEntry(Entry& entry,
                                                const PullContext& ctx,
                                                WaitingCalls::Seat seat,
                                                absl::FunctionRef<void()> read)
      ABSL_LOCKS_EXCLUDED(park_mu_);
  absl::Status CheckSparseKeys(const SparseTable& table,
                               absl::Span<const uint64_t> keys,
                               bool require_unique) const;

  const uint32_t shard_index_;
  const uint32_t num_shards_;
  // Which shard owns which dense range and sparse bucket: the same map the
  // clients route by (epoch 1 until ownership moves).
  const OwnershipMap ownership_;
  const Clock* const clock_;
  const ServerLimits limits_;
  Membership membership_;
  WorkerDrains drains_;
  MemoryBudget budget_;
  UpdateTrigger updates_;  // before tables_: outlives the partitions
  RestoreLosses restore_losses_;
  WaitingCalls waiting_;
  // Held shared while a pull parks, exclusively by CloseWaits: no pull
  // parks after the shard released its waiters.
  mutable absl::Mutex park_mu_;
  std::optional<absl::Status> waits_closed_ ABSL_GUARDED_BY(park_mu_);
  std::atomic<uint64_t> tables_dropped_{0};
  mutable absl::Mutex mu_;
  // shared_ptr lets a request keep using a table without holding mu_, also
  // after DropTable removed it from here.
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> tables_
      ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> nonfinite_rejections_{0};
};

}  // namespace taups

#endif  // TAUPS_SERVER_PARAMETER_STORE_H_
