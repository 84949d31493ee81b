#include "server/sparse_table.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/row_copy.h"
#include "common/shard_map.h"
#include "common/stamped_key_table.h"
#include "common/vector_math.h"
#include "common/task_pool.h"
#include "server/table_stats.h"

namespace taups {
namespace {

// Rows one ExpireIdle call may remove per stripe, so a mass expiry does not
// hold a stripe's lock for long.
constexpr size_t kMaxExpiredPerStripePerCall = 4096;

bool UsesAdmission(const TableConfig& config) {
  return config.sparse_admit_after > 1 || config.sparse_admit_probability < 1.0f;
}

// Measures the tau of request key i whose row has `version` (nullopt: no
// row) into sink.taus[i] and `summary` (the summary of i's stripe: stripes
// may be measured at once, and their summaries are added up afterwards);
// sets counted[i] when the row counts (RowTauSummary).
void MeasureOne(const RowTauSink& sink, RowTauSummary& summary, uint32_t i,
                std::optional<uint64_t> version, uint8_t* counted) {
  const uint64_t base = sink.base_versions[i];
  if (base == kUnknownRowVersion) {
    sink.taus[i] = kUnknownRowVersion;
    return;
  }
  if (!version.has_value()) {
    sink.taus[i] = 0;
    if (base > 0) ++summary.reborn;
    return;
  }
  uint64_t tau = *version;
  if (base <= *version) {
    tau = *version - base;
  } else {
    ++summary.reborn;
  }
  sink.taus[i] = tau;
  ++summary.rows;
  summary.sum += tau;
  summary.max = std::max(summary.max, tau);
  counted[i] = 1;
}

// Adds the stripes' summaries into sink->summary (sums and a maximum of
// integers: the same whatever order the stripes were measured in).
void AddSummaries(absl::Span<const RowTauSummary> per_stripe,
                  RowTauSink* sink) {
  for (const RowTauSummary& part : per_stripe) {
    sink->summary.rows += part.rows;
    sink->summary.sum += part.sum;
    sink->summary.max = std::max(sink->summary.max, part.max);
    sink->summary.reborn += part.reborn;
  }
}

}  // namespace

uint64_t SparseTable::RowFootprintBytes(const TableConfig& config) {
  const uint64_t state = MakeOptimizer(config.optimizer)->state_width();
  // 28: the row's key, version, free-list and recency entries; 44: its
  // share of the stripe's RowIndex at the fullest (under 43 bytes).
  uint64_t bytes = 4 * uint64_t{config.dim} * (1 + state) + 28 + 44;
  // The row's change stamp for incremental checkpoints (StripeRows'
  // changed_epoch_, 4 bytes a slot): allocated only once a checkpointer
  // tracks changes, which the config cannot tell, so always counted.
  bytes += sizeof(uint32_t);
  if (config.sparse_ttl_s > 0.0) bytes += 8;
  if (config.sparse_eviction == SparseEvictionKind::kLfu) bytes += 36;
  return bytes;
}

absl::StatusOr<uint64_t> SparseTable::RowLimit(const TableConfig& config) {
  uint64_t limit = config.sparse_max_rows;
  if (config.sparse_max_bytes > 0) {
    const uint64_t fixed =
        kStripes * (kStripeFixedBytes +
                    (UsesAdmission(config) ? AdmissionFilter::kSketchBytes : 0));
    const uint64_t row_bytes = RowFootprintBytes(config);
    const uint64_t rows = config.sparse_max_bytes > fixed
                              ? (config.sparse_max_bytes - fixed) / row_bytes
                              : 0;
    if (rows < kStripes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse table '", config.name, "': max_bytes ",
          config.sparse_max_bytes, " buys ", rows, " rows of ", row_bytes,
          " bytes after ", fixed, " fixed bytes; at least ", kStripes,
          " rows (one per stripe) are needed"));
    }
    limit = limit == 0 ? rows : std::min(limit, rows);
  }
  return limit;
}

