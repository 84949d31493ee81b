// Scores the CTR model held by the parameter servers on a fixed set of
// examples: the learned model's log-loss and AUC next to the planted
// model's (the Bayes optimum on the same labels) and the best constant
// predictor's.
//
// Thread-compatible: uses the caller's CtrModel (scratch buffers); the
// Client is thread-safe.
#ifndef TAUPS_WORKER_TRAINER_CTR_EVALUATION_H_
#define TAUPS_WORKER_TRAINER_CTR_EVALUATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "taups/client.h"
#include "worker/trainer/ctr_data.h"
#include "worker/trainer/ctr_model.h"

namespace taups::trainer {

struct CtrEvaluation {
  int examples = 0;
  double logloss = 0.0;
  double planted_logloss = 0.0;   // Bayes log-loss of these examples
  double excess_logloss = 0.0;    // logloss - planted_logloss
  double auc = 0.0;
  double planted_auc = 0.0;
  double constant_logloss = 0.0;  // predicting the examples' click rate
};

// Pulls the dense parameters from `dense_table` and the examples' embedding
// rows from `embedding_table` (keys EmbeddingKey(field, id)) in chunks, and
// scores `examples` (at least one of each label). Errors: the pulls' (with
// context), the model's, FAILED_PRECONDITION when AUC is undefined.
absl::StatusOr<CtrEvaluation> EvaluateCtrModel(
    Client& client, CtrModel& model, const std::string& dense_table,
    const std::string& embedding_table, const CtrExamples& examples);

// The embedding keys of examples [first, first + count), example-major and
// field-minor: keys[(i - first) * num_fields + f].
void CtrEmbeddingKeys(const CtrExamples& examples, int first, int count,
                      std::vector<uint64_t>& keys);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_EVALUATION_H_
