#include "server/dense_table.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/float_pieces.h"
#include "common/initializer.h"
#include "common/vector_math.h"

namespace taups {
namespace {

// dst[i] += scale * src[i] (separate arrays: the loop vectorises).
void AddScaled(float* __restrict dst, const float* __restrict src, size_t n,
               float scale) {
  for (size_t i = 0; i < n; ++i) dst[i] += scale * src[i];
}

// DC-ASGD's gradient: out[i] = g[i] + lambda * g[i]^2 * (w[i] - pulled[i]),
// w being the values now and `pulled` what the pusher last pulled.
void Compensate(const float* g, const float* w, const float* pulled, size_t n,
                float lambda, std::vector<float>* out) {
  out->resize(n);
  float* dst = out->data();
  for (size_t i = 0; i < n; ++i) {
    dst[i] = g[i] + lambda * g[i] * g[i] * (w[i] - pulled[i]);
  }
}

// Sum of gradients over this shard's range.
class DenseStepBuffer final : public StepBuffer {
 public:
  explicit DenseStepBuffer(Range range) : range_(range), sum_(range.size()) {}
  void Add(const GradientPart& part, float scale) override {
    std::vector<float> gathered;  // only for a part left in pieces
    const absl::Span<const float> g = part.Contiguous(&gathered);
    AddScaled(sum_.data() + (part.offset - range_.begin), g.data(), g.size(),
              scale);
    touched_ = true;
  }
  void AddBuffer(const StepBuffer& other, float scale) override {
    const auto& o = static_cast<const DenseStepBuffer&>(other);
    if (!o.touched_) return;
    AddScaled(sum_.data(), o.sum_.data(), sum_.size(), scale);
    touched_ = true;
  }
  bool empty() const override { return !touched_; }
  void Clear() override {
    if (touched_) std::fill(sum_.begin(), sum_.end(), 0.0f);
    touched_ = false;
  }
  bool AllFinite() const override { return taups::AllFinite(sum_); }
  BufferSnapshot Export() const override {
    BufferSnapshot snapshot;
    if (touched_) snapshot.sums = sum_;
    return snapshot;
  }
  absl::Status Import(const BufferSnapshot& snapshot) override {
    if (!snapshot.keys.empty() ||
        (!snapshot.sums.empty() && snapshot.sums.size() != sum_.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dense step buffer of ", sum_.size(), " floats cannot load ",
          snapshot.sums.size(), " floats and ", snapshot.keys.size(), " keys"));
    }
    if (snapshot.sums.empty()) {
      Clear();
    } else {
      sum_ = snapshot.sums;
      touched_ = true;
    }
    return absl::OkStatus();
  }
  const std::vector<float>& sum() const { return sum_; }

 private:
  const Range range_;
  std::vector<float> sum_;
  bool touched_ = false;
};

}  // namespace

// The table holds one reference while the block is its own; each answer
// the block is lent to holds one more (BlockPins).
class DenseTable::BlockValues {
 public:
  explicit BlockValues(size_t n) : size_(n), data_(new float[n]) {}
  BlockValues(const BlockValues&) = delete;
  BlockValues& operator=(const BlockValues&) = delete;

  absl::Span<float> floats() { return {data_.get(), size_}; }
  absl::Span<const float> floats() const { return {data_.get(), size_}; }

  // Only under the block's lock (so no answer can take a reference while
  // the table decides whether it may write).
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Acquire: once no answer holds the block, whatever the answers' sends
  // read of it happened before the table's next write.
  bool lent() const { return refs_.load(std::memory_order_acquire) > 1; }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (displaced_) CountDisplacedLentBytes(-bytes());
      delete this;
    }
  }
  // The table's copy of this block to write to from now on; this one is
  // left to the answers that hold it (the table's reference dropped).
  BlockValues* Displace() {
    auto* copy = new BlockValues(size_);
    std::memcpy(copy->data_.get(), data_.get(), bytes());
    displaced_ = true;  // published by Unref's release
    CountDisplacedLentBytes(bytes());
    Unref();
    return copy;
  }

 private:
  ~BlockValues() = default;
  int64_t bytes() const { return static_cast<int64_t>(size_ * sizeof(float)); }

  const size_t size_;
  const std::unique_ptr<float[]> data_;  // uninitialized until filled
  std::atomic<uint32_t> refs_{1};
  bool displaced_ = false;
};

