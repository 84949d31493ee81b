#include "worker/trainer/dot_interaction.h"

#include <algorithm>
#include <cstddef>

namespace taups::trainer {
namespace {

// Vector k of example b: the bottom output for k = 0, else field k - 1.
template <typename T>
T* VectorOf(const DotInteractionShape& shape, int b, int k, T* bottom,
            T* embeddings) {
  const size_t dim = shape.dim;
  if (k == 0) return bottom + b * dim;
  return embeddings + (static_cast<size_t>(b) * shape.num_fields + (k - 1)) * dim;
}

float Dot(const float* x, const float* y, int n) {
  float sum = 0.0f;
  for (int d = 0; d < n; ++d) sum += x[d] * y[d];
  return sum;
}

}  // namespace

void DotInteractionForward(const DotInteractionShape& shape, int batch,
                           const float* bottom, const float* embeddings,
                           float* out) {
  const int dim = shape.dim, vectors = shape.num_vectors();
  for (int b = 0; b < batch; ++b) {
    float* row = out + static_cast<size_t>(b) * shape.output_width();
    std::copy(bottom + static_cast<size_t>(b) * dim,
              bottom + static_cast<size_t>(b + 1) * dim, row);
    float* pair = row + dim;
    for (int i = 1; i < vectors; ++i) {
      const float* ti = VectorOf(shape, b, i, bottom, embeddings);
      for (int j = 0; j < i; ++j) {
        *pair++ = Dot(ti, VectorOf(shape, b, j, bottom, embeddings), dim);
      }
    }
  }
}

void DotInteractionBackward(const DotInteractionShape& shape, int batch,
                            const float* bottom, const float* embeddings,
                            const float* d_out, float* d_bottom,
                            float* d_embeddings) {
  const int dim = shape.dim, vectors = shape.num_vectors();
  const size_t width = shape.output_width();
  for (int b = 0; b < batch; ++b) {
    const float* d_row = d_out + b * width;
    // The bottom output also feeds the top MLP directly.
    std::copy(d_row, d_row + dim, d_bottom + static_cast<size_t>(b) * dim);
    for (int k = 1; k < vectors; ++k) {
      float* g = VectorOf(shape, b, k, d_bottom, d_embeddings);
      std::fill(g, g + dim, 0.0f);
    }
    const float* d_pair = d_row + dim;
    for (int i = 1; i < vectors; ++i) {
      const float* ti = VectorOf(shape, b, i, bottom, embeddings);
      float* gi = VectorOf(shape, b, i, d_bottom, d_embeddings);
      for (int j = 0; j < i; ++j) {
        const float g = *d_pair++;
        if (g == 0.0f) continue;
        const float* tj = VectorOf(shape, b, j, bottom, embeddings);
        float* gj = VectorOf(shape, b, j, d_bottom, d_embeddings);
        for (int d = 0; d < dim; ++d) {
          gi[d] += g * tj[d];
          gj[d] += g * ti[d];
        }
      }
    }
  }
}

}  // namespace taups::trainer
