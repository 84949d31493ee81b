// The sd_notify messages ps_server sends, read back from a datagram socket
// standing in for systemd's: path and abstract socket names, WATCHDOG_USEC /
// WATCHDOG_PID, and the heartbeat's timing of WATCHDOG=1 and STATUS= lines.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "server/parameter_store.h"
#include "server/systemd_heartbeat.h"
#include "server/systemd_notify.h"

namespace taups {
namespace {

// A datagram socket bound to `name` ('@' first: abstract), like systemd's.
class FakeManagerSocket {
 public:
  explicit FakeManagerSocket(const std::string& name) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, name.data(), name.size());
    if (name[0] == '@') address.sun_path[0] = '\0';
    const socklen_t length = static_cast<socklen_t>(
        offsetof(sockaddr_un, sun_path) + name.size() + (name[0] == '@' ? 0 : 1));
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&address), length) == 0);
  }
  ~FakeManagerSocket() { close(fd_); }
  // The next datagram, "" when none is waiting.
  std::string Receive() {
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    return n <= 0 ? std::string() : std::string(buffer, n);
  }

 private:
  int fd_ = -1;
};

std::string TempSocketPath() {
  return absl::StrCat(P_tmpdir, "/taups-notify-", getpid(), ".sock");
}

TEST_CASE("messages reach a path socket and an abstract socket") {
  const std::string path = TempSocketPath();
  unlink(path.c_str());
  {
    FakeManagerSocket manager(path);
    SystemdNotifier notifier(path, absl::ZeroDuration());
    REQUIRE(notifier.active());
    REQUIRE(notifier.Send("READY=1"));
    CHECK(manager.Receive() == "READY=1");
  }
  unlink(path.c_str());
  const std::string abstract = absl::StrCat("@taups-notify-test-", getpid());
  FakeManagerSocket manager(abstract);
  REQUIRE(SystemdNotifier(abstract, absl::ZeroDuration()).Send("STOPPING=1"));
  CHECK(manager.Receive() == "STOPPING=1");
}

TEST_CASE("without NOTIFY_SOCKET the notifier is inactive and sends nothing") {
  unsetenv("NOTIFY_SOCKET");
  const SystemdNotifier notifier = SystemdNotifier::FromEnvironment();
  CHECK_FALSE(notifier.active());
  CHECK(notifier.Send("READY=1"));
}

TEST_CASE("WATCHDOG_USEC counts only for the process WATCHDOG_PID names") {
  setenv("NOTIFY_SOCKET", "@unused", 1);
  setenv("WATCHDOG_USEC", "30000000", 1);
  unsetenv("WATCHDOG_PID");
  CHECK(SystemdNotifier::FromEnvironment().watchdog_interval() == absl::Seconds(30));
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  CHECK(SystemdNotifier::FromEnvironment().watchdog_interval() == absl::Seconds(30));
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
  CHECK(SystemdNotifier::FromEnvironment().watchdog_interval() == absl::ZeroDuration());
  unsetenv("WATCHDOG_PID");
  unsetenv("WATCHDOG_USEC");
  unsetenv("NOTIFY_SOCKET");
}

TEST_CASE("the heartbeat feeds the watchdog at half its interval and sends "
          "STATUS lines every status interval") {
  const std::string abstract = absl::StrCat("@taups-heartbeat-test-", getpid());
  FakeManagerSocket manager(abstract);
  const SystemdNotifier notifier(abstract, absl::Seconds(10));
  SystemdHeartbeat heartbeat(&notifier, absl::Seconds(3));
  ParameterStore store(0, 1);
  const absl::Time t0 = absl::FromUnixSeconds(1000);

  heartbeat.Beat(t0, store, nullptr);
  CHECK(manager.Receive() ==
        "WATCHDOG=1\nSTATUS=serving 0 tables, 0/0 workers live, checkpoints off\n");
  heartbeat.Beat(t0 + absl::Seconds(1), store, nullptr);
  CHECK(manager.Receive().empty());
  heartbeat.Beat(t0 + absl::Seconds(3), store, nullptr);
  CHECK(manager.Receive().rfind("STATUS=serving", 0) == 0);
  heartbeat.Beat(t0 + absl::Seconds(5), store, nullptr);
  CHECK(manager.Receive() == "WATCHDOG=1\n");
}

}  // namespace
}  // namespace taups
