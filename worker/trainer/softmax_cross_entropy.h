// The classifier head shared by the MLP and the softmax-regression model:
// add the bias to each row of logits, turn the row into softmax
// probabilities in place, and score it against its label.
//
// Pure function; thread-compatible.
#ifndef TAUPS_WORKER_TRAINER_SOFTMAX_CROSS_ENTROPY_H_
#define TAUPS_WORKER_TRAINER_SOFTMAX_CROSS_ENTROPY_H_

#include <cstdint>

namespace taups::trainer {

struct SoftmaxBatchResult {
  double loss_sum = 0.0;  // sum over rows of -log softmax(z)_label
  int correct = 0;        // rows whose argmax is the label
};

// logits: `batch` rows of `classes` floats (row-major), overwritten with
// softmax(logits + bias). Labels must be < classes (callers validate).
SoftmaxBatchResult SoftmaxCrossEntropyInPlace(float* logits, const float* bias,
                                              const uint8_t* labels, int batch,
                                              int classes);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_SOFTMAX_CROSS_ENTROPY_H_
