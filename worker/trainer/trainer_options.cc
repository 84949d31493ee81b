#include "worker/trainer/trainer_options.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace taups::trainer {

absl::StatusOr<ModelKind> ParseModelKind(std::string_view text) {
  if (text == "mlp") return ModelKind::kMlp;
  if (text == "ctr") return ModelKind::kCtr;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model '", std::string(text), "'; expected mlp or ctr"));
}

std::string_view ModelKindName(ModelKind kind) {
  return kind == ModelKind::kMlp ? "mlp" : "ctr";
}

uint64_t DefaultWarmupVersions(ModelKind model, ConsistencyKind consistency,
                               uint32_t num_workers) {
  const uint64_t steps = model == ModelKind::kMlp
                             ? kDefaultMlpWarmupStepsPerWorker
                             : kDefaultCtrWarmupStepsPerWorker;
  const bool one_version_per_step = consistency == ConsistencyKind::kSync ||
                                    consistency == ConsistencyKind::kSemiSync;
  return one_version_per_step ? steps : steps * num_workers;
}

bool EmbeddingMemoryOptions::IsSet() const {
  const EmbeddingMemoryOptions unset;
  return max_rows != unset.max_rows || max_bytes != unset.max_bytes ||
         eviction != unset.eviction || ttl_s != unset.ttl_s ||
         admit_after != unset.admit_after ||
         admit_probability != unset.admit_probability;
}

void EmbeddingMemoryOptions::ApplyTo(TableConfig& config) const {
  config.sparse_max_rows = max_rows;
  config.sparse_max_bytes = max_bytes;
  config.sparse_eviction = eviction;
  config.sparse_ttl_s = ttl_s;
  config.sparse_admit_after = admit_after;
  config.sparse_admit_probability = admit_probability;
}

float TrainerOptions::EffectiveLearningRate() const {
  if (learning_rate != 0.0f) return learning_rate;
  return model == ModelKind::kMlp ? kDefaultMlpLearningRate
                                  : kDefaultCtrLearningRate;
}

int TrainerOptions::EffectiveBatchSize() const {
  if (batch_size != 0) return batch_size;
  return model == ModelKind::kMlp ? kDefaultMlpBatchSize : kDefaultCtrBatchSize;
}

float TrainerOptions::LrDecayFactor(int64_t step) const {
  if (!lr_decay || model != ModelKind::kMlp || steps <= 0) return 1.0f;
  const float linear =
      1.0f - static_cast<float>(step) / static_cast<float>(steps);
  return std::max(kMinLrDecayFactor, linear);
}

absl::Status TrainerOptions::Validate() const {
  if (!(slowdown >= 1.0 && slowdown <= 1000.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--slowdown must be in [1, 1000], got ", slowdown));
  }
  if (num_workers == 0) {
    return absl::InvalidArgumentError("num_workers must be >= 1");
  }
  if (model == ModelKind::kCtr && compression.accumulate_steps > 1) {
    // Its embedding rows change every step; a deferred dense push would
    // also leave a barrier step without this worker's gradient.
    return absl::InvalidArgumentError(
        "--accumulate_steps > 1 is for --model=mlp (ctr pushes sparse rows "
        "every step)");
  }
  if (worker_id >= num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker_id ", worker_id, " must be below num_workers ", num_workers));
  }
  if (steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat("steps ", steps, " < 0"));
  }
  if (batch_size < 0 || batch_size > (1 << 16)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_size ", batch_size, " outside 0..65536 (0 = default)"));
  }
  if (!std::isfinite(learning_rate) || learning_rate < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learning rate must be finite and >= 0 (0 = default), got ",
        learning_rate));
  }
  if (log_every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("log_every ", log_every, " < 0"));
  }
  if (eval_examples < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("eval_examples ", eval_examples, " < 0"));
  }
  if (model == ModelKind::kMlp && data_dir.empty()) {
    return absl::InvalidArgumentError("data_dir is empty");
  }
  if (model == ModelKind::kCtr) {
    if (embedding_dim < 1 || embedding_dim > 1024) {
      return absl::InvalidArgumentError(absl::StrCat(
          "embedding_dim ", embedding_dim, " outside 1..1024"));
    }
    if (ctr_examples < num_workers || ctr_examples > (int64_t{1} << 31) - 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ctr_examples ", ctr_examples, " must be in [num_workers (",
          num_workers, "), 2^31 - 1]"));
    }
    for (const std::vector<int>* widths : {&ctr_bottom_mlp, &ctr_top_mlp}) {
      if (widths->size() > 8) {
        return absl::InvalidArgumentError(
            "at most 8 hidden layers per ctr MLP");
      }
      for (int w : *widths) {
        if (w < 1 || w > 65536) {
          return absl::InvalidArgumentError(absl::StrCat(
              "ctr MLP hidden width ", w, " outside 1..65536"));
        }
      }
    }
  }
  if (!(row_tau_head_min_probability > 0.0 &&
        row_tau_head_min_probability <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "row_tau_head_min_probability must be in (0, 1], got ",
        row_tau_head_min_probability));
  }
  if (model == ModelKind::kMlp && embedding_memory.IsSet()) {
    return absl::InvalidArgumentError(
        "the --sparse_* memory limits are for --model=ctr (mlp has no sparse "
        "table)");
  }
  if (eval_every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("eval_every ", eval_every, " < 0"));
  }
  if (table_wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("table_wait is negative");
  }
  return absl::OkStatus();
}

}  // namespace taups::trainer