SparseTable::SparseTable(const TableConfig& config, const Clock* clock)
    : config_(config),
      dim_(config.dim),
      optimizer_(MakeOptimizer(config.optimizer)),
      row_stride_(static_cast<size_t>(dim_) * (1 + optimizer_->state_width())),
      initializer_(config.initializer, config.name),
      clock_(clock),
      ttl_ns_(static_cast<int64_t>(config.sparse_ttl_s * 1e9)),
      row_limit_(RowLimit(config).value_or(config.sparse_max_rows)),
      row_tau_(Histogram::IntegerBounds(kTauHistogramMax)) {
  stripe_options_.max_rows = row_limit_ / kStripes;
  stripe_options_.eviction = config.sparse_eviction;
  stripe_options_.ttl_ns = ttl_ns_;
  stripe_options_.admit_after = config.sparse_admit_after;
  stripe_options_.admit_probability = config.sparse_admit_probability;
  stripe_options_.admission_seed =
      MixKey(initializer_.table_seed() ^ 0xad317f5e11a7ULL);
  for (int s = 0; s < kStripes; ++s) stripes_.push_back(NewStripe());
}

std::unique_ptr<SparseTable::Stripe> SparseTable::NewStripe() const {
  return std::make_unique<Stripe>(row_stride_, stripe_options_);
}

int SparseTable::StripeIndexOf(uint64_t key) {
  // High bits: the low bits of the same hash choose the shard.
  return static_cast<int>((MixKey(key) >> 40) % kStripes);
}

int64_t SparseTable::NowNanos() const {
  return ttl_ns_ > 0 ? absl::ToUnixNanos(clock_->Now()) : 0;
}

namespace {

// How far ahead of the key being handled a loop over a request's keys
// prefetches the key's slot (FirstRepeatedKey's set, a stripe's index): a
// large request's do not fit the cache, and a miss to memory takes the work
// of a few dozen keys (key_grouping_bench's repeat check of 65,536 distinct
// keys: 0.47 ms 8 ahead, 0.41 ms 32 ahead; of 20,809 Zipf keys 0.14, 0.085).
constexpr size_t kPrefetchAhead = 32;

}  // namespace

std::optional<uint64_t> SparseTable::FirstRepeatedKey(
    absl::Span<const uint64_t> keys) {
  thread_local StampedKeyTable seen;
  StampedKeyTable own;  // for calls too large to keep a table for
  StampedKeyTable& set = keys.size() <= kMaxRetainedRepeatKeys ? seen : own;
  set.Reset(keys.size());
  const size_t n = keys.size();
  bool added = false;
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) set.Prefetch(keys[i + kPrefetchAhead]);
    set.FindOrAdd(keys[i], 0, &added);
    if (!added) return keys[i];
  }
  return std::nullopt;
}

void SparseTable::SetTaskPool(TaskPool* pool, size_t min_parallel) {
  pool_set_ = true;
  pool_ = pool;
  parallel_min_ = std::max<size_t>(min_parallel, 1);
}

TaskPool* SparseTable::PoolFor(size_t keys) const {
  if (keys < parallel_min_) return nullptr;
  TaskPool* pool = pool_set_ ? pool_ : &TaskPool::Shared();
  return pool != nullptr && pool->threads() >= 2 ? pool : nullptr;
}

template <typename Fn>
void SparseTable::ForEachStripeGroup(absl::Span<const uint64_t> keys,
                                     Spread spread, Fn&& fn) const {
  // Counting sort of key positions by stripe, so each stripe is locked once
  // per request instead of once per key.
  std::vector<uint32_t> order(keys.size());
  std::vector<uint64_t> sorted_keys(keys.size());
  std::vector<uint8_t> stripe_of(keys.size());
  uint32_t begin[kStripes + 1] = {};
  for (size_t i = 0; i < keys.size(); ++i) {
    stripe_of[i] = static_cast<uint8_t>(StripeIndexOf(keys[i]));
    ++begin[stripe_of[i] + 1];
  }
  for (int s = 0; s < kStripes; ++s) begin[s + 1] += begin[s];
  uint32_t next[kStripes];
  std::copy(begin, begin + kStripes, next);
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint32_t at = next[stripe_of[i]]++;
    order[at] = static_cast<uint32_t>(i);
    sorted_keys[at] = keys[i];
  }
  const std::shared_ptr<CutState> cut = PendingCut();
  auto visit = [&](int s) {
    if (begin[s] == begin[s + 1]) return;
    Stripe& stripe = *stripes_[s];
    absl::MutexLock lock(&stripe.mu);
    if (cut) CopyStripeLocked(*cut, s);
    const size_t count = begin[s + 1] - begin[s];
    fn(s, stripe, absl::MakeConstSpan(order.data() + begin[s], count),
       absl::MakeConstSpan(sorted_keys.data() + begin[s], count));
  };
  TaskPool* pool =
      spread == Spread::kPoolWhenLarge ? PoolFor(keys.size()) : nullptr;
  if (pool == nullptr) {
    for (int s = 0; s < kStripes; ++s) visit(s);
    return;
  }
  // One task per stripe: the pool's threads claim them in turn.
  pool->Run(kStripes, [&](size_t s) { visit(static_cast<int>(s)); });
}

