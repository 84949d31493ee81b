#include "worker/trainer/head_tail_row_tau.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "worker/trainer/zipf_sampler.h"

namespace taups::trainer {
namespace {

RowTauGroupStats GroupStats(const Histogram& h) {
  RowTauGroupStats stats;
  stats.count = h.count();
  // The first bucket holds the values <= 0, i.e. τ = 0.
  stats.zero_share =
      h.count() > 0 ? static_cast<double>(h.counts()[0]) / h.count() : 0.0;
  stats.mean = h.mean();
  stats.p50 = h.Percentile(0.5);
  stats.p99 = h.Percentile(0.99);
  stats.max = h.max();
  return stats;
}

std::string DescribeGroup(const char* name, const Histogram& h,
                          const char* unit) {
  return absl::StrFormat("%s mean %.2f p50 %.0f p99 %.0f max %.0f (%d %s)",
                         name, h.mean(), h.Percentile(0.5), h.Percentile(0.99),
                         h.max(), h.count(), unit);
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> HeadRankCutoffs(
    const CtrSchema& schema, double head_min_probability) {
  RETURN_IF_ERROR(schema.Validate());
  if (!(head_min_probability > 0.0 && head_min_probability <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "head id probability threshold must be in (0, 1], got ",
        head_min_probability));
  }
  std::vector<uint32_t> cutoffs;
  cutoffs.reserve(schema.cardinalities.size());
  for (uint32_t cardinality : schema.cardinalities) {
    ASSIGN_OR_RETURN(ZipfSampler zipf,
                     ZipfSampler::Create(cardinality, schema.zipf_exponent));
    // P(rank) falls with the rank: find the first rank below the threshold.
    uint64_t lo = 0, hi = cardinality;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (zipf.Probability(mid) >= head_min_probability) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    cutoffs.push_back(static_cast<uint32_t>(lo));
  }
  return cutoffs;
}

HeadTailRowTau::HeadTailRowTau(std::vector<uint32_t> cutoffs,
                               double head_min_probability)
    : cutoffs_(std::move(cutoffs)),
      head_min_probability_(head_min_probability),
      head_(Histogram::IntegerBounds(kMaxExactRowTau)),
      tail_(Histogram::IntegerBounds(kMaxExactRowTau)),
      table_(Histogram::IntegerBounds(kMaxExactRowTau)) {}

bool HeadTailRowTau::IsHead(uint64_t key) const {
  const EmbeddingKeyParts parts = DecodeEmbeddingKey(key);
  return parts.field < static_cast<int>(cutoffs_.size()) &&
         parts.id < cutoffs_[parts.field];
}

void HeadTailRowTau::Add(absl::Span<const uint64_t> keys,
                         const PushResult& result) {
  for (const ShardPushResult& shard : result.shards) {
    if (shard.touched) table_.Add(static_cast<double>(shard.tau));
  }
  if (result.row_taus.size() != keys.size()) return;  // no per-row τ
  scratch_.clear();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (result.row_taus[i] == kUnknownRowVersion) continue;
    scratch_.emplace_back(keys[i], result.row_taus[i]);
  }
  // Duplicates of a key share their row's τ: keep one of each.
  std::sort(scratch_.begin(), scratch_.end());
  scratch_.erase(std::unique(scratch_.begin(), scratch_.end(),
                             [](const auto& a, const auto& b) {
                               return a.first == b.first;
                             }),
                 scratch_.end());
  for (const auto& [key, tau] : scratch_) {
    (IsHead(key) ? head_ : tail_).Add(static_cast<double>(tau));
  }
}

uint64_t HeadTailRowTau::head_ids() const {
  uint64_t total = 0;
  for (uint32_t cutoff : cutoffs_) total += cutoff;
  return total;
}

RowTauSummary HeadTailRowTau::Summary() const {
  RowTauSummary summary;
  summary.head_min_probability = head_min_probability_;
  summary.head_ids = head_ids();
  summary.head = GroupStats(head_);
  summary.tail = GroupStats(tail_);
  summary.table = GroupStats(table_);
  return summary;
}

std::string HeadTailRowTau::Describe() const {
  return absl::StrCat(DescribeGroup("head", head_, "rows"), ", ",
                      DescribeGroup("tail", tail_, "rows"), "; ",
                      DescribeGroup("table", table_, "shard pushes"));
}

}  // namespace taups::trainer
