#include "server/parameter_store.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/aligned_view.h"
#include "common/status_macros.h"
#include "common/wire_tensor.h"
#include "common/vector_math.h"

namespace taups {

ParameterStore::ParameterStore(uint32_t shard_index, uint32_t num_shards,
                               const Clock* clock,
                               absl::Duration default_lease,
                               const ServerLimits& limits)
    : shard_index_(shard_index),
      num_shards_(num_shards),
      ownership_(OwnershipMap::Initial(num_shards)),
      clock_(clock),
      limits_(limits),
      membership_(clock, default_lease, absl::Seconds(limits.max_lease_s)),
      drains_(shard_index),
      budget_(limits.memory_budget_bytes,
              {TablesShareOf(limits.memory_budget_bytes),
               limits.memory_budget_bytes, limits.memory_budget_bytes,
               limits.memory_budget_bytes}),
      restore_losses_(shard_index),
      waiting_(limits.max_waiting_per_worker, limits.max_waiting_calls) {}

uint64_t ParameterStore::reserved_bytes() const {
  return budget_.used(BudgetUse::kTables);
}

ResourceStats ParameterStore::Resources() const {
  ResourceStats r;
  r.budget_bytes = budget_.limit();
  r.table_bytes = budget_.used(BudgetUse::kTables);
  r.worker_state_bytes = budget_.used(BudgetUse::kWorkerState);
  r.staged_bytes = budget_.used(BudgetUse::kStaged);
  r.budget_refusals = budget_.refusals();
  const WaitingCalls::Counts waiting = waiting_.counts();
  r.waiting_calls = waiting.waiting;
  r.waiting_refused_per_worker = waiting.refused_per_worker;
  r.waiting_refused_total = waiting.refused_total;
  r.tables_dropped = tables_dropped_.load();
  return r;
}

absl::StatusOr<TableInfo> ParameterStore::CreateTable(const TableConfig& requested,
                                                      bool exist_ok,
                                                      bool* created) {
  *created = false;
  RETURN_IF_ERROR(requested.Validate());
  RETURN_IF_ERROR(CheckNameLength(requested.name, limits_));
  const TableConfig config = WithShardBounds(requested, limits_);
  Range range;
  if (config.kind == TableKind::kDense) {
    if (config.dense_size < num_shards_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dense table '", config.name, "' of ", config.dense_size,
          " elements is smaller than the ", num_shards_, " shards"));
    }
    range = ownership_.DenseRangeOf(config.dense_size, shard_index_);
  }
  ASSIGN_OR_RETURN(const TableCost cost, CostOf(config, range.size()));
  std::shared_ptr<Entry> entry;
  {
    absl::MutexLock lock(&mu_);
    auto it = tables_.find(config.name);
    if (it != tables_.end()) {
      const TableConfig existing = InfoOf(*it->second).config;
      if (exist_ok && existing == config) return InfoOf(*it->second);
      return absl::AlreadyExistsError(absl::StrCat(
          "table '", config.name, "' already exists",
          existing == config ? "" : " with a different configuration"));
    }
    // Checked before the table's storage is allocated, under the lock that
    // keeps two creations from both taking the budget's last bytes.
    RETURN_IF_ERROR(CheckTableFits(config, cost, tables_.size(), limits_));
    Reservation reservation(&budget_, BudgetUse::kTables, cost.bytes);
    if (!reservation.ok()) {
      return TableOverBudget(config, cost, budget_, tables_.size());
    }
    entry = std::make_shared<Entry>();
    entry->reservation = std::move(reservation);
    entry->workers =
        std::make_unique<TableWorkers>(config.name, &budget_, limits_);
    std::unique_ptr<Table> table;
    if (config.kind == TableKind::kDense) {
      auto dense = std::make_unique<DenseTable>(config, range);
      entry->dense = dense.get();
      table = std::move(dense);
    } else {
      auto sparse = std::make_unique<SparseTable>(config, clock_);
      entry->sparse = sparse.get();
      table = std::move(sparse);
    }
    PartitionLimits partition_limits;
    partition_limits.max_staged_bytes = limits_.max_staged_bytes;
    partition_limits.budget = &budget_;
    partition_limits.updates = &updates_;
    entry->partition = std::make_shared<Partition>(std::move(table), clock_,
                                                   partition_limits);
    entry->partition->SetLiveWorkers(membership_.View());
    tables_.emplace(config.name, entry);
  }
  *created = true;
  return InfoOf(*entry);
}