template <typename Fn>
void SparseTable::ForEachKeyByStripe(absl::Span<const uint64_t> keys,
                                     Spread spread, Fn&& fn) const {
  ForEachStripeGroup(keys, spread, [&](int s, Stripe& stripe,
                                       absl::Span<const uint32_t> positions,
                                       absl::Span<const uint64_t> group_keys) {
    for (size_t j = 0; j < positions.size(); ++j) {
      if (j + kPrefetchAhead < positions.size()) {
        stripe.rows.Prefetch(group_keys[j + kPrefetchAhead]);
      }
      fn(s, stripe, positions[j], group_keys[j]);
    }
  });
}

SparseTable::Counters SparseTable::counters() const {
  Counters c;
  for (const auto& stripe : stripes_) {
    absl::MutexLock lock(&stripe->mu);
    c.rows += stripe->rows.size();
    c.evictions += stripe->rows.evictions();
    c.ttl_expired += stripe->rows.ttl_expired();
    c.refused += stripe->rows.refused();
    c.bytes += stripe->rows.memory_bytes();
  }
  return c;
}

Histogram SparseTable::row_tau() const {
  absl::MutexLock lock(&tau_mu_);
  return row_tau_;
}

uint32_t SparseTable::CreateLocked(Stripe& stripe, uint64_t key,
                                   int64_t now_ns) {
  const uint32_t slot = stripe.rows.Create(key, now_ns);
  if (slot != StripeRows::kNoSlot) {
    float* row = stripe.rows.row(slot);
    initializer_.FillRow(key, absl::MakeSpan(row, dim_));
    optimizer_->InitState(row + dim_, dim_);
  }
  return slot;
}

void SparseTable::Pull(absl::Span<const uint64_t> keys, absl::Span<float> out,
                       absl::Span<uint64_t> row_versions) {
  const int64_t now = NowNanos();
  const bool with_versions = !row_versions.empty();
  // Stripes may run at once: each writes only its keys' places of `out`
  // and `row_versions`. The loop is compiled per common row width, so a
  // row's copy is a few moves, not a call.
  WithRowWidth(dim_, [&](auto width) {
    ForEachKeyByStripe(keys, Spread::kPoolWhenLarge,
                       [&](int /*s*/, Stripe& stripe, uint32_t i, uint64_t key)
                           ABSL_NO_THREAD_SAFETY_ANALYSIS {
      float* dst = out.data() + size_t{i} * dim_;
      const uint32_t slot = FindOrCreateLocked(stripe, key, now);
      if (slot != StripeRows::kNoSlot) {
        CopyRow<width()>(dst, stripe.rows.row(slot), dim_);
        if (with_versions) row_versions[i] = stripe.rows.version(slot);
      } else {
        initializer_.FillRow(key, absl::MakeSpan(dst, dim_));
        if (with_versions) row_versions[i] = 0;
      }
    });
  });
}

