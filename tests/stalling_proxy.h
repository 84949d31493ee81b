// StallingProxy: a TCP proxy on 127.0.0.1 in front of one loopback port,
// whose answers can be held back. While held, it reads nothing the server
// sends, so the server's sends back up exactly as they do towards a caller
// that stopped reading (a stalled process, a hostile client): the kernel's
// buffers fill, then HTTP/2 flow control stops the server's writes. Bytes
// towards the server always flow.
//
// Thread-safe. Each connection is served by two threads of its own; the
// destructor closes every connection and joins them.
#ifndef TAUPS_TESTS_STALLING_PROXY_H_
#define TAUPS_TESTS_STALLING_PROXY_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace taups::testing {

class StallingProxy {
 public:
  // Listens on a free port of 127.0.0.1 and forwards each connection to
  // 127.0.0.1:`upstream_port`. Fails the test if it cannot listen.
  explicit StallingProxy(int upstream_port);
  ~StallingProxy();
  StallingProxy(const StallingProxy&) = delete;
  StallingProxy& operator=(const StallingProxy&) = delete;

  // "127.0.0.1:<port>", for a channel through the proxy.
  std::string address() const;

  // Stops / resumes reading what the server sends (on every connection).
  void HoldAnswers();
  void ReleaseAnswers();

 private:
  void AcceptLoop();
  // Copies `from` to `to` until either closes; `answers` is the direction
  // HoldAnswers stops.
  void Pump(int from, int to, bool answers);
  bool WaitWhileHeld(bool answers);

  const int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> pumps_ ABSL_GUARDED_BY(mu_);
  std::thread acceptor_;
};

}  // namespace taups::testing

#endif  // TAUPS_TESTS_STALLING_PROXY_H_