absl::StatusOr<uint64_t> ParameterStore::DropTable(absl::string_view name) {
  std::shared_ptr<Entry> entry;
  uint64_t freed = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = tables_.find(name);
    if (it == tables_.end()) {
      return absl::NotFoundError(absl::StrCat("no table ", QuotedName(name),
                                              " on shard ", shard_index_));
    }
    entry = std::move(it->second);
    tables_.erase(it);
    // Given back under mu_, so a CreateTable that finds the name free also
    // finds its bytes free.
    freed = entry->reservation.bytes() + entry->workers->Close();
    entry->reservation.Release();
    tables_dropped_.fetch_add(1);
  }
  entry->partition->ReleaseWaiters(absl::NotFoundError(absl::StrCat(
      "table ", QuotedName(name), " was dropped on shard ", shard_index_,
      " while this pull waited")));
  return freed;
}

absl::StatusOr<TableInfo> ParameterStore::GetTable(absl::string_view name) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(name));
  return InfoOf(*entry);
}

absl::StatusOr<ParameterStore::Shape> ParameterStore::ShapeOf(
    absl::string_view name) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(name));
  Shape shape;
  shape.kind = entry->partition->config().kind;
  if (entry->dense) {
    shape.range = entry->dense->range();
  } else {
    shape.dim = entry->sparse->dim();
  }
  return shape;
}

std::vector<std::shared_ptr<ParameterStore::Entry>> ParameterStore::Entries()
    const {
  std::vector<std::shared_ptr<Entry>> entries;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, entry] : tables_) entries.push_back(entry);
  return entries;
}

std::vector<TableInfo> ParameterStore::ListTables() const {
  std::vector<TableInfo> infos;
  for (const auto& entry : Entries()) infos.push_back(InfoOf(*entry));
  return infos;
}

TableInfo ParameterStore::InfoOf(const Entry& entry) const {
  TableInfo info;
  info.shard_index = shard_index_;
  info.num_shards = num_shards_;
  info.config = entry.partition->config();
  info.config.consistency = entry.partition->consistency();
  info.config.staleness = entry.partition->staleness();
  info.version = entry.partition->version();
  info.open_step = entry.partition->open_step();
  if (entry.dense) {
    info.range = entry.dense->range();
    info.dense_block_copies = entry.dense->lent_block_copies();
  } else {
    const SparseTable::Counters c = entry.sparse->counters();
    info.sparse_rows = c.rows;
    info.sparse_evictions = c.evictions;
    info.sparse_refused = c.refused;
    info.sparse_ttl_expired = c.ttl_expired;
    info.sparse_bytes = c.bytes;
    info.sparse_row_limit = entry.sparse->row_limit();
  }
  info.reserved_bytes = entry.reservation.bytes();
  info.workers = entry.workers->workers();
  return info;
}

absl::StatusOr<TableInfo> ParameterStore::SetConsistency(
    absl::string_view name, const ConsistencyConfig& consistency,
    const StalenessConfig& staleness) {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(name));
  TableConfig proposed = entry->partition->config();
  proposed.consistency = consistency;
  proposed.staleness = staleness;
  RETURN_IF_ERROR(proposed.Validate());
  RETURN_IF_ERROR(entry->partition->SetConfig(consistency, staleness));
  return InfoOf(*entry);
}

absl::StatusOr<std::shared_ptr<ParameterStore::Entry>> ParameterStore::Find(
    absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no table ", QuotedName(name), " on shard ", shard_index_));
  }
  return it->second;
}

absl::StatusOr<std::shared_ptr<ParameterStore::Entry>> ParameterStore::FindKind(
    absl::string_view name, TableKind kind) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(name));
  const TableKind actual = entry->partition->config().kind;
  if (actual != kind) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", name, "' is ", TableKindName(actual),
                     "; use the ", TableKindName(actual), " calls"));
  }
  return entry;
}

