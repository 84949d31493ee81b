#include "server/systemd_heartbeat.h"

#include "absl/strings/str_cat.h"
#include "server/parameter_store.h"
#include "server/shard_checkpointer.h"

namespace taups {

std::string ShardStatusText(const ParameterStore& store,
                            const ShardCheckpointer* checkpointer,
                            absl::Time now) {
  const StoreStats stats = store.Stats();
  size_t live = 0;
  for (const WorkerStatus& w : stats.workers) live += w.live ? 1 : 0;
  std::string checkpoint = "checkpoints off";
  if (checkpointer != nullptr) {
    const CheckpointerStats c = checkpointer->stats();
    checkpoint =
        c.last_success == absl::InfinitePast()
            ? std::string("no checkpoint yet")
            : absl::StrCat("last checkpoint ",
                           absl::ToInt64Seconds(now - c.last_success), "s ago");
    if (c.failed > 0) absl::StrAppend(&checkpoint, ", ", c.failed, " failed");
  }
  return absl::StrCat("serving ", stats.tables.size(),
                      stats.tables.size() == 1 ? " table, " : " tables, ", live,
                      "/", stats.workers.size(), " workers live, ", checkpoint);
}

SystemdHeartbeat::SystemdHeartbeat(const SystemdNotifier* notifier,
                                   absl::Duration status_interval)
    : notifier_(notifier), status_interval_(status_interval) {}

void SystemdHeartbeat::Beat(absl::Time now, const ParameterStore& store,
                            const ShardCheckpointer* checkpointer) {
  if (!notifier_->active()) return;
  std::string message;
  const absl::Duration watchdog = notifier_->watchdog_interval();
  if (watchdog > absl::ZeroDuration() && now >= next_watchdog_) {
    message = "WATCHDOG=1\n";
    next_watchdog_ = now + watchdog / 2;
  }
  if (now >= next_status_) {
    absl::StrAppend(&message, "STATUS=",
                    ShardStatusText(store, checkpointer, now), "\n");
    next_status_ = now + status_interval_;
  }
  if (!message.empty()) notifier_->Send(message);
}

}  // namespace taups