void SparseTable::Apply(const GradientPart& part, float lr_factor,
                        uint32_t /*worker*/) {
  const int64_t now = NowNanos();
  RowTauSink* sink = part.row_tau;
  std::vector<uint8_t> counted(sink != nullptr ? part.keys.size() : 0);
  std::vector<RowTauSummary> summaries(sink != nullptr ? kStripes : 0);
  // A stripe's rows are found first and updated in one ApplyRows call (no
  // virtual call per row). Creating a row may evict one or move the arena,
  // so the rows found so far are updated before any creation: each update
  // still lands on the row its key had when it was looked up. Stripes may
  // run at once: each has its own batch and summary, and writes only its
  // keys' places of `counted` and the sink's taus.
  ForEachStripeGroup(part.keys, Spread::kPoolWhenLarge,
                     [&](int s, Stripe& stripe,
                         absl::Span<const uint32_t> positions,
                         absl::Span<const uint64_t> group_keys)
                         ABSL_NO_THREAD_SAFETY_ANALYSIS {
    std::vector<uint32_t> slots;
    std::vector<uint32_t> grad_rows;
    slots.reserve(positions.size());
    grad_rows.reserve(positions.size());
    auto flush = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      if (slots.empty()) return;
      RowBatch batch;
      batch.arena = stripe.rows.row(0);
      batch.row_stride = row_stride_;
      batch.slots = slots.data();
      batch.grads = part.values.data();
      batch.grad_rows = grad_rows.data();
      batch.count = slots.size();
      batch.dim = dim_;
      optimizer_->ApplyRows(batch, lr_factor);
      slots.clear();
      grad_rows.clear();
    };
    for (size_t j = 0; j < positions.size(); ++j) {
      if (j + kPrefetchAhead < positions.size()) {
        stripe.rows.Prefetch(group_keys[j + kPrefetchAhead]);
      }
      const uint32_t i = positions[j];
      uint32_t slot = stripe.rows.Find(group_keys[j], now);
      if (slot == StripeRows::kNoSlot) {
        flush();
        slot = CreateLocked(stripe, group_keys[j], now);
      }
      if (sink != nullptr) {
        MeasureOne(*sink, summaries[s], i,
                   slot == StripeRows::kNoSlot
                       ? std::nullopt
                       : std::optional<uint64_t>(stripe.rows.version(slot)),
                   counted.data());
      }
      if (slot == StripeRows::kNoSlot) continue;  // not admitted: dropped
      ++stripe.rows.version(slot);
      stripe.rows.MarkChanged(slot);
      slots.push_back(slot);
      grad_rows.push_back(i);
    }
    flush();
  });
  if (sink != nullptr) {
    AddSummaries(summaries, sink);
    sink->measured = true;
    RecordRowTau(*sink, counted);
  }
}

void SparseTable::MeasureRowTau(absl::Span<const uint64_t> keys,
                                RowTauSink* sink) {
  const int64_t now = NowNanos();
  std::vector<uint8_t> counted(keys.size());
  std::vector<RowTauSummary> summaries(kStripes);
  ForEachKeyByStripe(keys, Spread::kPoolWhenLarge,
                     [&](int s, Stripe& stripe, uint32_t i, uint64_t key)
                         ABSL_NO_THREAD_SAFETY_ANALYSIS {
    MeasureOne(*sink, summaries[s], i, stripe.rows.PeekVersion(key, now),
               counted.data());
  });
  AddSummaries(summaries, sink);
  sink->measured = true;
  RecordRowTau(*sink, counted);
}

void SparseTable::RecordRowTau(const RowTauSink& sink,
                               absl::Span<const uint8_t> counted) {
  absl::MutexLock lock(&tau_mu_);
  for (size_t i = 0; i < counted.size(); ++i) {
    if (counted[i]) row_tau_.Add(static_cast<double>(sink.taus[i]));
  }
}

void SparseTable::ExpireIdle() {
  if (ttl_ns_ == 0) return;
  const int64_t now = NowNanos();
  const std::shared_ptr<CutState> cut = PendingCut();
  for (int s = 0; s < kStripes; ++s) {
    Stripe& stripe = *stripes_[s];
    absl::MutexLock lock(&stripe.mu);
    if (cut) CopyStripeLocked(*cut, s);
    stripe.rows.ExpireIdle(now, kMaxExpiredPerStripePerCall);
  }
}

