// The parameter storage of one table on one shard, as the consistency
// controller sees it: apply a gradient, or gather gradients into a step
// buffer and apply the buffer once.
//
// Implementations (DenseTable, SparseTable) are thread-safe with their own
// fine-grained locks; callers validate requests before calling.
#ifndef TAUPS_SERVER_TABLE_H_
#define TAUPS_SERVER_TABLE_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/float_pieces.h"
#include "server/push_types.h"
#include "taups/table_config.h"

namespace taups {

// Where a sparse table writes the per-row tau of a push it applies (see
// RowTauSummary): `base_versions` and `taus` hold one entry per key.
struct RowTauSink {
  absl::Span<const uint64_t> base_versions;
  absl::Span<uint64_t> taus;  // out
  RowTauSummary summary;      // out
  bool measured = false;      // set once taus and summary are filled
};

// One piece of a gradient. Dense: `values` for elements [offset, offset +
// values.size()), or, with `pieces` set, the floats of `pieces` (a raw
// gradient left in the buffers it was received in) and `values` empty.
// Sparse: `values` holds keys.size() rows of `dim` floats; with `row_tau`
// set, Apply measures each row's tau into it, atomically with the update
// (step buffers ignore it).
struct GradientPart {
  uint64_t offset = 0;
  absl::Span<const uint64_t> keys;
  absl::Span<const float> values;
  const FloatPieces* pieces = nullptr;  // dense only; not owned
  RowTauSink* row_tau = nullptr;
  // max |g| over the part's floats when the caller measured it (MaxAbs),
  // else negative.
  float max_abs = -1.0f;

  // Floats in the part.
  size_t size() const {
    return pieces != nullptr ? pieces->floats() : values.size();
  }
  // The part's floats in one array: `values`, or the pieces copied into
  // `scratch` (for the uses that need them together: clipping, step sums,
  // delay compensation, a trial of the step).
  absl::Span<const float> Contiguous(std::vector<float>* scratch) const {
    if (pieces == nullptr) return values;
    CopyInto(scratch);
    return *scratch;
  }
  // Makes `out` a copy of the part's floats, wherever they lie.
  void CopyInto(std::vector<float>* out) const {
    if (pieces == nullptr) {
      out->assign(values.begin(), values.end());
      return;
    }
    out->resize(pieces->floats());
    pieces->CopyTo(0, pieces->floats(), out->data());
  }
};

// The contents of a table part, copied out by Table::Export and loaded by
// Table::Import. Dense: `values` and `state` of the part's range in order
// (state interleaved as the optimizer keeps it), no keys. Sparse: one row per
// key: row i is values[i * dim, (i + 1) * dim), its optimizer state is
// state[i * dim * width, ...) and its update count row_versions[i].
struct TableSnapshot {
  std::vector<uint64_t> keys;
  std::vector<float> values;
  std::vector<float> state;
  std::vector<uint64_t> row_versions;
  bool operator==(const TableSnapshot&) const = default;
};

// The contents of a StepBuffer (a sync step's sum). Dense: `sums` over the
// part's range (empty when nothing was added); sparse: a row per key.
struct BufferSnapshot {
  std::vector<uint64_t> keys;
  std::vector<float> sums;
  bool operator==(const BufferSnapshot&) const = default;
};

// A checkpoint's copy of a table taken block by block (Table::BeginCut):
// the table as it was at the cut, while writers go on. A writer about to
// change a block not copied yet copies it first (copy on write); the
// checkpointer copies the rest with CopyBlock, one block under that block's
// lock at a time, so no writer waits for more than one block's copy. The
// copy holds at most one extra copy of the table's storage.
//
// Thread-safe. CopyBlock may run on several threads at once and only while
// the table lives; the destructor never touches the table (a table dropped
// with a cut pending is fine). Finish is called once, by a thread that ran
// CopyBlock(b) for every b after the cut began (each then took block b's
// lock after whoever copied it, so the copies are visible to it).
class TableCut {
 public:
  virtual ~TableCut() = default;
  virtual size_t blocks() const = 0;
  // Block b into the copy, unless it is there already.
  virtual void CopyBlock(size_t b) = 0;
  // The table as it was at the cut (as Table::Export returned it then).
  virtual TableSnapshot Finish() = 0;
};

// A sum of gradient parts, kept until a step closes. Thread-compatible.
class StepBuffer {
 public:
  virtual ~StepBuffer() = default;
  // this += scale * part
  virtual void Add(const GradientPart& part, float scale) = 0;
  // this += scale * other (same table)
  virtual void AddBuffer(const StepBuffer& other, float scale) = 0;
  virtual bool empty() const = 0;
  virtual void Clear() = 0;
  // Whether every sum is finite.
  virtual bool AllFinite() const = 0;
  virtual BufferSnapshot Export() const = 0;
  // Replaces the contents; INVALID_ARGUMENT if `snapshot` does not fit.
  virtual absl::Status Import(const BufferSnapshot& snapshot) = 0;
};

class Table {
 public:
  virtual ~Table() = default;
  virtual const TableConfig& config() const = 0;
  // Optimizer step with `part` as the gradient, learning rate scaled by
  // lr_factor. `worker` is the pusher (delay compensation reads what it
  // last pulled).
  virtual void Apply(const GradientPart& part, float lr_factor,
                     uint32_t worker) = 0;
  virtual std::unique_ptr<StepBuffer> NewBuffer() const = 0;
  // Optimizer step with scale * buffer as the gradient.
  virtual void ApplyBuffer(const StepBuffer& buffer, float scale,
                           float lr_factor) = 0;
  // The table's staleness settings changed (admin call).
  virtual void SetStaleness(const StalenessConfig& /*staleness*/) {}
  // Time-driven upkeep (a sparse table's ttl expiry); called on every tick.
  virtual void ExpireIdle() {}

  // Whether Apply(part, ...) / ApplyBuffer(buffer, ...) would leave every
  // parameter and optimizer state value finite. Change nothing.
  virtual bool UpdateStaysFinite(const GradientPart& part, float lr_factor,
                                 uint32_t worker) const = 0;
  virtual bool BufferStaysFinite(const StepBuffer& buffer, float scale,
                                 float lr_factor) const = 0;

  // A copy of the storage (values, optimizer state, row versions). The
  // caller keeps writers out while it runs (the partition does).
  virtual TableSnapshot Export() const = 0;
  // Replaces the storage with `snapshot`; INVALID_ARGUMENT (and nothing
  // changed) if it does not fit this table or holds non-finite values.
  virtual absl::Status Import(const TableSnapshot& snapshot) = 0;
  // A cut of the storage as it is now, copied later (see TableCut). The
  // caller keeps writers out while it runs, as for Export. A cut begun
  // while an earlier one of this table is pending first completes the
  // earlier one (so it stays exact). This default copies everything at
  // once (Export) and hands it over whole.
  virtual std::unique_ptr<TableCut> BeginCut();
};

// The default cut: Export now, one block.
class ExportedCut final : public TableCut {
 public:
  explicit ExportedCut(TableSnapshot snapshot) : snapshot_(std::move(snapshot)) {}
  size_t blocks() const override { return 1; }
  void CopyBlock(size_t) override {}
  TableSnapshot Finish() override { return std::move(snapshot_); }

 private:
  TableSnapshot snapshot_;
};

inline std::unique_ptr<TableCut> Table::BeginCut() {
  return std::make_unique<ExportedCut>(Export());
}

}  // namespace taups

#endif  // TAUPS_SERVER_TABLE_H_