// What a LentValues' hold owns: one reference to each lent block.
class DenseTable::BlockPins {
 public:
  BlockPins() = default;
  BlockPins(const BlockPins&) = delete;
  BlockPins& operator=(const BlockPins&) = delete;
  ~BlockPins() {
    for (BlockValues* values : blocks_) values->Unref();
  }
  void Add(BlockValues* values) {  // under the block's lock
    values->Ref();
    blocks_.push_back(values);
  }

 private:
  std::vector<BlockValues*> blocks_;
};

DenseTable::DenseTable(const TableConfig& config, Range range)
    : config_(config),
      range_(range),
      optimizer_(MakeOptimizer(config.optimizer)),
      state_width_(optimizer_->state_width()),
      blocks_(new Block[(range.size() + kBlockSize - 1) / kBlockSize + 1]),
      state_(range.size() * state_width_) {
  const Initializer initializer(config.initializer, config.name);
  for (size_t b = 0; b < block_count(); ++b) {
    absl::MutexLock lock(&blocks_[b].mu);
    blocks_[b].values = new BlockValues(block_length(b));
    initializer.FillDense(range.begin + b * kBlockSize,
                          blocks_[b].values->floats());
  }
  optimizer_->InitState(state_.data(), range.size());
  SetStaleness(config.staleness);
}

DenseTable::~DenseTable() {
  for (size_t b = 0; b < block_count(); ++b) {
    absl::MutexLock lock(&blocks_[b].mu);
    blocks_[b].values->Unref();  // answers may still hold it
  }
}

const float* DenseTable::ReadLocked(uint64_t local) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return blocks_[local / kBlockSize].values->floats().data() +
         local % kBlockSize;
}

float* DenseTable::WriteLocked(uint64_t local) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BlockValues*& values = blocks_[local / kBlockSize].values;
  if (values->lent()) {
    // New answers cannot take it meanwhile (they lend under this lock);
    // the ones that hold it keep it, unchanged, until they let go.
    values = values->Displace();
    lent_block_copies_.fetch_add(1, std::memory_order_relaxed);
  }
  return values->floats().data() + local % kBlockSize;
}

void DenseTable::SetStaleness(const StalenessConfig& staleness) {
  dc_lambda_ = staleness.delay_compensation_lambda;
  delay_compensation_ = staleness.delay_compensation;
}

template <typename Fn>
void DenseTable::ForEachBlock(uint64_t begin, uint64_t end, Fn&& fn) const {
  while (begin < end) {
    const uint64_t block = begin / kBlockSize;
    const uint64_t stop = std::min(end, (block + 1) * kBlockSize);
    absl::MutexLock lock(&blocks_[block].mu);
    fn(begin, stop);
    begin = stop;
  }
}

void DenseTable::SetTaskPool(TaskPool* pool, uint64_t min_parallel,
                              uint64_t chunk) {
  pool_set_ = true;
  pool_ = pool;
  parallel_min_ = std::max<uint64_t>(min_parallel, 1);
  chunk_ = std::max<uint64_t>(chunk, 1);
}

void DenseTable::ForEachRun(
    uint64_t begin, uint64_t n,
    absl::FunctionRef<void(uint64_t, uint64_t)> fn) const {
  const uint64_t end = begin + n;
  TaskPool* pool = nullptr;
  if (n >= parallel_min_ && n > chunk_) {
    pool = pool_set_ ? pool_ : &TaskPool::Shared();
  }
  if (pool == nullptr || pool->threads() < 2) {
    fn(begin, end);
    return;
  }
  // Runs end on multiples of chunk_ (of the part's local offsets), so with
  // the default chunk every run covers whole lock blocks and no two runs
  // share a block's lock.
  const uint64_t first_end = std::min(end, (begin / chunk_ + 1) * chunk_);
  const uint64_t runs = 1 + (end - first_end + chunk_ - 1) / chunk_;
  pool->Run(runs, [&](size_t run) {
    const uint64_t b = run == 0 ? begin : first_end + (run - 1) * chunk_;
    const uint64_t e = run == 0 ? first_end : std::min(end, b + chunk_);
    fn(b, e);
  });
}

