#include "worker/trainer/ctr_batch_feed.h"

#include <utility>

#include "common/status_macros.h"
#include "spdlog/spdlog.h"
#include "worker/trainer/ctr_evaluation.h"

namespace taups::trainer {

PrefetchStart PrefetchStartFor(bool prefetch, ConsistencyKind kind) {
  if (!prefetch) return PrefetchStart::kOff;
  return kind == ConsistencyKind::kAsync ? PrefetchStart::kWithCompute
                                         : PrefetchStart::kAfterStepDone;
}

std::string_view PrefetchStartName(PrefetchStart start) {
  switch (start) {
    case PrefetchStart::kOff:
      return "off";
    case PrefetchStart::kWithCompute:
      return "with the step before (async)";
    case PrefetchStart::kAfterStepDone:
      return "once the step before is pushed";
  }
  return "?";
}

CtrBatchFeed::CtrBatchFeed(Client& client, ShardSampler& sampler,
                           const CtrDataGenerator& generator, Config config)
    : client_(client),
      sampler_(sampler),
      generator_(generator),
      config_(std::move(config)),
      start_(config_.start) {}

CtrBatchFeed::~CtrBatchFeed() {
  if (prefetch_.valid()) prefetch_.wait();
}

void CtrBatchFeed::SetStart(PrefetchStart start) {
  if (config_.start == PrefetchStart::kOff) return;  // prefetch stays off
  const PrefetchStart before = start_.exchange(start);
  if (before == start) return;
  start_changes_.fetch_add(1);
  spdlog::info("embedding prefetch of table '{}' now {} (was {})",
               config_.table, PrefetchStartName(start),
               PrefetchStartName(before));
}

void CtrBatchFeed::MaybeCheckPolicy() {
  if (config_.start == PrefetchStart::kOff || config_.policy_check_every <= 0 ||
      pulls_ % config_.policy_check_every != 0 || pulls_ == 0) {
    return;
  }
  absl::StatusOr<TableConfig> table = client_.OpenTable(config_.table);
  // Shards that disagree are in mid-switch: bound the reads until they agree.
  SetStart(table.ok() ? PrefetchStartFor(true, table->consistency.kind)
                      : PrefetchStart::kAfterStepDone);
}

absl::Status CtrBatchFeed::Pull(CtrBatch& slot) {
  MaybeCheckPolicy();
  ++pulls_;
  slot.rows.resize(slot.keys.size() * static_cast<size_t>(config_.embedding_dim));
  ASSIGN_OR_RETURN(slot.pull,
                   client_.PullSparse(config_.table, slot.keys,
                                      absl::MakeSpan(slot.rows),
                                      config_.pull_options));
  // Only shards that gather steps (sync, semi_sync) answer with one.
  if (slot.pull.step > 0) SetStart(PrefetchStart::kAfterStepDone);
  return absl::OkStatus();
}

absl::Status CtrBatchFeed::Fill(CtrBatch& slot, bool early) {
  sampler_.NextBatch(config_.batch, slot.indices);
  slot.examples.Clear();
  generator_.AppendIndices(CtrSplit::kTrain, slot.indices, slot.examples);
  CtrEmbeddingKeys(slot.examples, 0, config_.batch, slot.keys);
  slot.early = early;
  return Pull(slot);
}

absl::StatusOr<const CtrBatch*> CtrBatchFeed::Next() {
  const int next = 1 - current_;
  CtrBatch& slot = slots_[next];
  if (prefetch_.valid()) {
    RETURN_IF_ERROR(prefetch_.get());
    if (slot.early && start_.load() != PrefetchStart::kWithCompute) {
      // Read with the step before, but the table now bounds reads by
      // steps: read them again where this step may (its clock is set now).
      ++repulls_;
      slot.early = false;
      RETURN_IF_ERROR(Pull(slot));
    }
  } else {
    ++started_;
    RETURN_IF_ERROR(Fill(slot, /*early=*/false));
  }
  current_ = next;
  if (start_.load() == PrefetchStart::kWithCompute) StartPrefetch(/*early=*/true);
  return &slots_[current_];
}

void CtrBatchFeed::StepDone() {
  if (start_.load() == PrefetchStart::kAfterStepDone) {
    StartPrefetch(/*early=*/false);
  }
}

void CtrBatchFeed::StartPrefetch(bool early) {
  if (prefetch_.valid() || started_ >= config_.steps) return;
  ++started_;
  CtrBatch* slot = &slots_[1 - current_];
  prefetch_ = std::async(std::launch::async,
                         [this, slot, early] { return Fill(*slot, early); });
}

}  // namespace taups::trainer
