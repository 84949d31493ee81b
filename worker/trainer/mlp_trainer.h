// Asynchronous data-parallel training of the Fashion-MNIST MLP (784-128-10,
// see mlp_model.h) against the parameter servers.
//
// The whole model is one dense table (kMlpTableName) with server-side SGD at
// the options' learning rate. Parameters are born on the servers from the
// table's initializer: U(-kMlpInitScale, kMlpInitScale) for every element,
// seeded by --seed. (One scale for all layers keeps init entirely server-side
// with no "write weights" call; with this small network it trains as well as
// per-layer Kaiming scales.)
//
// Inputs are standardised with the training set's pixel mean and stddev.
// The server's SGD rate is constant; with options.lr_decay the worker scales
// each pushed gradient by options.LrDecayFactor(step), i.e. the effective
// rate decays linearly to 5% over the run, so the final model is not left
// bouncing at a high rate.
//
// Each step: pull the whole table, compute the mean gradient of one batch
// from this worker's shard (ShardSampler), push it against the versions it
// was computed from (so the server measures tau), then Clock(). With the
// default async table nothing waits for other workers: updates from all
// workers interleave on the servers.
//
// Thread-compatible: runs on the calling thread.
#ifndef TAUPS_WORKER_TRAINER_MLP_TRAINER_H_
#define TAUPS_WORKER_TRAINER_MLP_TRAINER_H_

#include "absl/status/statusor.h"
#include "taups/client.h"
#include "taups/table_config.h"
#include "worker/trainer/math_backend.h"
#include "worker/trainer/trainer_options.h"
#include "worker/trainer/training_summary.h"

namespace taups::trainer {

inline constexpr char kMlpTableName[] = "fashion_mnist_mlp";
inline constexpr float kMlpInitScale = 0.05f;

// The dense table holding all MLP parameters (identical for every worker
// given the same learning rate and seed).
TableConfig MlpTableConfig(const TrainerOptions& options);

// Loads Fashion-MNIST from options.data_dir, trains options.steps steps and
// evaluates the latest server parameters on the test set. Errors: invalid
// options, missing data files (with a hint), table setup, any RPC failure
// (with the step), or INTERNAL when the loss becomes non-finite.
absl::StatusOr<TrainingSummary> RunMlpTraining(Client& client,
                                               MathBackend& backend,
                                               const TrainerOptions& options);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_MLP_TRAINER_H_