void DenseTable::Pull(uint64_t offset, absl::Span<float> out, uint32_t worker) {
  const uint64_t local = offset - range_.begin;
  float* backup = BackupToRecord(worker);
  ForEachRun(local, out.size(), [&](uint64_t run_begin, uint64_t run_end) {
    ForEachBlock(run_begin, run_end, [&](uint64_t b, uint64_t e) {
      const float* values = ReadLocked(b);
      std::memcpy(out.data() + (b - local), values, (e - b) * sizeof(float));
      if (backup != nullptr) {
        std::memcpy(backup + b, values, (e - b) * sizeof(float));
      }
    });
  });
}

void DenseTable::Lend(uint64_t offset, uint64_t count, uint32_t worker,
                      LentValues* out) {
  out->Clear();
  const uint64_t local = offset - range_.begin;
  float* backup = BackupToRecord(worker);
  auto pins = std::make_shared<BlockPins>();
  out->pieces.reserve((count + kBlockSize - 1) / kBlockSize + 1);
  ForEachBlock(local, local + count, [&](uint64_t b, uint64_t e) {
    pins->Add(blocks_[b / kBlockSize].values);
    const float* values = ReadLocked(b);
    out->pieces.emplace_back(values, e - b);
    if (backup != nullptr) {
      std::memcpy(backup + b, values, (e - b) * sizeof(float));
    }
  });
  out->hold = std::move(pins);
}

DenseTable::LocalGradient DenseTable::LocalOf(const GradientPart& part,
                                              uint64_t local) {
  LocalGradient gradient;
  gradient.local = local;
  gradient.size = part.size();
  gradient.pieces = part.pieces;
  if (part.pieces == nullptr) gradient.floats = part.values.data();
  return gradient;
}

const float* DenseTable::FloatsFor(const LocalGradient& gradient, uint64_t b,
                                   uint64_t e, std::vector<float>* scratch) {
  if (gradient.pieces == nullptr) return gradient.floats + (b - gradient.local);
  scratch->resize(e - b);
  gradient.pieces->CopyTo(b - gradient.local, e - gradient.local,
                          scratch->data());
  return scratch->data();
}

void DenseTable::ApplyLocal(const LocalGradient& gradient, float lr_factor,
                            const float* backup) {
  const float lambda = dc_lambda_;
  const std::shared_ptr<CutState> cut = PendingCut();
  ForEachRun(gradient.local, gradient.size,
             [&](uint64_t run_begin, uint64_t run_end) {
    // One of each per run: runs are concurrent.
    std::vector<float> compensated, gathered;
    ForEachBlock(run_begin, run_end, [&](uint64_t b, uint64_t e) {
      if (cut) CopyBlockLocked(*cut, b / kBlockSize);
      float* values = WriteLocked(b);
      float* state = state_.data() + b * state_width_;
      if (gradient.pieces != nullptr && backup == nullptr) {
        // Straight from the received bytes, run by run (the same bits as
        // the gathered floats: every rule is element-wise).
        const uint64_t from = b - gradient.local;
        gradient.pieces->ForEachBytes(
            from, e - gradient.local,
            [&](size_t first, const char* bytes, size_t n) {
              const size_t at = first - from;
              optimizer_->ApplyBytes(values + at, state + at * state_width_,
                                     bytes, n, lr_factor);
            });
        return;
      }
      const float* g = FloatsFor(gradient, b, e, &gathered);
      if (backup != nullptr) {
        Compensate(g, values, backup + b, e - b, lambda, &compensated);
        g = compensated.data();
      }
      optimizer_->Apply(values, state, g, e - b, lr_factor);
    });
  });
}

float* DenseTable::BackupToRecord(uint32_t worker) {
  if (!delay_compensation_) return nullptr;
  absl::MutexLock lock(&backup_mu_);
  auto& slot = backups_[worker];
  if (!slot) slot = std::make_unique<std::vector<float>>(range_.size());
  return slot->data();
}

const float* DenseTable::BackupOf(uint32_t worker) const {
  if (!delay_compensation_) return nullptr;
  absl::MutexLock lock(&backup_mu_);
  auto it = backups_.find(worker);
  return it == backups_.end() ? nullptr : it->second->data();
}

