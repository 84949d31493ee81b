#include "server/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"

namespace taups {
namespace {

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// WATCHDOG_USEC, when it is meant for this process.
absl::Duration WatchdogFromEnvironment() {
  uint64_t usec = 0;
  if (!absl::SimpleAtoi(EnvOrEmpty("WATCHDOG_USEC"), &usec) || usec == 0) {
    return absl::ZeroDuration();
  }
  const std::string pid = EnvOrEmpty("WATCHDOG_PID");
  int64_t for_pid = 0;
  if (!pid.empty() &&
      (!absl::SimpleAtoi(pid, &for_pid) || for_pid != getpid())) {
    return absl::ZeroDuration();
  }
  return absl::Microseconds(usec);
}

}  // namespace

SystemdNotifier SystemdNotifier::FromEnvironment() {
  return SystemdNotifier(EnvOrEmpty("NOTIFY_SOCKET"), WatchdogFromEnvironment());
}

SystemdNotifier::SystemdNotifier(std::string socket_path,
                                 absl::Duration watchdog_interval)
    : socket_path_(std::move(socket_path)),
      watchdog_interval_(watchdog_interval) {}

bool SystemdNotifier::Send(absl::string_view message) const {
  if (!active()) return true;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, socket_path_.data(), socket_path_.size());
  socklen_t length = static_cast<socklen_t>(
      offsetof(sockaddr_un, sun_path) + socket_path_.size());
  if (socket_path_[0] == '@') {
    address.sun_path[0] = '\0';  // abstract namespace, not NUL-terminated
  } else {
    length += 1;  // the terminating NUL of a path
  }
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const ssize_t sent =
      sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
             reinterpret_cast<const sockaddr*>(&address), length);
  close(fd);
  return sent == static_cast<ssize_t>(message.size());
}

}  // namespace taups
