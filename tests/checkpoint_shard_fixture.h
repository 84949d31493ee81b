// A realistic shard for checkpoint tests, built from real partitions: a
// dense Adam table (one shard's range of it), a sparse Adagrad table with
// rows, a sync table in the middle of a step (a non-empty step buffer), and
// dedup windows holding OK, refused and error answers. Plus comparisons of
// snapshots that see through a sparse table's row order.
#ifndef TAUPS_TESTS_CHECKPOINT_SHARD_FIXTURE_H_
#define TAUPS_TESTS_CHECKPOINT_SHARD_FIXTURE_H_

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/shard_map.h"
#include "server/checkpoint_format.h"
#include "server/dense_table.h"
#include "server/partition.h"
#include "server/sparse_table.h"

namespace taups::testing {

inline std::unique_ptr<Partition> NewPartition(const TableConfig& config, Range range,
                                               const Clock* clock = RealClock::Get()) {
  std::unique_ptr<Table> table;
  if (config.kind == TableKind::kDense) {
    table = std::make_unique<DenseTable>(config, range);
  } else {
    table = std::make_unique<SparseTable>(config);
  }
  return std::make_unique<Partition>(std::move(table), clock);
}

class CheckpointShard {
 public:
  static constexpr uint64_t kDenseSize = 1001;
  static constexpr uint32_t kDim = 8;

  explicit CheckpointShard(uint64_t seed) : rng_(seed) {
    TableConfig dense = TableConfig::Dense("dense_adam", kDenseSize);
    dense.optimizer.kind = OptimizerKind::kAdam;
    dense.optimizer.learning_rate = 0.01f;
    dense.initializer.kind = InitializerKind::kUniform;
    dense.initializer.scale = 0.1f;
    dense.initializer.seed = 5;
    dense.staleness.reject_above_tau_max = true;
    dense.staleness.tau_max = 2;
    dense.staleness.clip_norm = 10.0f;
    REQUIRE(dense.Validate().ok());
    dense_range_ = DenseShardRange(kDenseSize, 2, 1);
    partitions_.push_back(NewPartition(dense, dense_range_));

    TableConfig sparse = TableConfig::Sparse("emb_adagrad", kDim);
    sparse.optimizer.kind = OptimizerKind::kAdagrad;
    sparse.optimizer.learning_rate = 0.05f;
    sparse.sparse_max_rows = 4096;
    sparse.sparse_eviction = SparseEvictionKind::kLfu;
    REQUIRE(sparse.Validate().ok());
    partitions_.push_back(NewPartition(sparse, Range{}));

    TableConfig sync = TableConfig::Dense("sync_w", 64);
    sync.optimizer.kind = OptimizerKind::kMomentum;
    sync.consistency.kind = ConsistencyKind::kSync;
    sync.consistency.num_workers = 2;
    REQUIRE(sync.Validate().ok());
    partitions_.push_back(NewPartition(sync, Range{0, 64}));
    partitions_[2]->SetLiveWorkers(MembershipView{{0, 1}, {}, 2});
  }

  // More training: async pushes to the dense and sparse tables, one full
  // sync step and half of the next, a stale push refused, an error answer.
  void Train(int rounds) {
    for (int i = 0; i < rounds; ++i) {
      PushDense(*partitions_[0], dense_range_, 0, partitions_[0]->version());
      PushSparse();
    }
    // Refused as too stale (OK, accepted = false, a reason).
    if (partitions_[0]->version() > 3) PushDense(*partitions_[0], dense_range_, 1, 0);
    // An error answer: a base version ahead of the clock.
    PushDense(*partitions_[0], dense_range_, 1, partitions_[0]->version() + 100);
    // A push whose slice the caller refused.
    partitions_[1]->Refuse(PushOrigin{7, 70, ++seq_[7]}, 0, 2,
                           absl::InvalidArgumentError("slice 0 has a NaN"));
    // Sync: both workers push the open step (it closes; worker 0 may have
    // pushed it last time), then worker 0 pushes the next one alone: the
    // step buffer holds its gradient.
    const uint64_t step = partitions_[2]->open_step();
    if (!sync_pending_) PushSync(0, step);
    PushSync(1, step);
    PushSync(0, step + 1);
    sync_pending_ = true;
  }

  ShardCheckpoint Capture(uint64_t incarnation) const {
    ShardCheckpoint out;
    out.header.shard_index = 1;
    out.header.shard_count = 2;
    out.header.incarnation = incarnation;
    out.header.created = absl::FromUnixMicros(1'764'000'000'000'000 + incarnation);
    out.header.sync_step = partitions_[2]->open_step();
    for (const auto& p : partitions_) out.partitions.push_back(CapturePartition(*p));
    return out;
  }

  const std::vector<std::unique_ptr<Partition>>& partitions() const { return partitions_; }

 private:
  void PushDense(Partition& p, Range range, uint32_t worker, uint64_t base) {
    std::vector<float> g(range.size());
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : g) v = normal(rng_);
    PushSlice s;
    s.origin = PushOrigin{worker, 100 + worker, ++seq_[worker]};
    s.header.base_version = base;
    s.part.offset = range.begin;
    s.part.values = g;
    (void)p.Push(s);
  }
  void PushSparse() {
    std::vector<uint64_t> keys;
    std::uniform_int_distribution<uint64_t> key(0, 300);
    for (int k = 0; k < 16; ++k) keys.push_back(key(rng_));
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::vector<float> rows(keys.size() * kDim);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : rows) v = normal(rng_);
    PushSlice s;
    s.origin = PushOrigin{2, 202, ++seq_[2]};
    s.part.keys = keys;
    s.part.values = rows;
    REQUIRE(partitions_[1]->Push(s).ok());
  }
  void PushSync(uint32_t worker, uint64_t step) {
    std::vector<float> g(64);
    for (size_t i = 0; i < g.size(); ++i) g[i] = 0.01f * (worker + 1) * (i + step);
    PushSlice s;
    s.origin = PushOrigin{worker, 500 + worker, ++sync_seq_[worker]};
    s.header.clock = step;
    s.header.base_version = partitions_[2]->version();
    s.part.values = g;
    absl::StatusOr<PushOutcome> answer = partitions_[2]->Push(s);
    INFO(answer.status());
    REQUIRE(answer.ok());
  }

