// Makes sure a training table exists on the parameter servers before a
// trainer's first pull.
//
// Thread-safe if the Client is (it is).
#ifndef TAUPS_WORKER_TRAINER_TABLE_SETUP_H_
#define TAUPS_WORKER_TRAINER_TABLE_SETUP_H_

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "taups/client.h"
#include "taups/table_config.h"

namespace taups::trainer {

// create: CreateTable(config) (idempotent for an identical config; a
// different existing config fails with ALREADY_EXISTS, with a hint that all
// workers need the same --lr and --seed).
// !create: waits up to `wait` (polling OpenTable every 100 ms) for another
// worker to create it; DEADLINE_EXCEEDED if it never appears,
// FAILED_PRECONDITION if it exists with another kind, size or dim.
absl::Status EnsureTable(Client& client, const TableConfig& config,
                         bool create, absl::Duration wait);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_TABLE_SETUP_H_
