#include "worker/trainer/ctr_batch_feed.h"

#include <utility>

#include "common/status_macros.h"
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
      config_(std::move(config)) {}

CtrBatchFeed::~CtrBatchFeed() {
  if (prefetch_.valid()) prefetch_.wait();
}

absl::Status CtrBatchFeed::Fill(CtrBatch& slot) {
  sampler_.NextBatch(config_.batch, slot.indices);
  slot.examples.Clear();
  generator_.AppendIndices(CtrSplit::kTrain, slot.indices, slot.examples);
  CtrEmbeddingKeys(slot.examples, 0, config_.batch, slot.keys);
  slot.rows.resize(slot.keys.size() * static_cast<size_t>(config_.embedding_dim));
  ASSIGN_OR_RETURN(slot.pull,
                   client_.PullSparse(config_.table, slot.keys,
                                      absl::MakeSpan(slot.rows),
                                      config_.pull_options));
  return absl::OkStatus();
}

absl::StatusOr<const CtrBatch*> CtrBatchFeed::Next() {
  const int next = 1 - current_;
  if (prefetch_.valid()) {
    RETURN_IF_ERROR(prefetch_.get());
  } else {
    ++started_;
    RETURN_IF_ERROR(Fill(slots_[next]));
  }
  current_ = next;
  if (config_.start == PrefetchStart::kWithCompute) StartPrefetch();
  return &slots_[current_];
}

void CtrBatchFeed::StepDone() {
  if (config_.start == PrefetchStart::kAfterStepDone) StartPrefetch();
}

void CtrBatchFeed::StartPrefetch() {
  if (prefetch_.valid() || started_ >= config_.steps) return;
  ++started_;
  CtrBatch* slot = &slots_[1 - current_];
  prefetch_ = std::async(std::launch::async, [this, slot] { return Fill(*slot); });
}

}  // namespace taups::trainer
