// Per-row staleness of the CTR model's embedding pushes, split by how often
// an id occurs: the τ a frequent ("head") row sees against the τ a rare
// ("tail") row sees (ps_worker --row_tau).
//
// Head and tail. An id is a HEAD id when the chance that one example carries
// it is at least `head_min_probability` (ps_worker's default is
// kDefaultRowTauHeadMinProbability = 1/256: on average at least once per
// 256 examples, the default batch); every other id is a TAIL id. Ids are
// Zipf-distributed and an id is its
// frequency rank within its field, so in field f this is a rank cutoff:
// ids [0, R_f) are head, with R_f the number of the field's ids whose
// probability reaches the threshold (HeadRankCutoffs). A probability cutoff
// rather than a share of each field's traffic keeps every id of a small,
// hot field (3 or 4 ids, each in a quarter of all examples) out of the
// tail, where it would be touched by every batch like a head row.
//
// Counting. Each sparse push whose basis pull carried row versions reports
// one τ per key (client.h, PushResult::row_taus); a key that occurs several
// times in a batch is one row and counts ONCE per push. Keys the pull did not
// cover (kUnknownRowVersion) are skipped. τ is kept in unit buckets up to
// kMaxExactRowTau, so mean, p99 and max are exact up to there (above it p99
// reads as the max). Separately, the table-level τ of the same pushes (one
// value per touched shard) is kept for comparison.
//
// Thread-compatible: owned by the one training thread.
#ifndef TAUPS_WORKER_TRAINER_HEAD_TAIL_ROW_TAU_H_
#define TAUPS_WORKER_TRAINER_HEAD_TAIL_ROW_TAU_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/histogram.h"
#include "taups/client.h"
#include "worker/trainer/ctr_schema.h"
#include "worker/trainer/training_summary.h"

namespace taups::trainer {

inline constexpr int kMaxExactRowTau = 4096;

// R_f for every field of `schema` (see above): how many of the field's
// top-ranked ids have probability >= head_min_probability. INVALID_ARGUMENT
// for an invalid schema or a threshold outside (0, 1].
absl::StatusOr<std::vector<uint32_t>> HeadRankCutoffs(
    const CtrSchema& schema, double head_min_probability);

class HeadTailRowTau {
 public:
  // cutoffs[f] = R_f. Keys of a field beyond cutoffs.size() count as tail.
  HeadTailRowTau(std::vector<uint32_t> cutoffs, double head_min_probability);

  // True when `key` (an EmbeddingKey) is a head id.
  bool IsHead(uint64_t key) const;

  // Accounts one sparse push of `keys` (the caller's keys, duplicates
  // allowed) and its result: `result.row_taus` (empty: no per-row τ, only
  // the table-level τ is counted) and the table-level τ per touched shard.
  void Add(absl::Span<const uint64_t> keys, const PushResult& result);

  const Histogram& head() const { return head_; }
  const Histogram& tail() const { return tail_; }
  const Histogram& table() const { return table_; }
  // Head ids over all fields (sum of the cutoffs).
  uint64_t head_ids() const;

  // The figures for the JSON summary.
  RowTauSummary Summary() const;
  // "head mean 4.10 p50 4 p99 15 max 22 (1200 rows), tail mean ...; table
  // mean ... (n shard pushes)": per-row τ by group, then the table-level τ.
  std::string Describe() const;

 private:
  std::vector<uint32_t> cutoffs_;
  double head_min_probability_;
  Histogram head_, tail_, table_;
  std::vector<std::pair<uint64_t, uint64_t>> scratch_;  // (key, tau)
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_HEAD_TAIL_ROW_TAU_H_
