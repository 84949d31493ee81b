// SystemdHeartbeat: what a running shard tells systemd from its ticker loop
// (the loop that expires leases and closes timed-out steps, so a shard whose
// store is wedged stops feeding the watchdog and systemd restarts it):
// WATCHDOG=1 every half of WatchdogSec=, and a STATUS= line (tables, live
// workers, last checkpoint) at most every `status_interval`.
//
// Not thread-safe: one thread (the ticker) calls Beat().
#ifndef TAUPS_SERVER_SYSTEMD_HEARTBEAT_H_
#define TAUPS_SERVER_SYSTEMD_HEARTBEAT_H_

#include <string>

#include "absl/time/time.h"
#include "server/systemd_notify.h"

namespace taups {

class ParameterStore;
class ShardCheckpointer;

// "serving 2 tables, 4/4 workers live, last checkpoint 12s ago"
// (`checkpointer` null: "checkpoints off").
std::string ShardStatusText(const ParameterStore& store,
                            const ShardCheckpointer* checkpointer,
                            absl::Time now);

class SystemdHeartbeat {
 public:
  // `notifier` must outlive the heartbeat.
  explicit SystemdHeartbeat(const SystemdNotifier* notifier,
                            absl::Duration status_interval = absl::Seconds(5));

  // Sends what is due at `now`: WATCHDOG=1 and/or STATUS=.
  void Beat(absl::Time now, const ParameterStore& store,
            const ShardCheckpointer* checkpointer);

 private:
  const SystemdNotifier* const notifier_;
  const absl::Duration status_interval_;
  absl::Time next_watchdog_ = absl::InfinitePast();
  absl::Time next_status_ = absl::InfinitePast();
};

}  // namespace taups

#endif  // TAUPS_SERVER_SYSTEMD_HEARTBEAT_H_
