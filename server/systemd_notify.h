// Messages to systemd's service manager over its notification socket (the
// sd_notify protocol: one datagram of "KEY=value" lines to the AF_UNIX socket
// named by $NOTIFY_SOCKET), written here so ps_server needs no libsystemd.
// A unit with Type=notify waits for READY=1; WatchdogSec= expects WATCHDOG=1
// at least once per interval; STATUS= is what `systemctl status` shows.
//
// Immutable after construction; Send() may be called from any thread.
#ifndef TAUPS_SERVER_SYSTEMD_NOTIFY_H_
#define TAUPS_SERVER_SYSTEMD_NOTIFY_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace taups {

class SystemdNotifier {
 public:
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID (the watchdog only
  // counts when WATCHDOG_PID is unset or this process's pid). Without
  // NOTIFY_SOCKET (not started by systemd) every Send() is a no-op.
  static SystemdNotifier FromEnvironment();
  // `socket_path` empty: inactive. A leading '@' names an abstract socket.
  SystemdNotifier(std::string socket_path, absl::Duration watchdog_interval);

  bool active() const { return !socket_path_.empty(); }
  // WatchdogSec= of the unit; zero when the watchdog is off.
  absl::Duration watchdog_interval() const { return watchdog_interval_; }
  // Sends `message` ("READY=1", "STATUS=...\nWATCHDOG=1"). Returns false
  // when active and the datagram could not be sent.
  bool Send(absl::string_view message) const;

 private:
  std::string socket_path_;
  absl::Duration watchdog_interval_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_SYSTEMD_NOTIFY_H_
