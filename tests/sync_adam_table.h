// The dense table the sync checkpoint process tests train (rollback and the
// sync reference run): a sync table of `workers` workers, Adam at learning
// rate 0.02, values drawn uniform in +-0.5. Both tests compare runs bit for
// bit, so they must train the same rule from the same start.
#ifndef TAUPS_TESTS_SYNC_ADAM_TABLE_H_
#define TAUPS_TESTS_SYNC_ADAM_TABLE_H_

#include <cstdint>
#include <string>

#include "taups/table_config.h"

namespace taups {

inline TableConfig SyncAdamTable(const std::string& name, uint64_t size,
                                 uint32_t workers) {
  TableConfig config = TableConfig::Dense(name, size);
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = workers;
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.learning_rate = 0.02f;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.5f;
  return config;
}

}  // namespace taups

#endif  // TAUPS_TESTS_SYNC_ADAM_TABLE_H_
