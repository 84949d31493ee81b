// Asynchronous data-parallel training of the CTR model (ctr_model.h) on
// synthetic clicks with a planted ground truth (ctr_data.h).
//
// Two tables: the embedding rows live in a sparse table
// (kCtrEmbeddingTableName, key = EmbeddingKey(field, id), rows born
// U(-kCtrEmbeddingInitScale, +)), the dense MLP in a dense table
// (kCtrDenseTableName, U(-kCtrDenseInitScale, +)); both use server-side
// Adagrad at the options' learning rate, which suits the very uneven update
// frequency of Zipf-distributed ids. The accumulator starts small
// (kCtrAdagradInitialAccumulator) so a rare id's first updates are not damped
// (the pushed gradients are batch means, hence small).
//
// Data: the planted model is fixed by --seed (all workers share it); each
// worker draws its own endless training stream from (seed, worker_id); the
// test set (eval_examples, default kCtrDefaultTestExamples) is drawn from
// (seed, "test") and is the same for every worker.
//
// Each step: draw a batch, pull its embedding rows and the dense table
// (concurrently), compute the mean log-loss gradient, push the dense gradient
// with PushDense and the per-lookup embedding gradients with PushSparse (the
// client sums duplicate keys), then Clock(). The final evaluation reports the learned
// model's test log-loss and AUC next to the planted model's.
//
// Thread-compatible: runs on the calling thread.
#ifndef TAUPS_WORKER_TRAINER_CTR_TRAINER_H_
#define TAUPS_WORKER_TRAINER_CTR_TRAINER_H_

#include "absl/status/statusor.h"
#include "taups/client.h"
#include "taups/table_config.h"
#include "worker/trainer/ctr_data.h"
#include "worker/trainer/ctr_model.h"
#include "worker/trainer/math_backend.h"
#include "worker/trainer/trainer_options.h"
#include "worker/trainer/training_summary.h"

namespace taups::trainer {

inline constexpr char kCtrDenseTableName[] = "ctr_mlp";
inline constexpr char kCtrEmbeddingTableName[] = "ctr_embeddings";
inline constexpr float kCtrDenseInitScale = 0.2f;
inline constexpr float kCtrEmbeddingInitScale = 0.05f;
inline constexpr float kCtrAdagradInitialAccumulator = 1e-3f;
inline constexpr int kCtrDefaultTestExamples = 50000;

// The data and model shapes used by ps_worker (CtrSpec's defaults: 8 fields,
// cardinalities 100..100000, Zipf 1.1; embedding dim 8, hidden 32).
CtrSpec DefaultCtrSpec(uint64_t seed);
CtrModelShape DefaultCtrModelShape();

TableConfig CtrDenseTableConfig(const TrainerOptions& options);
TableConfig CtrEmbeddingTableConfig(const TrainerOptions& options);

// Trains options.steps steps and evaluates on the common test set. Errors:
// invalid options, table setup, any RPC failure (with the step), or INTERNAL
// when the loss becomes non-finite.
absl::StatusOr<TrainingSummary> RunCtrTraining(Client& client,
                                               MathBackend& backend,
                                               const TrainerOptions& options);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_TRAINER_H_