namespace {

// Per-key sums of row gradients.
class SparseStepBuffer final : public StepBuffer {
 public:
  explicit SparseStepBuffer(uint32_t dim) : dim_(dim) {}
  void Add(const GradientPart& part, float scale) override {
    for (size_t i = 0; i < part.keys.size(); ++i) {
      float* dst = RowFor(part.keys[i]);
      const float* src = part.values.data() + i * dim_;
      for (uint32_t j = 0; j < dim_; ++j) dst[j] += scale * src[j];
    }
  }
  void AddBuffer(const StepBuffer& other, float scale) override {
    const auto& o = static_cast<const SparseStepBuffer&>(other);
    for (size_t r = 0; r < o.keys_.size(); ++r) {
      float* dst = RowFor(o.keys_[r]);
      const float* src = o.sums_.data() + r * dim_;
      for (uint32_t j = 0; j < dim_; ++j) dst[j] += scale * src[j];
    }
  }
  bool empty() const override { return keys_.empty(); }
  void Clear() override {
    index_.clear();
    keys_.clear();
    sums_.clear();
  }
  bool AllFinite() const override { return taups::AllFinite(sums_); }
  BufferSnapshot Export() const override { return BufferSnapshot{keys_, sums_}; }
  absl::Status Import(const BufferSnapshot& snapshot) override {
    if (snapshot.sums.size() != snapshot.keys.size() * dim_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse step buffer of dim ", dim_, " cannot load ",
          snapshot.sums.size(), " floats for ", snapshot.keys.size(), " keys"));
    }
    Clear();
    for (size_t r = 0; r < snapshot.keys.size(); ++r) {
      float* dst = RowFor(snapshot.keys[r]);
      for (uint32_t j = 0; j < dim_; ++j) dst[j] += snapshot.sums[r * dim_ + j];
    }
    return absl::OkStatus();
  }
  const std::vector<uint64_t>& keys() const { return keys_; }
  const std::vector<float>& sums() const { return sums_; }

 private:
  float* RowFor(uint64_t key) {
    auto [it, inserted] = index_.try_emplace(key, keys_.size());
    if (inserted) {
      keys_.push_back(key);
      sums_.resize(sums_.size() + dim_, 0.0f);
    }
    return sums_.data() + it->second * dim_;
  }
  const uint32_t dim_;
  absl::flat_hash_map<uint64_t, size_t> index_;
  std::vector<uint64_t> keys_;
  std::vector<float> sums_;
};

}  // namespace

std::unique_ptr<StepBuffer> SparseTable::NewBuffer() const {
  return std::make_unique<SparseStepBuffer>(dim_);
}

void SparseTable::ApplyBuffer(const StepBuffer& buffer, float scale,
                              float lr_factor) {
  const auto& b = static_cast<const SparseStepBuffer&>(buffer);
  if (b.empty()) return;
  std::vector<float> mean = b.sums();
  for (float& v : mean) v *= scale;
  GradientPart part;
  part.keys = b.keys();
  part.values = mean;
  Apply(part, lr_factor, 0);
}

bool SparseTable::BufferStaysFinite(const StepBuffer& buffer, float scale,
                                    float lr_factor) const {
  const auto& b = static_cast<const SparseStepBuffer&>(buffer);
  if (b.empty()) return true;
  if (!b.AllFinite()) return false;
  std::vector<float> mean = b.sums();
  for (float& v : mean) v *= scale;
  GradientPart part;
  part.keys = b.keys();
  part.values = mean;
  return UpdateStaysFinite(part, lr_factor, 0);
}

