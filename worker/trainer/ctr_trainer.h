// Asynchronous data-parallel training of the DLRM click model (ctr_model.h)
// on Criteo-like synthetic logs with a planted ground truth (ctr_data.h).
//
// Tables. All 26 fields' embedding rows share ONE sparse table
// (kCtrEmbeddingTableName, dim = embedding_dim, key = EmbeddingKey(field,
// id), which DecodeEmbeddingKey turns back into (field, id); the id is also
// the id's frequency rank), rows born U(-kCtrEmbeddingInitScale, +). Both
// MLPs live in one dense table (kCtrDenseTableName, U(-kCtrDenseInitScale,
// +)). Both tables use server-side Adagrad at the options' learning rate,
// which suits the very uneven update frequency of Zipf-distributed ids; the
// accumulator starts small (kCtrAdagradInitialAccumulator) so a rare id's
// first updates are not damped (the pushed gradients are batch means).
// options.compression applies to the dense table as given and to the
// embedding table without error feedback and accumulation (dense-only
// features); with accumulation the clock moves once per dense push sent.
//
// Data. The planted model and every example are fixed by --seed (the same
// on every worker). The training set is examples [0, ctr_examples) of the
// train split; worker w of W visits its shard (i % W == w) once per epoch in
// an order reshuffled every epoch. The eval set is examples [0, n) of the
// eval split, n = eval_examples (default kCtrDefaultTestExamples), the same
// for every worker. Like real CTR models, the DLRM overfits after an epoch or
// two: the rows of rare ids memorise their few examples, and when an epoch
// starts on examples seen once more, the eval log-loss jumps (measured, 4
// workers over 1M examples: 0.486, 0.484, 0.494 at the ends of epochs 1-3,
// 0.541 70 steps into epoch 4).
//
// Each step: pull the dense table while the batch's embedding rows arrive
// (drawn and pulled by a CtrBatchFeed: at the step's start, or with
// options.prefetch ahead of it, as early as the policy allows; see
// ctr_batch_feed.h), compute the mean log-loss gradient, push the dense
// gradient with PushDense and the per-lookup embedding gradients with
// PushSparse (the client sums duplicate keys), then Clock(). The model is evaluated on the
// eval set every eval_every steps, whenever this worker finishes an epoch
// and after the last step; each evaluation logs a line with log-loss, excess
// log-loss over the planted model and AUC, and goes into the summary.
//
// With options.row_tau the embedding pulls ask for row versions, and the
// per-row τ of every embedding push is split into head and tail ids
// (head_tail_row_tau.h): a line per progress window and "row_tau" in the
// summary.
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
inline constexpr float kCtrDenseInitScale = 0.1f;
inline constexpr float kCtrEmbeddingInitScale = 0.05f;
inline constexpr float kCtrAdagradInitialAccumulator = 1e-3f;
inline constexpr int kCtrDefaultTestExamples = 50000;

// The planted model and data of a run (the Criteo-like defaults, `seed`).
CtrSpec DefaultCtrSpec(uint64_t seed);
// The DLRM shape the options ask for (13 dense features, 26 fields,
// embedding_dim, the MLPs' hidden widths).
CtrModelShape CtrModelShapeFor(const TrainerOptions& options);

TableConfig CtrDenseTableConfig(const TrainerOptions& options);
TableConfig CtrEmbeddingTableConfig(const TrainerOptions& options);

// Trains options.steps steps, evaluating as described above. Errors: invalid
// options, table setup, any RPC failure (with the step), or INTERNAL when
// the loss becomes non-finite.
absl::StatusOr<TrainingSummary> RunCtrTraining(Client& client,
                                               MathBackend& backend,
                                               const TrainerOptions& options);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_TRAINER_H_
