// Deterministic parameter initialization.
//
// Every value is a pure function of (config seed, table name, position): a
// dense element by its global offset, a sparse row element by (key, column).
// So a table looks the same however it is sharded, and an evicted sparse row
// that comes back is reborn identical.
//
// Thread-compatible (the object is immutable after construction).
#ifndef TAUPS_COMMON_INITIALIZER_H_
#define TAUPS_COMMON_INITIALIZER_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "taups/table_config.h"

namespace taups {

class Initializer {
 public:
  Initializer(const InitializerConfig& config, absl::string_view table_name);

  // Fills out[i] with the value of dense element global_offset + i.
  void FillDense(uint64_t global_offset, absl::Span<float> out) const;
  // Fills out[j] with column j of sparse row `key`.
  void FillRow(uint64_t key, absl::Span<float> out) const;
  // The seed mixed from (config seed, table name): other per-table
  // deterministic draws (sparse admission) start from it too.
  uint64_t table_seed() const { return table_seed_; }

 private:
  float ValueAt(uint64_t stream, uint64_t index) const;

  InitializerConfig config_;
  uint64_t table_seed_;
};

}  // namespace taups

#endif  // TAUPS_COMMON_INITIALIZER_H_