  std::mt19937_64 rng_;
  Range dense_range_;
  std::vector<std::unique_ptr<Partition>> partitions_;
  std::map<uint32_t, uint64_t> seq_;
  std::map<uint32_t, uint64_t> sync_seq_;
  bool sync_pending_ = false;  // worker 0 pushed the open sync step
};

// A sparse snapshot's rows sorted by key (stripes hand them out in any order).
inline TableSnapshot Canonical(const TableSnapshot& t, uint32_t dim) {
  if (t.keys.empty()) return t;
  const size_t width = t.state.size() / t.keys.size();
  std::vector<size_t> order(t.keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return t.keys[a] < t.keys[b]; });
  TableSnapshot out;
  for (size_t i : order) {
    out.keys.push_back(t.keys[i]);
    out.values.insert(out.values.end(), t.values.begin() + i * dim,
                      t.values.begin() + (i + 1) * dim);
    out.state.insert(out.state.end(), t.state.begin() + i * width,
                     t.state.begin() + (i + 1) * width);
    out.row_versions.push_back(t.row_versions[i]);
  }
  return out;
}

inline bool SameAnswer(const PushAnswer& a, const PushAnswer& b) {
  const PushOutcome& x = a.outcome;
  const PushOutcome& y = b.outcome;
  return a.status == b.status && x.accepted == y.accepted && x.tau == y.tau &&
         x.lr_factor == y.lr_factor && x.new_version == y.new_version &&
         x.reject_reason == y.reject_reason && x.downweighted == y.downweighted &&
         x.staged == y.staged && x.duplicate == y.duplicate &&
         std::tie(x.row_tau.rows, x.row_tau.sum, x.row_tau.max, x.row_tau.reborn) ==
             std::tie(y.row_tau.rows, y.row_tau.sum, y.row_tau.max, y.row_tau.reborn) &&
         x.row_taus == y.row_taus;
}

inline bool SameDedup(const DedupSnapshot& a, const DedupSnapshot& b) {
  if (a.uses != b.uses || a.incarnations.size() != b.incarnations.size()) return false;
  auto sorted = [](std::vector<const DedupSnapshot::Incarnation*> v) {
    std::sort(v.begin(), v.end(), [](auto* l, auto* r) {
      return std::tie(l->worker_id, l->worker_incarnation) <
             std::tie(r->worker_id, r->worker_incarnation);
    });
    return v;
  };
  std::vector<const DedupSnapshot::Incarnation*> pa, pb;
  for (const auto& i : a.incarnations) pa.push_back(&i);
  for (const auto& i : b.incarnations) pb.push_back(&i);
  pa = sorted(pa);
  pb = sorted(pb);
  for (size_t i = 0; i < pa.size(); ++i) {
    const auto& x = *pa[i];
    const auto& y = *pb[i];
    if (x.worker_id != y.worker_id || x.worker_incarnation != y.worker_incarnation ||
        x.forgotten_through != y.forgotten_through || x.last_use != y.last_use ||
        x.answers.size() != y.answers.size()) {
      return false;
    }
    for (auto ix = x.answers.begin(), iy = y.answers.begin(); ix != x.answers.end();
         ++ix, ++iy) {
      if (ix->first != iy->first || !SameAnswer(ix->second, iy->second)) return false;
    }
  }
  return true;
}

inline bool SameSnapshot(const PartitionSnapshot& a, const PartitionSnapshot& b,
                         uint32_t dim) {
  return a.applied == b.applied && Canonical(a.table, dim) == Canonical(b.table, dim) &&
         a.policy == b.policy && SameDedup(a.dedup, b.dedup);
}

inline bool SameCheckpoint(const ShardCheckpoint& a, const ShardCheckpoint& b) {
  if (!(a.header == b.header) || a.partitions.size() != b.partitions.size()) return false;
  for (size_t i = 0; i < a.partitions.size(); ++i) {
    const PartitionCheckpoint& x = a.partitions[i];
    const PartitionCheckpoint& y = b.partitions[i];
    if (!(x.config == y.config) || x.range.begin != y.range.begin ||
        x.range.end != y.range.end || !SameSnapshot(x.snapshot, y.snapshot, x.config.dim)) {
      return false;
    }
  }
  return true;
}

}  // namespace taups::testing

#endif  // TAUPS_TESTS_CHECKPOINT_SHARD_FIXTURE_H_