void DenseTable::Apply(const GradientPart& part, float lr_factor,
                       uint32_t worker) {
  ApplyLocal(LocalOf(part, part.offset - range_.begin), lr_factor,
             BackupOf(worker));
}

bool DenseTable::LocalStaysFinite(const LocalGradient& gradient, float max_abs,
                                  float lr_factor, const float* backup) const {
  if (backup == nullptr) {
    if (max_abs < 0.0f) {
      max_abs = gradient.pieces != nullptr
                    ? MaxAbsOfPieces(gradient.pieces->pieces())
                    : MaxAbs(absl::MakeConstSpan(gradient.floats, gradient.size));
    }
    if (optimizer_->StepAlwaysFinite(max_abs, lr_factor)) return true;
  }
  const float lambda = dc_lambda_;
  // Cleared by the first run that finds a value that would not be finite;
  // the others then stop early. The answer does not depend on the cut:
  // StaysFinite is exact (a proof, else a trial on copies).
  std::atomic<bool> finite{true};
  ForEachRun(gradient.local, gradient.size,
             [&](uint64_t run_begin, uint64_t run_end) {
    std::vector<float> compensated, gathered;
    ForEachBlock(run_begin, run_end, [&](uint64_t b, uint64_t e) {
      if (!finite.load(std::memory_order_relaxed)) return;
      const float* state = state_.data() + b * state_width_;
      // A proof from the state's bounds needs no gradient floats: a
      // gradient left in pieces is gathered only for a block it misses.
      if (gradient.pieces != nullptr && backup == nullptr &&
          optimizer_->StepFiniteFor(state, e - b, max_abs, lr_factor)) {
        return;
      }
      const float* g = FloatsFor(gradient, b, e, &gathered);
      if (backup != nullptr) {
        Compensate(g, ReadLocked(b), backup + b, e - b, lambda, &compensated);
        if (!AllFinite(compensated)) {
          finite.store(false, std::memory_order_relaxed);
          return;
        }
        g = compensated.data();
      }
      if (!optimizer_->StaysFinite(ReadLocked(b), state, g, e - b, lr_factor,
                                   backup == nullptr ? max_abs : -1.0f)) {
        finite.store(false, std::memory_order_relaxed);
      }
    });
  });
  return finite.load();
}

bool DenseTable::UpdateStaysFinite(const GradientPart& part, float lr_factor,
                                   uint32_t worker) const {
  return LocalStaysFinite(LocalOf(part, part.offset - range_.begin),
                          part.max_abs, lr_factor, BackupOf(worker));
}

bool DenseTable::BufferStaysFinite(const StepBuffer& buffer, float scale,
                                   float lr_factor) const {
  if (buffer.empty()) return true;
  if (!buffer.AllFinite()) return false;
  std::vector<float> mean = static_cast<const DenseStepBuffer&>(buffer).sum();
  for (float& v : mean) v *= scale;
  return LocalStaysFinite(LocalGradient{0, mean.size(), mean.data(), nullptr},
                          -1.0f, lr_factor, nullptr);
}

TableSnapshot DenseTable::Export() const {
  TableSnapshot snapshot;
  snapshot.values.reserve(range_.size());
  for (size_t b = 0; b < block_count(); ++b) {
    absl::MutexLock lock(&blocks_[b].mu);
    const float* values = ReadLocked(b * kBlockSize);
    snapshot.values.insert(snapshot.values.end(), values,
                           values + block_length(b));
  }
  snapshot.state = state_;
  return snapshot;
}

