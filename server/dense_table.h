// One shard's part of a dense table: the float range [range.begin, range.end)
// of a flat tensor and its optimizer state.
//
// Thread-safe. The range is cut into fixed blocks, each with its own mutex, so
// pulls and pushes that touch different blocks run in parallel and concurrent
// slices of one large push never wait on each other. A pull sees each block
// atomically; across blocks it may mix in a push that is being applied (the
// usual asynchronous-SGD read).
//
// A large apply, finite check or pull (at least min_parallel elements) is cut
// into runs of `chunk` elements shared by the cores of an TaskPool (the
// process's shared one unless SetTaskPool says otherwise). The caller's
// lock (the partition's) is held throughout, so the order and atomicity of
// pushes are unchanged, and since every rule is element-wise the result is
// the same bits as one serial pass.
//
// Delay compensation (DC-ASGD) keeps, per worker, a copy of what that worker
// last pulled from this shard: memory grows by range.size() floats for every
// worker that pulls a DC table.
//
// Checkpoints cut it block by block (BeginCut, copy on write), so pushes
// never wait for a copy of the whole table.
//
// Each lock block's values live in their own allocation, which a pull may
// lend to its answer instead of copying (Lend, server/lent_values.h): a
// write to a block that an answer still holds first moves the table to a
// fresh copy of the block, so the lent floats never change.
#ifndef TAUPS_SERVER_DENSE_TABLE_H_
#define TAUPS_SERVER_DENSE_TABLE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/shard_map.h"
#include "common/task_pool.h"
#include "server/lent_values.h"
#include "server/optimizer.h"
#include "server/table.h"
#include "taups/table_config.h"

namespace taups {

class DenseTable final : public Table {
 public:
  // Elements per lock block.
  static constexpr uint64_t kBlockSize = 64 * 1024;

  // Below this many elements a call runs on the calling thread alone.
  static constexpr uint64_t kParallelMin = uint64_t{1} << 18;  // 1 MiB

  DenseTable(const TableConfig& config, Range range);
  ~DenseTable() override;

  // Which pool large calls use (null: none, always serial), from how many
  // elements, cut into runs of how many (tests use small figures). Call
  // before the table is shared between threads; `pool` must outlive it.
  void SetTaskPool(TaskPool* pool, uint64_t min_parallel = kParallelMin,
                    uint64_t chunk = kBlockSize);

  const TableConfig& config() const override { return config_; }
  Range range() const { return range_; }

  // Copies [offset, offset + out.size()) (global offsets, inside range()).
  // Remembers the copy for `worker` when the table uses delay compensation.
  void Pull(uint64_t offset, absl::Span<float> out, uint32_t worker);
  // The same values, lent instead of copied: `out` gets one piece per lock
  // block of [offset, offset + count) and a hold that keeps them unchanged
  // (see lent_values.h). Each piece is the block as one moment saw it, as
  // Pull's copy would be. Remembers them for `worker` as Pull does.
  void Lend(uint64_t offset, uint64_t count, uint32_t worker,
            LentValues* out);
  // Block copies made because a write found its block lent (a metric:
  // taups_dense_block_copies_total).
  uint64_t lent_block_copies() const {
    return lent_block_copies_.load(std::memory_order_relaxed);
  }

  void Apply(const GradientPart& part, float lr_factor,
             uint32_t worker) override;
  std::unique_ptr<StepBuffer> NewBuffer() const override;
  void ApplyBuffer(const StepBuffer& buffer, float scale,
                   float lr_factor) override;

  // Delay compensation on/off and its lambda.
  void SetStaleness(const StalenessConfig& staleness) override;

  bool UpdateStaysFinite(const GradientPart& part, float lr_factor,
                         uint32_t worker) const override;
  bool BufferStaysFinite(const StepBuffer& buffer, float scale,
                         float lr_factor) const override;
  // Values and state; the delay-compensation copies of what each worker
  // last pulled are not part of it (a worker pulls again after a restore).
  TableSnapshot Export() const override;
  absl::Status Import(const TableSnapshot& snapshot) override;
  // Copy on write by lock block (kBlockSize elements with their state): a
  // block an Apply, ApplyBuffer or Import is about to change is copied
  // first, under the block's lock, if the pending cut lacks it; so the
  // cut's pause is the allocation of its block table, and a writer waits
  // for at most one block's copy per block it touches.
  std::unique_ptr<TableCut> BeginCut() override;

