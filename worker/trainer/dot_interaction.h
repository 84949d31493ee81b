// DLRM's feature interaction: pairwise dot products among an example's
// vectors. Each example has V = num_fields + 1 vectors of width `dim`:
// t_0 is the bottom MLP's output and t_{1+f} the embedding of field f. The
// interaction's output row is
//   [ t_0 (dim values),  <t_i, t_j> for i = 1..V-1, j = 0..i-1 ]
// i.e. the bottom output followed by the strictly lower triangle of the
// V x V Gram matrix, row by row (V(V-1)/2 values; 351 for 26 fields).
//
// Plain loops on the host: per example this is V(V-1)/2 dots of length dim,
// far too small to pay for a trip to a GPU.
//
// Stateless functions; thread-safe.
#ifndef TAUPS_WORKER_TRAINER_DOT_INTERACTION_H_
#define TAUPS_WORKER_TRAINER_DOT_INTERACTION_H_

namespace taups::trainer {

struct DotInteractionShape {
  int num_fields = 26;
  int dim = 16;

  int num_vectors() const { return num_fields + 1; }
  int num_pairs() const { return num_vectors() * (num_vectors() - 1) / 2; }
  int output_width() const { return dim + num_pairs(); }
};

// bottom: batch x dim; embeddings: batch x num_fields x dim;
// out: batch x output_width.
void DotInteractionForward(const DotInteractionShape& shape, int batch,
                           const float* bottom, const float* embeddings,
                           float* out);

// Given d_out = dLoss/dout (batch x output_width) for the same inputs,
// overwrites d_bottom (batch x dim) and d_embeddings (batch x num_fields x
// dim) with dLoss/dbottom and dLoss/dembeddings.
void DotInteractionBackward(const DotInteractionShape& shape, int batch,
                            const float* bottom, const float* embeddings,
                            const float* d_out, float* d_bottom,
                            float* d_embeddings);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_DOT_INTERACTION_H_