namespace {

absl::Status CheckDenseRange(const DenseTable& table, uint64_t offset,
                             uint64_t count, uint32_t shard) {
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.config().name, "': empty range"));
  }
  if (!table.range().Contains(offset, count)) {
    return absl::OutOfRangeError(absl::StrCat(
        "table '", table.config().name, "': elements [", offset, ", +", count,
        ") are not all on shard ", shard, ", which holds [",
        table.range().begin, ", ", table.range().end, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckPushMeta(const PushMeta& meta, uint64_t max_slices,
                           absl::string_view table) {
  if (meta.slices == 0 || meta.slices > max_slices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': ", meta.slices, " slices for a push of at most ",
        max_slices, " elements on this shard"));
  }
  if (meta.slice_index >= meta.slices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': slice index ", meta.slice_index, " of a push of ",
        meta.slices, " slices"));
  }
  if (!std::isfinite(meta.push_norm_sq) || meta.push_norm_sq < 0.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': push_norm_sq must be finite and >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<float> ParameterStore::CheckFinite(
    absl::string_view table, absl::Span<const float> values, float known) {
  const float max_abs = known >= 0.0f ? known : MaxAbs(values);
  if (std::isfinite(max_abs)) return max_abs;
  nonfinite_rejections_.fetch_add(1);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", table, "': gradient element ", i, " is ", values[i],
          "; NaN/Inf gradients are refused and nothing was applied"));
    }
  }
  return absl::InternalError("MaxAbs found a non-finite value that is not there");
}

absl::StatusOr<float> ParameterStore::CheckFinite(absl::string_view table,
                                                  const GradientPart& part) {
  if (part.pieces == nullptr) {
    return CheckFinite(table, part.values, part.max_abs);
  }
  const float max_abs = part.max_abs >= 0.0f
                            ? part.max_abs
                            : MaxAbsOfPieces(part.pieces->pieces());
  if (std::isfinite(max_abs)) return max_abs;
  std::vector<float> gathered;  // only to name the element
  return CheckFinite(table, part.Contiguous(&gathered), max_abs);
}

absl::StatusOr<PushOutcome> ParameterStore::PushSliceTo(
    Entry& entry, const PushMeta& meta, const GradientPart& part,
    std::shared_ptr<const void> holder) {
  if (absl::Status drained = drains_.CheckPush(
          meta.origin.worker_id, entry.partition->config().name, meta.clock);
      !drained.ok()) {
    if (meta.slices > 1 && meta.slice_index < meta.slices) {
      entry.partition->Refuse(meta.origin, meta.slice_index, meta.slices, drained);
    }
    return drained;
  }
  PushSlice slice;
  slice.origin = meta.origin;
  slice.index = meta.slice_index;
  slice.header.slices = meta.slices;
  slice.header.base_version = meta.base_version;
  slice.header.clock = meta.clock;
  slice.header.push_norm_sq = meta.push_norm_sq;
  slice.part = part;
  slice.holder = std::move(holder);
  return entry.partition->Push(slice);
}

absl::Status ParameterStore::CheckOwnershipEpoch(uint64_t epoch) const {
  if (epoch == 0 || epoch == ownership_.epoch()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "request routed by ownership map epoch ", epoch, ", but shard ",
      shard_index_, " is at ownership epoch ", ownership_.epoch(),
      "; nothing was done (route by the shard's map and send again)"));
}

void ParameterStore::RefusePush(absl::string_view table, const PushMeta& meta,
                                const absl::Status& why) {
  // A slice routed by another map is not one of this shard's pushes.
  if (!CheckOwnershipEpoch(meta.ownership_epoch).ok()) return;
  if (meta.slices <= 1 || meta.slice_index >= meta.slices) return;
  absl::StatusOr<std::shared_ptr<Entry>> entry = Find(table);
  if (!entry.ok()) return;
  (*entry)->partition->Refuse(meta.origin, meta.slice_index, meta.slices, why);
}

absl::StatusOr<std::shared_ptr<Partition>> ParameterStore::PartitionOf(
    absl::string_view table) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(table));
  return entry->partition;
}

