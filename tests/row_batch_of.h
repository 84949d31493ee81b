// A RowBatch (server/optimizer.h) over caller-owned vectors, for the
// ApplyRows tests and optimizer_bench: row k lives at slot slots[k] of
// `arena` (`stride` floats a row), its gradient is row grad_rows[k] of
// `grads` (`dim` floats a row). The batch borrows the vectors, which must
// outlive it and keep their size.
#ifndef TAUPS_TESTS_ROW_BATCH_OF_H_
#define TAUPS_TESTS_ROW_BATCH_OF_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "server/optimizer.h"

namespace taups {

inline RowBatch BatchOf(std::vector<float>& arena, size_t stride,
                        const std::vector<uint32_t>& slots,
                        const std::vector<float>& grads,
                        const std::vector<uint32_t>& grad_rows, uint32_t dim) {
  RowBatch batch;
  batch.arena = arena.data();
  batch.row_stride = stride;
  batch.slots = slots.data();
  batch.grads = grads.data();
  batch.grad_rows = grad_rows.data();
  batch.count = slots.size();
  batch.dim = dim;
  return batch;
}

}  // namespace taups

#endif  // TAUPS_TESTS_ROW_BATCH_OF_H_
