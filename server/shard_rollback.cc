// ShardCalls::Rollback: a running shard restores its checkpoint of one sync
// step in place (ps_admin rollback rolls every shard of a job back to a
// step all of them hold). In order:
//   1. the newest checkpoint of the step is read and checked whole, and
//      against the tables held (checkpoint_rollback.h), while the shard
//      serves on; any error ends the call here with nothing changed;
//   2. with the gate held exclusively (the pushes, parking pulls and
//      membership calls already in the shard have finished; new ones wait)
//      and no checkpoint being written, every table part is restored (all
//      or none) and the shard takes a new incarnation, as a restarted one
//      would;
//   3. the gate opens: the calls that waited are served by the rolled-back
//      shard, whose answers carry the new incarnation, so workers register
//      again and pull before their next push.
// So a push is applied before the rollback (and discarded with everything
// after the step) or after it, never to some tables and not others. The
// workers' leases are kept (unlike a restart, which forgets them): a sync
// step after the rollback waits for every worker live before it, so the
// first worker back cannot close a step alone. A push computed on values
// pulled before the rollback and arriving after it is applied whole, to the
// rolled-back model, as after a restart (a restored table lets the next
// push catch its step up to the workers').
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/shard_map.h"
#include "common/status_macros.h"
#include "server/checkpoint_rollback.h"
#include "server/shard_calls.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

// Another incarnation, as a restart would draw (never 0, never `old`).
uint64_t NextIncarnation(uint64_t old) {
  const uint64_t now = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  uint64_t next = MixKey(now ^ old);
  while (next == 0 || next == old) next = MixKey(next + 1);
  return next;
}

}  // namespace

absl::Status ShardCalls::Rollback(const v1::RollbackRequest& request,
                                  v1::RollbackResponse* response) {
  if (life_.checkpointer == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shard ", store_->shard_index(),
        " runs without --checkpoint_dir; it has no checkpoints to roll back to"));
  }
  absl::MutexLock one(&rollback_mu_);
  const absl::Time start = absl::Now();
  const uint64_t step = request.step();
  // What the call holds until it returns, charged before anything is read:
  // the loaded checkpoint, and an undo copy of each part it restores (the
  // parts have the checkpoint's shapes, so each copy is about its size).
  ASSIGN_OR_RETURN(const uint64_t file_bytes, life_.checkpointer->StepFileBytes(step));
  // Both are given back when the call returns, whichever way.
  ASSIGN_OR_RETURN(const Reservation held,
                   store_->ReserveRollback(step, 2 * file_bytes));
  ASSIGN_OR_RETURN(LoadedCheckpoint loaded, life_.checkpointer->LoadStep(step));
  Reservation more;
  if (loaded.bytes > file_bytes) {
    // A bigger checkpoint of the step was written meanwhile: charge the rest.
    ASSIGN_OR_RETURN(more, store_->ReserveRollback(
                               step, 2 * (loaded.bytes - file_bytes)));
  }
  RETURN_IF_ERROR(CheckFitsTables(*store_, loaded));

  std::vector<TableRolledBack> tables;
  uint32_t live = 0;
  uint64_t before = 0;
  uint64_t after = 0;
  RETURN_IF_ERROR(life_.checkpointer->RestoreInPlace([&]() -> absl::StatusOr<uint64_t> {
    absl::MutexLock gate(&gate_);
    ASSIGN_OR_RETURN(tables, RestoreTablesInPlace(*store_, loaded));
    for (const WorkerStatus& w : store_->Stats().workers) live += w.live ? 1 : 0;
    before = incarnation_.load();
    after = NextIncarnation(before);
    incarnation_.store(after);
    return after;  // what the checkpoints written from now on record
  }));
  rollbacks_.fetch_add(1);
  resumed_alone_.store(false);  // every shard is back at one step

  uint64_t discarded = 0;
  uint64_t version = 0;
  response->set_shard_index(store_->shard_index());
  response->set_server_incarnation(after);
  response->set_previous_incarnation(before);
  response->set_step(step);
  response->set_sequence(loaded.manifest.header.sequence);
  response->set_path(loaded.path);
  for (const TableRolledBack& t : tables) {
    v1::RolledBackTable* table = response->add_tables();
    table->set_name(t.name);
    table->set_version_before(t.version_before);
    table->set_version(t.version);
    table->set_open_step_before(t.open_step_before);
    table->set_open_step(t.open_step);
    if (t.version_before > t.version) discarded += t.version_before - t.version;
    version += t.version;
  }
  response->set_discarded_updates(discarded);
  response->set_live_workers(live);
  response->set_duration_s(absl::ToDoubleSeconds(absl::Now() - start));
  spdlog::warn(
      "shard {} rolled back to step {} (version {}); {} updates after it discarded "
      "(checkpoint {}, {} tables, {} live workers kept, incarnation {:016x} -> "
      "{:016x}, {})",
      store_->shard_index(), step, version, discarded, loaded.path, tables.size(),
      live, before, after, absl::FormatDuration(absl::Now() - start));
  return absl::OkStatus();
}

}  // namespace taups
