#include "worker/trainer/mlp_trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"
#include "worker/trainer/fashion_mnist.h"
#include "worker/trainer/mlp_model.h"
#include "worker/trainer/shard_sampler.h"
#include "worker/trainer/status_context.h"
#include "worker/trainer/table_setup.h"
#include "worker/trainer/training_progress.h"

namespace taups::trainer {
namespace {

absl::StatusOr<ImageDataset> LoadSplit(const std::string& dir,
                                       DatasetSplit split) {
  absl::StatusOr<ImageDataset> set = LoadFashionMnist(dir, split);
  if (absl::IsNotFound(set.status())) {
    return WithContext(set.status(),
                       "Fashion-MNIST not found (install Debian's "
                       "dataset-fashion-mnist or pass --data_dir)");
  }
  return set;
}

}  // namespace

TableConfig MlpTableConfig(const TrainerOptions& options) {
  TableConfig config =
      TableConfig::Dense(kMlpTableName, MlpShape{}.num_params());
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = options.EffectiveLearningRate();
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = kMlpInitScale;
  config.initializer.seed = options.seed;
  config.consistency = options.consistency;
  config.staleness = options.staleness;
  return config;
}

absl::StatusOr<TrainingSummary> RunMlpTraining(Client& client,
                                               MathBackend& backend,
                                               const TrainerOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(ImageDataset train,
                   LoadSplit(options.data_dir, DatasetSplit::kTrain));
  ASSIGN_OR_RETURN(ImageDataset test,
                   LoadSplit(options.data_dir, DatasetSplit::kTest));
  // Standardise with the training set's moments (test set too, same values).
  const PixelMoments moments = ComputePixelMoments(train);
  StandardizePixels(moments, train);
  StandardizePixels(moments, test);
  const TableConfig config = MlpTableConfig(options);
  RETURN_IF_ERROR(EnsureTable(client, config, options.create_tables,
                              options.table_wait));
  RETURN_IF_ERROR(client.SetCompression(config.name, options.compression));
  ASSIGN_OR_RETURN(ShardSampler sampler,
                   ShardSampler::Create(train.num_examples, options.worker_id,
                                        options.num_workers, options.seed));
  spdlog::info("mlp worker {}/{}: {} training examples in its shard, {} test "
               "(pixels standardised: mean {:.4f}, stddev {:.4f}), table '{}' "
               "({} floats, SGD lr {}{}), device {}",
               options.worker_id, options.num_workers, sampler.shard_size(),
               test.num_examples, moments.mean, moments.stddev, config.name,
               config.dense_size, config.optimizer.learning_rate,
               options.lr_decay ? ", decayed linearly by the worker" : "",
               backend.description());

  const MlpShape shape;
  const int batch = options.EffectiveBatchSize();
  const int dim = shape.input;
  Mlp mlp(shape, &backend);
  std::vector<float> params(shape.num_params()), grad(shape.num_params());
  std::vector<float> x(static_cast<size_t>(batch) * dim);
  std::vector<uint8_t> y(batch);
  std::vector<int> indices;
  TrainingProgress progress("mlp", options.worker_id, options.steps,
                            options.log_every, absl::Now());
  progress.AttachMetrics(options.metrics, {config.name});
  progress.AttachClient(&client);
  int64_t window_correct = 0, window_examples = 0;

  for (int64_t step = 0; step < options.steps; ++step) {
    sampler.NextBatch(batch, indices);
    for (int i = 0; i < batch; ++i) {
      std::memcpy(x.data() + static_cast<size_t>(i) * dim,
                  train.features(indices[i]), dim * sizeof(float));
      y[i] = train.labels[indices[i]];
    }
    const std::string where = absl::StrCat("step ", step);
    absl::StatusOr<PullInfo> pulled =
        client.PullDense(config.name, absl::MakeSpan(params));
    if (!pulled.ok()) return WithContext(pulled.status(), where + ": PullDense");
    progress.RecordPull(*pulled);
    const absl::Time compute_start = absl::Now();
    ASSIGN_OR_RETURN(ClassifierStats stats,
                     mlp.LossAndGradient(params, x.data(), y.data(), batch,
                                         absl::MakeSpan(grad)));
    StallForSlowdown(options.slowdown, absl::Now() - compute_start);
    const float decay = options.LrDecayFactor(step);
    if (decay != 1.0f) {
      for (float& g : grad) g *= decay;
    }
    if (!std::isfinite(stats.mean_loss)) {
      return absl::InternalError(absl::StrCat(
          where, ": training loss is ", stats.mean_loss,
          " (diverged; try a lower --lr)"));
    }
    absl::StatusOr<PushResult> pushed =
        client.PushDense(config.name, grad, &*pulled);
    if (!pushed.ok()) return WithContext(pushed.status(), where + ": PushDense");
    if (!pushed->deferred) {  // accumulated gradients count as one step
      client.Clock();  // step done: advances this worker's clock
      progress.RecordPush(*pushed);
    }
    progress.RecordStep(batch, stats.mean_loss);
    window_correct += stats.correct;
    window_examples += stats.examples;
    if (progress.ShouldLog()) {
      progress.LogWindow("train_acc",
                         static_cast<double>(window_correct) / window_examples,
                         absl::Now());
      window_correct = window_examples = 0;
    }
  }
  const absl::Time train_end = absl::Now();

  // Evaluate what the servers hold now (including other workers' updates).
  absl::StatusOr<PullInfo> final_pull =
      client.PullDense(config.name, absl::MakeSpan(params));
  if (!final_pull.ok()) {
    return WithContext(final_pull.status(), "final PullDense");
  }
  const int eval_n =
      options.eval_examples > 0
          ? static_cast<int>(std::min<int64_t>(options.eval_examples,
                                               test.num_examples))
          : test.num_examples;
  ASSIGN_OR_RETURN(ClassifierStats eval,
                   mlp.Evaluate(params, test.pixels.data(), test.labels.data(),
                                eval_n));
  spdlog::info("mlp worker {}: test accuracy {:.4f} on {} examples, loss {:.4f}",
               options.worker_id, eval.accuracy(), eval.examples,
               eval.mean_loss);

  TrainingSummary summary;
  summary.model = "mlp";
  summary.worker_id = options.worker_id;
  summary.steps = progress.steps();
  summary.device = std::string(backend.name());
  summary.final_loss = progress.recent_loss();
  summary.samples_per_sec = progress.samples_per_sec(train_end);
  summary.tau_mean = progress.tau().mean();
  summary.tau_max = progress.tau().max();
  summary.rejected_pushes = progress.tau().rejected();
  summary.pull_wait_ms = absl::ToDoubleMilliseconds(progress.mean_pull_wait());
  summary.test_accuracy = eval.accuracy();
  ASSIGN_OR_RETURN(TransferCounters transfers, client.Transfers(config.name));
  summary.push_raw_bytes = transfers.push_raw_bytes;
  summary.push_wire_bytes = transfers.push_wire_bytes;
  summary.client_events = EventsOf(client);
  return summary;
}

}  // namespace taups::trainer
