#include "worker/trainer/shard_sampler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/trainer/deterministic_rng.h"

namespace taups::trainer {

absl::StatusOr<ShardSampler> ShardSampler::Create(int num_examples,
                                                  uint32_t worker_id,
                                                  uint32_t num_workers,
                                                  uint64_t seed) {
  if (num_workers == 0 || worker_id >= num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker ", worker_id, " of ", num_workers, " is not a valid shard"));
  }
  std::vector<int> owned;
  for (int64_t i = worker_id; i < num_examples; i += num_workers) {
    owned.push_back(static_cast<int>(i));
  }
  if (owned.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker ", worker_id, " of ", num_workers, " owns none of ",
        num_examples, " examples"));
  }
  return ShardSampler(std::move(owned), worker_id, seed);
}

ShardSampler::ShardSampler(std::vector<int> owned, uint32_t worker_id,
                           uint64_t seed)
    : order_(std::move(owned)), worker_id_(worker_id), seed_(seed) {
  Reshuffle();
}

void ShardSampler::Reshuffle() {
  Rng rng(MixSeed(seed_, {worker_id_, static_cast<uint64_t>(epoch_)}));
  Shuffle(order_.data(), order_.size(), rng);
  next_ = 0;
}

void ShardSampler::NextBatch(int batch, std::vector<int>& out) {
  out.clear();
  for (int i = 0; i < batch; ++i) {
    if (next_ == order_.size()) {
      ++epoch_;
      Reshuffle();
    }
    out.push_back(order_[next_++]);
  }
}

}  // namespace taups::trainer