absl::Status DenseTable::Import(const TableSnapshot& snapshot) {
  if (!snapshot.keys.empty() || snapshot.values.size() != range_.size() ||
      snapshot.state.size() != state_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", config_.name, "': a snapshot of ", snapshot.values.size(),
        " values, ", snapshot.state.size(), " state floats and ",
        snapshot.keys.size(), " keys does not fit this part of ",
        range_.size(), " values and ", state_.size(), " state floats"));
  }
  if (!AllFinite(snapshot.values) || !AllFinite(snapshot.state)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", config_.name, "': the snapshot holds non-finite values"));
  }
  const std::shared_ptr<CutState> cut = PendingCut();
  for (size_t b = 0; b < block_count(); ++b) {
    absl::MutexLock lock(&blocks_[b].mu);
    if (cut) CopyBlockLocked(*cut, b);
    const size_t begin = b * kBlockSize;
    std::memcpy(WriteLocked(begin), snapshot.values.data() + begin,
                block_length(b) * sizeof(float));
    // std::copy, not memcpy: a stateless optimizer's state_ has no data
    // pointer at all, and memcpy from or to null is undefined even for 0.
    const size_t state_begin = begin * state_width_;
    std::copy_n(snapshot.state.begin() + state_begin,
                block_length(b) * state_width_, state_.begin() + state_begin);
  }
  return absl::OkStatus();
}

struct DenseTable::CutState {
  explicit CutState(size_t blocks)
      : copied(blocks, 0), values(blocks), state(blocks) {}
  std::vector<uint8_t> copied;
  std::vector<std::vector<float>> values;
  std::vector<std::vector<float>> state;
  // Set once the cut is finished or let go: writers stop copying into it.
  std::atomic<bool> dropped{false};
};

class DenseTable::Cut final : public TableCut {
 public:
  Cut(const DenseTable* table, std::shared_ptr<CutState> state)
      : table_(table), state_(std::move(state)) {}
  ~Cut() override { state_->dropped = true; }
  size_t blocks() const override { return state_->copied.size(); }
  void CopyBlock(size_t b) override {
    absl::MutexLock lock(&table_->blocks_[b].mu);
    table_->CopyBlockLocked(*state_, b);
  }
  TableSnapshot Finish() override {
    state_->dropped = true;
    TableSnapshot snapshot;
    snapshot.values = Join(state_->values);
    snapshot.state = Join(state_->state);
    return snapshot;
  }

 private:
  // The blocks as one vector, each freed once appended, so the copy is
  // held about once, not twice.
  static std::vector<float> Join(std::vector<std::vector<float>>& blocks) {
    size_t total = 0;
    for (const auto& block : blocks) total += block.size();
    std::vector<float> out;
    out.reserve(total);
    for (auto& block : blocks) {
      out.insert(out.end(), block.begin(), block.end());
      std::vector<float>().swap(block);
    }
    return out;
  }

  const DenseTable* const table_;
  const std::shared_ptr<CutState> state_;
};

std::shared_ptr<DenseTable::CutState> DenseTable::PendingCut() const {
  absl::MutexLock lock(&cut_mu_);
  return cut_;
}

void DenseTable::CopyBlockLocked(CutState& cut, size_t b) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (cut.copied[b] || cut.dropped) return;
  const size_t begin = b * kBlockSize;
  const size_t end = begin + block_length(b);
  const float* values = ReadLocked(begin);
  cut.values[b].assign(values, values + (end - begin));
  cut.state[b].assign(state_.begin() + begin * state_width_,
                      state_.begin() + end * state_width_);
  cut.copied[b] = 1;
}

std::unique_ptr<TableCut> DenseTable::BeginCut() {
  auto state = std::make_shared<CutState>(block_count());
  std::shared_ptr<CutState> earlier;
  {
    absl::MutexLock lock(&cut_mu_);
    earlier = std::exchange(cut_, state);
  }
  if (earlier) {  // it stays exact: its missing blocks as they are still
    for (size_t b = 0; b < block_count(); ++b) {
      absl::MutexLock lock(&blocks_[b].mu);
      CopyBlockLocked(*earlier, b);
    }
  }
  return std::make_unique<Cut>(this, std::move(state));
}

std::unique_ptr<StepBuffer> DenseTable::NewBuffer() const {
  return std::make_unique<DenseStepBuffer>(range_);
}

void DenseTable::ApplyBuffer(const StepBuffer& buffer, float scale,
                             float lr_factor) {
  if (buffer.empty()) return;
  std::vector<float> mean = static_cast<const DenseStepBuffer&>(buffer).sum();
  for (float& v : mean) v *= scale;
  ApplyLocal(LocalGradient{0, mean.size(), mean.data(), nullptr}, lr_factor,
             nullptr);
}

}  // namespace taups