 private:
  // One block's floats, shared by the table and the answers it lent them
  // to; freed by whichever lets go last.
  class BlockValues;
  class BlockPins;
  struct Block {
    mutable absl::Mutex mu;
    // The block's values now: the pointer and the floats guarded by mu.
    BlockValues* values = nullptr;
  };
  // A pending cut's copy: block b's entries are guarded by blocks_[b].mu.
  struct CutState;
  class Cut;
  size_t block_count() const {
    return (range_.size() + kBlockSize - 1) / kBlockSize;
  }
  size_t block_length(size_t b) const {
    return std::min<uint64_t>(kBlockSize, range_.size() - b * kBlockSize);
  }
  // Local element `local`'s value in its block, whose lock the caller
  // holds: to read, or to write (which first moves the block to a copy of
  // its own when an answer holds it, so that answer's floats stay as lent).
  const float* ReadLocked(uint64_t local) const;
  float* WriteLocked(uint64_t local);
  // The cut writers copy blocks into before changing them (null: none).
  std::shared_ptr<CutState> PendingCut() const;
  // Copies block b into `cut` unless it holds it; blocks_[b].mu held.
  void CopyBlockLocked(CutState& cut, size_t b) const;
  // Calls fn(local_begin, local_end, block) for each block overlapping the
  // local element range [begin, end), holding the block's lock.
  template <typename Fn>
  void ForEachBlock(uint64_t begin, uint64_t end, Fn&& fn) const;
  // Calls fn(begin, end) on runs covering the local range [begin, begin +
  // n): one run on this thread when it is small, else runs of chunk_
  // elements on the pool's cores, concurrently. Returns when all are done.
  void ForEachRun(uint64_t begin, uint64_t n,
                  absl::FunctionRef<void(uint64_t, uint64_t)> fn) const;
  // A gradient for the local elements [local, local + size): in one array
  // (`floats`), or left in the pieces it was received in (`pieces`, whose
  // float 0 is element `local`).
  struct LocalGradient {
    uint64_t local = 0;
    uint64_t size = 0;
    const float* floats = nullptr;
    const FloatPieces* pieces = nullptr;
  };
  static LocalGradient LocalOf(const GradientPart& part, uint64_t local);
  // The gradient's floats for local elements [b, e) in one array: in place,
  // or copied from the pieces into `scratch`.
  static const float* FloatsFor(const LocalGradient& gradient, uint64_t b,
                                uint64_t e, std::vector<float>* scratch);
  void ApplyLocal(const LocalGradient& gradient, float lr_factor,
                  const float* backup);
  bool LocalStaysFinite(const LocalGradient& gradient, float max_abs,
                        float lr_factor, const float* backup) const;
  // What `worker` last pulled, when the table uses delay compensation.
  const float* BackupOf(uint32_t worker) const;
  // Where a pull by `worker` records what it read (made on its first
  // pull), or null without delay compensation.
  float* BackupToRecord(uint32_t worker);

  TableConfig config_;
  const Range range_;
  const std::unique_ptr<Optimizer> optimizer_;
  const int state_width_;
  bool pool_set_ = false;  // false: TaskPool::Shared(), made on first use
  TaskPool* pool_ = nullptr;
  uint64_t parallel_min_ = kParallelMin;
  uint64_t chunk_ = kBlockSize;
  std::unique_ptr<Block[]> blocks_;
  // Local element i (global range_.begin + i) is value i % kBlockSize of
  // blocks_[i / kBlockSize].values, guarded by that block's mu, as is
  // state_[i * state_width_ + k].
  std::vector<float> state_;
  std::atomic<uint64_t> lent_block_copies_{0};

  mutable absl::Mutex backup_mu_;  // guards the map, not the vectors' contents
  // worker -> its last pull (delay compensation only); element i guarded by
  // blocks_[i / kBlockSize].mu like values_.
  absl::flat_hash_map<uint32_t, std::unique_ptr<std::vector<float>>> backups_
      ABSL_GUARDED_BY(backup_mu_);
  mutable absl::Mutex cut_mu_;  // a leaf: guards the pointer only
  std::shared_ptr<CutState> cut_ ABSL_GUARDED_BY(cut_mu_);
  std::atomic<bool> delay_compensation_{false};
  std::atomic<float> dc_lambda_{0.0f};
};

}  // namespace taups

#endif  // TAUPS_SERVER_DENSE_TABLE_H_
