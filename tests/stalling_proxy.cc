#include "tests/stalling_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace taups::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// All of `bytes` to `fd`; false once the peer is gone.
bool WriteAll(int fd, const char* bytes, size_t size) {
  while (size > 0) {
    const ssize_t wrote = send(fd, bytes, size, MSG_NOSIGNAL);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    bytes += wrote;
    size -= static_cast<size_t>(wrote);
  }
  return true;
}

}  // namespace

StallingProxy::StallingProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listen_fd_ >= 0);
  sockaddr_in address = Loopback(0);
  REQUIRE(bind(listen_fd_, reinterpret_cast<sockaddr*>(&address),
               sizeof(address)) == 0);
  REQUIRE(listen(listen_fd_, 16) == 0);
  socklen_t length = sizeof(address);
  REQUIRE(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address),
                      &length) == 0);
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

StallingProxy::~StallingProxy() {
  stopping_.store(true);
  {
    absl::MutexLock lock(&mu_);
    held_ = false;
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);  // wakes blocked sends
  }
  acceptor_.join();
  std::vector<std::thread> pumps;
  {
    absl::MutexLock lock(&mu_);
    pumps.swap(pumps_);
  }
  for (std::thread& pump : pumps) pump.join();
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) close(fd);
  close(listen_fd_);
}

std::string StallingProxy::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void StallingProxy::HoldAnswers() {
  absl::MutexLock lock(&mu_);
  held_ = true;
}

void StallingProxy::ReleaseAnswers() {
  absl::MutexLock lock(&mu_);
  held_ = false;
}

void StallingProxy::AcceptLoop() {
  while (!stopping_.load()) {
    pollfd ready{listen_fd_, POLLIN, 0};
    if (poll(&ready, 1, 50) <= 0) continue;
    const int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) continue;
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in upstream = Loopback(upstream_port_);
    if (server < 0 || connect(server, reinterpret_cast<const sockaddr*>(&upstream),
                              sizeof(upstream)) != 0) {
      close(client);
      if (server >= 0) close(server);
      continue;
    }
    absl::MutexLock lock(&mu_);
    fds_.push_back(client);
    fds_.push_back(server);
    pumps_.emplace_back([this, client, server] { Pump(client, server, false); });
    pumps_.emplace_back([this, client, server] { Pump(server, client, true); });
  }
}

bool StallingProxy::WaitWhileHeld(bool answers) {
  if (!answers) return !stopping_.load();
  absl::MutexLock lock(&mu_);
  while (held_ && !stopping_.load()) {
    mu_.AwaitWithTimeout(absl::Condition(+[](bool* held) { return !*held; },
                                         &held_),
                         absl::Milliseconds(50));
  }
  return !stopping_.load();
}

void StallingProxy::Pump(int from, int to, bool answers) {
  char bytes[64 << 10];
  while (WaitWhileHeld(answers)) {
    pollfd ready{from, POLLIN, 0};
    const int polled = poll(&ready, 1, 50);
    if (polled == 0) continue;
    if (polled < 0 && errno == EINTR) continue;
    if (polled < 0) break;
    // Held while it polled: what arrived stays unread.
    if (!WaitWhileHeld(answers)) break;
    const ssize_t got = recv(from, bytes, sizeof(bytes), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || !WriteAll(to, bytes, static_cast<size_t>(got))) break;
  }
  shutdown(to, SHUT_WR);
}

}  // namespace taups::testing