absl::Status ParameterStore::Admit(Entry& entry, uint32_t worker,
                                   uint64_t copy_bytes) {
  return entry.workers->Admit(worker, copy_bytes);
}

// A pull of a delay-compensation table keeps a copy of the shard's range
// for its worker (DenseTable::Pull): charged before it is made.
uint64_t ParameterStore::PullCopyBytes(const Entry& entry) {
  if (entry.dense == nullptr) return 0;
  return entry.partition->staleness().delay_compensation
             ? 4 * entry.dense->range().size()
             : 0;
}

absl::Status ParameterStore::SeatPuller(absl::string_view table,
                                        uint32_t worker) {
  RETURN_IF_ERROR(CheckWorkerId(worker, limits_));
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(table));
  return Admit(*entry, worker, PullCopyBytes(*entry));
}

absl::StatusOr<PartitionRead> ParameterStore::ReadEntry(
    Entry& entry, const PullContext& ctx, absl::FunctionRef<void()> read) {
  WaitingCalls::Seat seat;
  if (ctx.deadline > clock_->Now() &&
      !entry.partition->PullReady(ctx.worker, ctx.clock)) {
    ASSIGN_OR_RETURN(seat, waiting_.Enter(ctx.worker, entry.partition->config().name));
  }
  if (ctx.park != nullptr) {
    return ReadOrParkEntry(entry, ctx, std::move(seat), read);
  }
  return entry.partition->Read(ctx.worker, ctx.clock, ctx.deadline, read);
}

absl::StatusOr<PartitionRead> ParameterStore::ReadOrParkEntry(
    Entry& entry, const PullContext& ctx, WaitingCalls::Seat seat,
    absl::FunctionRef<void()> read) {
  absl::ReaderMutexLock lock(&park_mu_);
  if (waits_closed_.has_value() &&
      !entry.partition->PullReady(ctx.worker, ctx.clock)) {
    return *waits_closed_;
  }
  return entry.partition->ReadOrPark(
      ctx.worker, ctx.clock, ctx.deadline, read, [&]() -> PullWaiters::Wake {
        // The seat is given back as the pull leaves the parking, however
        // it leaves.
        return [seat = std::move(seat), wake = std::move(*ctx.park)](
                   absl::Status why) mutable {
          seat = WaitingCalls::Seat();
          std::move(wake)(std::move(why));
        };
      });
}

void ParameterStore::CloseWaits(const absl::Status& why) {
  absl::MutexLock lock(&park_mu_);
  waits_closed_ = why;
  for (const std::shared_ptr<Entry>& entry : Entries()) {
    entry->partition->ReleaseWaiters(why);
  }
}

absl::Status ParameterStore::CheckSparseKeys(const SparseTable& table,
                                             absl::Span<const uint64_t> keys,
                                             bool require_unique) const {
  if (keys.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.config().name, "': no keys"));
  }
  RETURN_IF_ERROR(CheckKeyCount(table.config().name, keys.size(), limits_));
  // A map of one shard gives it every bucket (owners are < num_shards):
  // shard 0 owns every key, and no key needs hashing to tell.
  const bool owns_all = ownership_.num_shards() == 1 && shard_index_ == 0;
  for (uint64_t key : owns_all ? absl::Span<const uint64_t>() : keys) {
    const uint32_t owner = ownership_.SparseOwnerOf(key);
    if (owner != shard_index_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", table.config().name, "': key ", key, " belongs to shard ",
          owner, ", not shard ", shard_index_, " (ownership epoch ",
          ownership_.epoch(), ")"));
    }
  }
  if (require_unique) {
    if (const std::optional<uint64_t> key = SparseTable::FirstRepeatedKey(keys)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", table.config().name, "': key ", *key,
          " appears twice in one push; merge duplicate keys first"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ParameterStore::PullReady(absl::string_view table,
                                               const PullContext& ctx) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(table));
  return entry->partition->PullReady(ctx.worker, ctx.clock);
}