bool SparseTable::UpdateStaysFinite(const GradientPart& part, float lr_factor,
                                    uint32_t /*worker*/) const {
  const float max_abs = part.max_abs >= 0.0f ? part.max_abs : MaxAbs(part.values);
  if (optimizer_->StepAlwaysFinite(max_abs, lr_factor)) return true;
  const int64_t now = NowNanos();
  // Per stripe, the rows the keys have are checked in one RowsStayFinite
  // call, and the keys without a row in a second one, on the rows Apply
  // would create (their initial values and state, built in `fresh`).
  std::vector<uint32_t> slots, grad_rows, fresh_slots, fresh_grad_rows;
  std::vector<float> fresh;
  bool finite = true;
  ForEachStripeGroup(part.keys, Spread::kSerial,
                     [&](int /*s*/, Stripe& stripe,
                         absl::Span<const uint32_t> positions,
                         absl::Span<const uint64_t> group_keys)
                         ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!finite) return;
    slots.clear();
    grad_rows.clear();
    fresh_slots.clear();
    fresh_grad_rows.clear();
    fresh.clear();
    for (size_t j = 0; j < positions.size(); ++j) {
      if (j + kPrefetchAhead < positions.size()) {
        stripe.rows.Prefetch(group_keys[j + kPrefetchAhead]);
      }
      const uint32_t i = positions[j];
      const uint32_t slot = stripe.rows.Peek(group_keys[j], now);
      if (slot != StripeRows::kNoSlot) {
        slots.push_back(slot);
        grad_rows.push_back(i);
        continue;
      }
      const size_t at = fresh.size();
      fresh.resize(at + row_stride_);
      initializer_.FillRow(group_keys[j],
                           absl::MakeSpan(fresh.data() + at, dim_));
      optimizer_->InitState(fresh.data() + at + dim_, dim_);
      fresh_slots.push_back(static_cast<uint32_t>(fresh_grad_rows.size()));
      fresh_grad_rows.push_back(i);
    }
    RowBatch batch;
    batch.row_stride = row_stride_;
    batch.grads = part.values.data();
    batch.dim = dim_;
    if (!slots.empty()) {
      batch.arena = stripe.rows.row(0);
      batch.slots = slots.data();
      batch.grad_rows = grad_rows.data();
      batch.count = slots.size();
      finite = optimizer_->RowsStayFinite(batch, lr_factor, max_abs);
    }
    if (finite && !fresh_slots.empty()) {
      batch.arena = fresh.data();
      batch.slots = fresh_slots.data();
      batch.grad_rows = fresh_grad_rows.data();
      batch.count = fresh_slots.size();
      finite = optimizer_->RowsStayFinite(batch, lr_factor, max_abs);
    }
  });
  return finite;
}

void SparseTable::CopyRowLocked(const Stripe& stripe, uint64_t key,
                                uint32_t slot, TableSnapshot& out) const {
  const size_t width = row_stride_ / dim_ - 1;
  const float* row = stripe.rows.row(slot);
  out.keys.push_back(key);
  out.values.insert(out.values.end(), row, row + dim_);
  out.state.insert(out.state.end(), row + dim_, row + dim_ + dim_ * width);
  out.row_versions.push_back(stripe.rows.version(slot));
}

TableSnapshot SparseTable::Export() const {
  TableSnapshot snapshot;
  for (const auto& stripe : stripes_) {
    absl::MutexLock lock(&stripe->mu);
    stripe->rows.ForEachRow([&](uint64_t key, uint32_t slot)
                                ABSL_NO_THREAD_SAFETY_ANALYSIS {
      CopyRowLocked(*stripe, key, slot, snapshot);
    });
  }
  return snapshot;
}

SparseTable::Changes SparseTable::ExportChanges(uint32_t since, uint32_t cut) {
  Changes changes;
  for (const auto& stripe : stripes_) {
    absl::MutexLock lock(&stripe->mu);
    const bool complete = stripe->rows.CollectChanges(
        since, cut,
        [&](uint64_t key, uint32_t slot) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          CopyRowLocked(*stripe, key, slot, changes.rows);
        },
        &changes.removed);
    changes.complete = changes.complete && complete;
  }
  return changes;
}

absl::Status SparseTable::Import(const TableSnapshot& snapshot) {
  const size_t rows = snapshot.keys.size();
  const size_t width = row_stride_ / dim_ - 1;
  if (snapshot.values.size() != rows * dim_ ||
      snapshot.state.size() != rows * dim_ * width ||
      snapshot.row_versions.size() != rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", config_.name, "': a snapshot of ", rows, " keys, ",
        snapshot.values.size(), " values, ", snapshot.state.size(),
        " state floats and ", snapshot.row_versions.size(),
        " row versions does not fit rows of dim ", dim_));
  }
  if (row_limit_ > 0 && rows > row_limit_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", config_.name, "': the snapshot holds ", rows,
        " rows; this table allows ", row_limit_));
  }
  if (!AllFinite(snapshot.values) || !AllFinite(snapshot.state)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", config_.name, "': the snapshot holds non-finite values"));
  }
  std::vector<std::unique_ptr<Stripe>> stripes;
  for (int s = 0; s < kStripes; ++s) stripes.push_back(NewStripe());
  const int64_t now = NowNanos();
  for (size_t r = 0; r < rows; ++r) {
    Stripe& stripe = *stripes[StripeIndexOf(snapshot.keys[r])];
    absl::MutexLock lock(&stripe.mu);
    if (stripe.rows.Peek(snapshot.keys[r], now) != StripeRows::kNoSlot) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", config_.name, "': key ", snapshot.keys[r],
          " appears twice in the snapshot"));
    }
    const size_t held = stripe.rows.size();
    const uint32_t slot = stripe.rows.CreateAdmitted(snapshot.keys[r], now);
    if (stripe.rows.size() != held + 1) {  // the stripe evicted a restored row
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", config_.name, "': the snapshot holds more rows of key ",
          snapshot.keys[r], "'s stripe than this table keeps per stripe"));
    }
    float* row = stripe.rows.row(slot);
    std::copy_n(snapshot.values.data() + r * dim_, dim_, row);
    std::copy_n(snapshot.state.data() + r * dim_ * width, dim_ * width,
                row + dim_);
    stripe.rows.version(slot) = snapshot.row_versions[r];
  }
  if (const std::shared_ptr<CutState> cut = PendingCut()) CopyAllStripes(*cut);
  absl::MutexLock lock(&stripes_mu_);
  stripes_ = std::move(stripes);
  return absl::OkStatus();
}

