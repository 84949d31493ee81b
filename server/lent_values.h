// Values a table lends to a pull answer: the answer is sent from the table's
// own memory instead of a copy of it (DenseTable::Lend).
//
// A lent piece stays exactly as it was when lent for as long as `hold`
// lives: a push that arrives for a block still being sent writes to a fresh
// copy of that block, which becomes the table's, and the lent memory is
// freed when the last answer holding it lets go. So a pull costs no copy,
// and a push pays one block's copy only when it races a send of that block.
//
// Thread-safety: a LentValues is a plain value (thread-compatible); `hold`
// may be dropped on any thread.
#ifndef TAUPS_SERVER_LENT_VALUES_H_
#define TAUPS_SERVER_LENT_VALUES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"

namespace taups {

struct LentValues {
  // The values, in order, one piece per lock block they touch.
  std::vector<absl::Span<const float>> pieces;
  // Keeps every piece alive and unchanged while it lives.
  std::shared_ptr<const void> hold;

  uint64_t floats() const {
    uint64_t n = 0;
    for (absl::Span<const float> piece : pieces) n += piece.size();
    return n;
  }
  void Clear() {
    pieces.clear();
    hold.reset();
  }
};

// Bytes of table memory that pushes replaced while answers were still
// sending it, and that those answers hold now (process-wide; a gauge for
// the shard's metrics). Lent memory the table still uses is not counted:
// it is the table's own.
size_t DisplacedLentBytes();
// For lenders: `bytes` more (positive) or fewer (negative) such bytes.
void CountDisplacedLentBytes(int64_t bytes);

}  // namespace taups

#endif  // TAUPS_SERVER_LENT_VALUES_H_