absl::StatusOr<uint64_t> ParameterStore::DensePullFloats(absl::string_view table,
                                                         uint64_t offset,
                                                         uint64_t count) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                   FindKind(table, TableKind::kDense));
  if (count > kMaxDenseTableSize) {  // more than any table holds: malformed
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': a pull of ", count,
        " elements, more than a table may hold (", kMaxDenseTableSize, ")"));
  }
  RETURN_IF_ERROR(CheckDenseRange(*entry->dense, offset, count, shard_index_));
  RETURN_IF_ERROR(CheckPullBytes(table, count, 0, limits_));
  return count;
}

absl::StatusOr<uint64_t> ParameterStore::SparsePullFloats(
    absl::string_view table, uint64_t keys, bool with_row_versions) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                   FindKind(table, TableKind::kSparse));
  RETURN_IF_ERROR(CheckKeyCount(table, keys, limits_));
  const uint64_t floats = keys * entry->sparse->dim();
  RETURN_IF_ERROR(CheckPullBytes(table, floats,
                                 with_row_versions ? 8 * keys : 0, limits_));
  return floats;
}

absl::StatusOr<absl::Span<const float>> ParameterStore::ReadGradient(
    absl::string_view table, TableKind kind, uint64_t keys,
    absl::string_view bytes, bool encoded, std::vector<float>* scratch,
    absl::string_view what) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, FindKind(table, kind));
  // Raw floats are no larger than the message that carried them.
  if (!encoded) return ViewAs<float>(bytes, scratch, what);
  uint64_t holds = 0;
  if (entry->dense) {
    holds = entry->dense->range().size();
  } else {
    RETURN_IF_ERROR(CheckKeyCount(table, keys, limits_));
    holds = keys * entry->sparse->dim();
  }
  return GradientFromWire(bytes, encoded, holds, scratch, what,
                          limits_.max_block_values);
}

absl::StatusOr<PullResult> ParameterStore::ReadDense(
    absl::string_view table, uint64_t offset, uint64_t count,
    const PullContext& ctx,
    absl::FunctionRef<void(DenseTable&)> read) {
  RETURN_IF_ERROR(CheckOwnershipEpoch(ctx.ownership_epoch));
  RETURN_IF_ERROR(CheckWorkerId(ctx.worker, limits_));
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                   FindKind(table, TableKind::kDense));
  RETURN_IF_ERROR(CheckDenseRange(*entry->dense, offset, count, shard_index_));
  RETURN_IF_ERROR(CheckPullBytes(table, count, 0, limits_));
  RETURN_IF_ERROR(Admit(*entry, ctx.worker, PullCopyBytes(*entry)));
  ASSIGN_OR_RETURN(PartitionRead read_at, ReadEntry(*entry, ctx, [&] {
                     read(*entry->dense);
                   }));
  return PullResult{read_at.version, read_at.step, read_at.parked};
}

absl::StatusOr<PullResult> ParameterStore::PullDense(absl::string_view table,
                                                     uint64_t offset,
                                                     absl::Span<float> out,
                                                     const PullContext& ctx) {
  return ReadDense(table, offset, out.size(), ctx, [&](DenseTable& dense) {
    dense.Pull(offset, out, ctx.worker);
  });
}

absl::StatusOr<PullResult> ParameterStore::LendDense(absl::string_view table,
                                                     uint64_t offset,
                                                     uint64_t count,
                                                     const PullContext& ctx,
                                                     LentValues* out) {
  out->Clear();
  return ReadDense(table, offset, count, ctx, [&](DenseTable& dense) {
    dense.Lend(offset, count, ctx.worker, out);
  });
}

absl::StatusOr<PushOutcome> ParameterStore::PushDense(
    absl::string_view table, uint64_t offset, absl::Span<const float> gradient,
    const PushMeta& meta, std::shared_ptr<const void> holder, float max_abs) {
  GradientPart part;
  part.offset = offset;
  part.values = gradient;
  part.max_abs = max_abs;
  return PushDensePart(table, meta, part, std::move(holder));
}

absl::StatusOr<PushOutcome> ParameterStore::PushDense(
    absl::string_view table, uint64_t offset, const FloatPieces& gradient,
    const PushMeta& meta, std::shared_ptr<const void> holder) {
  assert(holder != nullptr);
  GradientPart part;
  part.offset = offset;
  part.pieces = &gradient;
  return PushDensePart(table, meta, part, std::move(holder));
}

