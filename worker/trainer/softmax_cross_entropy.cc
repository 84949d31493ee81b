#include "worker/trainer/softmax_cross_entropy.h"

#include <cmath>
#include <cstddef>

namespace taups::trainer {

SoftmaxBatchResult SoftmaxCrossEntropyInPlace(float* logits, const float* bias,
                                              const uint8_t* labels, int batch,
                                              int classes) {
  SoftmaxBatchResult result;
  for (int i = 0; i < batch; ++i) {
    float* z = logits + static_cast<size_t>(i) * classes;
    int argmax = 0;
    for (int j = 0; j < classes; ++j) {
      z[j] += bias[j];
      if (z[j] > z[argmax]) argmax = j;
    }
    const float top = z[argmax];
    const double label_margin = static_cast<double>(z[labels[i]]) - top;
    double denom = 0.0;
    for (int j = 0; j < classes; ++j) {
      z[j] = std::exp(z[j] - top);
      denom += z[j];
    }
    // -log softmax(z)_y = log(sum_j exp(z_j - top)) - (z_y - top).
    result.loss_sum += std::log(denom) - label_margin;
    const float inv = static_cast<float>(1.0 / denom);
    for (int j = 0; j < classes; ++j) z[j] *= inv;
    if (argmax == labels[i]) ++result.correct;
  }
  return result;
}

}  // namespace taups::trainer
