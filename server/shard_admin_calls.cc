// ShardCalls' admin RPCs: Checkpoint, EvictWorker and ShardStatus, as
// plain calls on the wire messages (the gRPC edge and the in-process
// transport share them). Rollback is in shard_rollback.cc.
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "server/shard_calls.h"
#include "wire_convert.h"

namespace taups {

absl::Status ShardCalls::Checkpoint(const v1::CheckpointRequest&,
                                    v1::CheckpointResponse* response) {
  if (life_.checkpointer == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shard ", store_->shard_index(),
        " runs without --checkpoint_dir; it has nowhere to write a checkpoint"));
  }
  absl::StatusOr<CheckpointTaken> taken = life_.checkpointer->TakeNowReporting();
  if (!taken.ok()) return taken.status();
  response->set_shard_index(store_->shard_index());
  response->set_server_incarnation(incarnation_);
  response->set_path(taken->written.path);
  response->set_sequence(taken->written.sequence);
  for (const CheckpointTaken::Table& t : taken->tables) {
    v1::CheckpointedTable* table = response->add_tables();
    table->set_name(t.name);
    table->set_version(t.version);
    table->set_open_step(t.open_step);
  }
  response->set_step_cut(taken->sync_step.has_value());
  response->set_sync_step(taken->sync_step.value_or(0));
  response->set_bytes(taken->written.bytes);
  response->set_duration_s(absl::ToDoubleSeconds(taken->written.took));
  response->set_incremental(taken->incremental);
  return absl::OkStatus();
}

absl::Status ShardCalls::EvictWorker(const v1::EvictWorkerRequest& request,
                                     v1::EvictWorkerResponse* response) {
  absl::StatusOr<ParameterStore::Eviction> evicted =
      store_->EvictWorker(request.worker_id(), request.drain());
  if (!evicted.ok()) return evicted.status();
  response->set_shard_index(store_->shard_index());
  response->set_server_incarnation(incarnation_);
  response->set_known(true);
  response->set_was_live(evicted->was_live);
  for (const std::string& table : evicted->draining_tables) {
    response->add_draining_tables(table);
  }
  return absl::OkStatus();
}

absl::Status ShardCalls::ShardStatus(const v1::ShardStatusRequest&,
                                     v1::ShardStatusResponse* response) {
  const absl::Time now = absl::Now();
  const StoreStats stats = store_->Stats();
  ToWire(stats, [this](absl::string_view table) { return traffic_.Of(table); },
         now, response->mutable_stats());
  response->mutable_stats()->set_server_incarnation(incarnation_);
  response->set_uptime_s(absl::ToDoubleSeconds(now - life_.started));
  response->set_ready(life_.serving == nullptr || life_.serving->load());
  const ResourceStats resources = store_->Resources();
  response->set_budget_used_bytes(resources.table_bytes +
                                  resources.worker_state_bytes +
                                  resources.staged_bytes);
  response->set_budget_limit_bytes(resources.budget_bytes);
  response->set_tables_limit(static_cast<uint32_t>(store_->limits().max_tables));
  for (const WorkerStatus& w : stats.workers) {
    if (w.live) continue;
    if (w.left) response->set_left_workers(response->left_workers() + 1);
    if (w.evicted) response->set_evicted_workers(response->evicted_workers() + 1);
  }
  for (uint32_t w : store_->DrainingWorkers()) response->add_draining_workers(w);
  v1::CheckpointStatus* checkpoint = response->mutable_checkpoint();
  checkpoint->set_last_age_s(-1.0);
  if (life_.checkpointer == nullptr) return absl::OkStatus();
  const CheckpointerStats s = life_.checkpointer->stats();
  checkpoint->set_enabled(true);
  checkpoint->set_taken(s.taken);
  checkpoint->set_failed(s.failed);
  checkpoint->set_last_age_s(s.last_success == absl::InfinitePast()
                                 ? -1.0
                                 : absl::ToDoubleSeconds(now - s.last_success));
  checkpoint->set_last_sequence(s.last_sequence);
  checkpoint->set_last_bytes(s.last_bytes);
  checkpoint->set_last_duration_s(absl::ToDoubleSeconds(s.last_duration));
  checkpoint->set_last_error(s.last_error);
  checkpoint->set_restored(s.restored_sequence.has_value());
  checkpoint->set_restored_sequence(s.restored_sequence.value_or(0));
  checkpoint->set_rollbacks(rollbacks_.load());
  if (resumed_alone_.load() && life_.resumed_step.has_value()) {
    checkpoint->set_resumed_alone(true);
    checkpoint->set_resumed_step(*life_.resumed_step);
  }
  // Steps a rollback could return to; unreadable manifests are the
  // checkpointer's to report, not a reason to fail the status call.
  if (absl::StatusOr<std::map<uint64_t, uint64_t>> steps =
          life_.checkpointer->StepCheckpoints();
      steps.ok()) {
    std::set<uint64_t> held;
    for (const auto& [sequence, step] : *steps) held.insert(step);
    for (uint64_t step : held) checkpoint->add_sync_steps(step);
  }
  return absl::OkStatus();
}

}  // namespace taups