absl::StatusOr<PushOutcome> ParameterStore::PushDensePart(
    absl::string_view table, const PushMeta& meta, GradientPart part,
    std::shared_ptr<const void> holder) {
  RETURN_IF_ERROR(CheckOwnershipEpoch(meta.ownership_epoch));
  RETURN_IF_ERROR(CheckWorkerId(meta.origin.worker_id, limits_));
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                   FindKind(table, TableKind::kDense));
  RETURN_IF_ERROR(
      CheckDenseRange(*entry->dense, part.offset, part.size(), shard_index_));
  RETURN_IF_ERROR(CheckPushMeta(meta, entry->dense->range().size(), table));
  RETURN_IF_ERROR(Admit(*entry, meta.origin.worker_id, 0));
  absl::StatusOr<float> checked = CheckFinite(table, part);
  if (!checked.ok()) {
    RefusePush(table, meta, checked.status());
    return checked.status();
  }
  part.max_abs = *checked;
  return PushSliceTo(*entry, meta, part, std::move(holder));
}

absl::StatusOr<PullResult> ParameterStore::PullSparse(
    absl::string_view table, absl::Span<const uint64_t> keys,
    absl::Span<float> out, const PullContext& ctx,
    absl::Span<uint64_t> row_versions) {
  RETURN_IF_ERROR(CheckOwnershipEpoch(ctx.ownership_epoch));
  RETURN_IF_ERROR(CheckWorkerId(ctx.worker, limits_));
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                   FindKind(table, TableKind::kSparse));
  RETURN_IF_ERROR(CheckSparseKeys(*entry->sparse, keys, /*require_unique=*/false));
  if (out.size() != keys.size() * entry->sparse->dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': output holds ", out.size(), " floats, need ",
        keys.size(), " x ", entry->sparse->dim()));
  }
  if (!row_versions.empty() && row_versions.size() != keys.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': room for ", row_versions.size(),
        " row versions, need ", keys.size()));
  }
  RETURN_IF_ERROR(CheckPullBytes(table, out.size(), 8 * row_versions.size(),
                                 limits_));
  RETURN_IF_ERROR(Admit(*entry, ctx.worker, 0));
  ASSIGN_OR_RETURN(PartitionRead read, ReadEntry(*entry, ctx, [&] {
                     entry->sparse->Pull(keys, out, row_versions);
                   }));
  return PullResult{read.version, read.step, read.parked};
}

absl::StatusOr<PushOutcome> ParameterStore::PushSparse(
    absl::string_view table, absl::Span<const uint64_t> keys,
    absl::Span<const float> gradients, const PushMeta& meta, float max_abs) {
  RETURN_IF_ERROR(CheckOwnershipEpoch(meta.ownership_epoch));
  RETURN_IF_ERROR(CheckWorkerId(meta.origin.worker_id, limits_));
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                   FindKind(table, TableKind::kSparse));
  RETURN_IF_ERROR(CheckSparseKeys(*entry->sparse, keys, /*require_unique=*/true));
  if (gradients.size() != keys.size() * entry->sparse->dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': ", gradients.size(), " gradient floats for ",
        keys.size(), " keys of dim ", entry->sparse->dim()));
  }
  RETURN_IF_ERROR(CheckPushMeta(meta, 1, table));
  const bool row_tau = !meta.row_base_versions.empty();
  if (row_tau && meta.row_base_versions.size() != keys.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': ", meta.row_base_versions.size(),
        " row base versions for ", keys.size(), " keys"));
  }
  ASSIGN_OR_RETURN(const float checked_max_abs,
                   CheckFinite(table, gradients, max_abs));
  RETURN_IF_ERROR(Admit(*entry, meta.origin.worker_id, 0));
  PushMeta whole = meta;
  whole.slices = 1;
  whole.slice_index = 0;
  GradientPart part;
  part.keys = keys;
  part.values = gradients;
  part.max_abs = checked_max_abs;
  if (!row_tau) return PushSliceTo(*entry, whole, part);

  std::vector<uint64_t> taus(keys.size(), 0);
  RowTauSink sink;
  sink.base_versions = meta.row_base_versions;
  sink.taus = absl::MakeSpan(taus);
  const ConsistencyKind kind = entry->partition->consistency().kind;
  if (kind == ConsistencyKind::kSync || kind == ConsistencyKind::kSemiSync) {
    // Gathered now, applied when the step closes (maybe by this very push):
    // the rows' staleness is what it is on arrival.
    entry->sparse->MeasureRowTau(keys, &sink);
  } else {
    part.row_tau = &sink;
  }
  ASSIGN_OR_RETURN(PushOutcome outcome, PushSliceTo(*entry, whole, part));
  if (!sink.measured) entry->sparse->MeasureRowTau(keys, &sink);  // refused
  outcome.row_tau = sink.summary;
  outcome.row_taus = std::move(taus);
  return outcome;
}

