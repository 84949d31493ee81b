// Mini-batch order for one worker of a data-parallel job: worker w of W owns
// the examples i with i % W == w, visits each once per epoch, in an order
// reshuffled every epoch from (seed, w, epoch).
//
// Thread-compatible: one sampler per training loop.
#ifndef TAUPS_WORKER_TRAINER_SHARD_SAMPLER_H_
#define TAUPS_WORKER_TRAINER_SHARD_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace taups::trainer {

class ShardSampler {
 public:
  // INVALID_ARGUMENT unless worker_id < num_workers and the worker owns at
  // least one of the `num_examples` examples.
  static absl::StatusOr<ShardSampler> Create(int num_examples,
                                             uint32_t worker_id,
                                             uint32_t num_workers,
                                             uint64_t seed);

  // Replaces `out` with the next `batch` example indices; crosses epoch
  // boundaries (reshuffling) as needed, so a batch may span two epochs.
  void NextBatch(int batch, std::vector<int>& out);

  int shard_size() const { return static_cast<int>(order_.size()); }
  int64_t epoch() const { return epoch_; }

 private:
  ShardSampler(std::vector<int> owned, uint32_t worker_id, uint64_t seed);
  void Reshuffle();

  std::vector<int> order_;  // this worker's examples, current epoch's order
  uint32_t worker_id_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  size_t next_ = 0;  // position in order_
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_SHARD_SAMPLER_H_
