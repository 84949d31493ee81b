// ParameterStore's admin calls on workers (psctl evict): declared dead
// now, or drained after the step they are in.
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/limits.h"
#include "server/parameter_store.h"

namespace taups {

absl::StatusOr<ParameterStore::Eviction> ParameterStore::EvictWorker(
    uint32_t worker, bool drain) {
  RETURN_IF_ERROR(CheckWorkerId(worker, limits_));
  bool known = false;
  bool live = false;
  for (const WorkerStatus& w : membership_.Workers()) {
    if (w.worker_id != worker) continue;
    known = true;
    live = w.live;
  }
  if (!known) {
    return absl::NotFoundError(absl::StrCat("worker ", worker,
                                            " never registered with shard ",
                                            shard_index_, "; nothing to evict"));
  }
  Eviction result;
  result.was_live = live;
  if (!drain) {
    membership_.Evict(worker);
    PublishMembership();  // closes the steps that waited only for it
    return result;
  }
  // A worker without a lease has no step to finish: out at once.
  std::vector<WorkerDrains::Pending> pending;
  for (const std::shared_ptr<Entry>& entry : live ? Entries()
                                                  : std::vector<std::shared_ptr<Entry>>()) {
    const ConsistencyKind kind = entry->partition->consistency().kind;
    if (kind != ConsistencyKind::kSync && kind != ConsistencyKind::kSemiSync) {
      continue;
    }
    pending.push_back({entry->partition->config().name, entry->partition,
                       entry->partition->open_step()});
  }
  drains_.Start(worker, std::move(pending));
  // Out at once when no table has a step open for it; else Tick does it.
  const std::vector<uint32_t> out = drains_.Finish();
  for (uint32_t w : out) membership_.Evict(w);
  if (!out.empty()) PublishMembership();
  result.draining_tables = drains_.TablesOf(worker);
  return result;
}

absl::StatusOr<Reservation> ParameterStore::ReserveRollback(uint64_t step,
                                                           uint64_t bytes) {
  Reservation held(&budget_, BudgetUse::kRollback, bytes);
  if (!held.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "shard ", shard_index_, ": rolling back to step ", step, " needs ", bytes,
        " bytes (", HumanBytes(bytes), ") of the memory budget for the loaded "
        "checkpoint and the undo copies, but only ", budget_.available(),
        " bytes (", HumanBytes(budget_.available()), ") of ", budget_.limit(),
        " are left (--memory_budget_mb); nothing rolled back"));
  }
  return held;
}

}  // namespace taups