struct SparseTable::CutState {
  CutState() : copied(kStripes, 0), rows(kStripes) {}
  std::vector<uint8_t> copied;
  std::vector<TableSnapshot> rows;
  // Set once the cut is finished or let go: requests stop copying into it.
  std::atomic<bool> dropped{false};
};

class SparseTable::Cut final : public TableCut {
 public:
  Cut(const SparseTable* table, std::shared_ptr<CutState> state)
      : table_(table), state_(std::move(state)) {}
  ~Cut() override { state_->dropped = true; }
  size_t blocks() const override { return kStripes; }
  void CopyBlock(size_t b) override {
    absl::ReaderMutexLock stripes(&table_->stripes_mu_);
    Stripe& stripe = *table_->stripes_[b];
    absl::MutexLock lock(&stripe.mu);
    table_->CopyStripeLocked(*state_, static_cast<int>(b));
  }
  TableSnapshot Finish() override {
    state_->dropped = true;
    TableSnapshot out;
    size_t rows = 0, values = 0, state = 0;
    for (const TableSnapshot& s : state_->rows) {
      rows += s.keys.size();
      values += s.values.size();
      state += s.state.size();
    }
    out.keys.reserve(rows);
    out.row_versions.reserve(rows);
    out.values.reserve(values);
    out.state.reserve(state);
    for (TableSnapshot& s : state_->rows) {
      out.keys.insert(out.keys.end(), s.keys.begin(), s.keys.end());
      out.row_versions.insert(out.row_versions.end(), s.row_versions.begin(),
                              s.row_versions.end());
      out.values.insert(out.values.end(), s.values.begin(), s.values.end());
      out.state.insert(out.state.end(), s.state.begin(), s.state.end());
      s = TableSnapshot();  // freed once appended: the copy is held once
    }
    return out;
  }

 private:
  const SparseTable* const table_;
  const std::shared_ptr<CutState> state_;
};

std::shared_ptr<SparseTable::CutState> SparseTable::PendingCut() const {
  absl::MutexLock lock(&cut_mu_);
  return cut_;
}

void SparseTable::CopyStripeLocked(CutState& cut, int s) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (cut.copied[s] || cut.dropped) return;
  const Stripe& stripe = *stripes_[s];
  TableSnapshot& out = cut.rows[s];
  stripe.rows.ForEachRow([&](uint64_t key, uint32_t slot)
                             ABSL_NO_THREAD_SAFETY_ANALYSIS {
    CopyRowLocked(stripe, key, slot, out);
  });
  cut.copied[s] = 1;
}

void SparseTable::CopyAllStripes(CutState& cut) const {
  for (int s = 0; s < kStripes; ++s) {
    Stripe& stripe = *stripes_[s];
    absl::MutexLock lock(&stripe.mu);
    CopyStripeLocked(cut, s);
  }
}

std::unique_ptr<TableCut> SparseTable::BeginCut() {
  auto state = std::make_shared<CutState>();
  std::shared_ptr<CutState> earlier;
  {
    absl::MutexLock lock(&cut_mu_);
    earlier = std::exchange(cut_, state);
  }
  if (earlier) CopyAllStripes(*earlier);  // it stays exact
  return std::make_unique<Cut>(this, std::move(state));
}

}  // namespace taups