void ParameterStore::PublishMembership() {
  const MembershipView view = membership_.View();
  for (const auto& entry : Entries()) {
    entry->partition->SetLiveWorkers(view);
  }
}

size_t ParameterStore::AwaitRestoredWorkers() {
  absl::flat_hash_set<uint32_t> known;
  for (const auto& entry : Entries()) {
    for (uint32_t w : entry->partition->KnownWorkers()) known.insert(w);
  }
  std::vector<uint32_t> workers(known.begin(), known.end());
  std::sort(workers.begin(), workers.end());
  const absl::Duration lease = membership_.default_lease();
  membership_.AwaitReturning(workers, lease + lease / 4);
  restore_losses_.ExpectWorkers(workers);
  PublishMembership();
  return workers.size();
}

absl::Status ParameterStore::CheckRegistration(uint32_t worker,
                                               double lease_s) const {
  RETURN_IF_ERROR(CheckWorkerId(worker, limits_));
  RETURN_IF_ERROR(drains_.CheckRegistration(worker));
  return CheckLease(lease_s, limits_);
}

Registration ParameterStore::Register(uint32_t worker, uint64_t incarnation,
                                      absl::Duration lease) {
  Registration result;
  result.lease = membership_.Register(worker, incarnation, lease).lease;
  result.heartbeat_every = result.lease / 4;
  PublishMembership();
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> entries;
  {
    absl::ReaderMutexLock lock(&mu_);
    entries.assign(tables_.begin(), tables_.end());
  }
  for (const auto& [name, entry] : entries) {
    result.start_clock[name] = entry->partition->JoinClock(worker);
  }
  return result;
}

bool ParameterStore::Heartbeat(uint32_t worker, uint64_t incarnation) {
  return membership_.Heartbeat(worker, incarnation);
}

bool ParameterStore::Leave(uint32_t worker, uint64_t incarnation) {
  const bool known = membership_.Leave(worker, incarnation);
  if (known) PublishMembership();
  return known;
}

void ParameterStore::Tick() {
  bool changed = !membership_.Expire().empty();
  for (uint32_t worker : drains_.Finish()) {
    membership_.Evict(worker);
    changed = true;
  }
  if (changed) PublishMembership();
  for (const auto& entry : Entries()) entry->partition->Tick();
}

StoreStats ParameterStore::Stats(absl::string_view table) const {
  StoreStats stats;
  stats.shard_index = shard_index_;
  stats.workers = membership_.Workers();
  stats.lease_expirations = membership_.lease_expirations();
  stats.nonfinite_rejections = nonfinite_rejections_.load();
  for (const auto& entry : Entries()) {
    if (!table.empty() && entry->partition->config().name != table) continue;
    TableStats counters = entry->partition->Stats();
    TableInfo info = InfoOf(*entry);
    // The clock the counters were read with, not a later one: a step that
    // closes between the two reads must not show its version without its
    // close (or the other way round).
    info.version = counters.version;
    info.open_step = counters.open_step;
    if (entry->sparse) counters.row_tau = entry->sparse->row_tau();
    stats.tables.emplace_back(std::move(info), std::move(counters));
  }
  stats.resources = Resources();
  stats.updates_lost = restore_losses_.Snapshot();
  return stats;
}

}  // namespace taups
