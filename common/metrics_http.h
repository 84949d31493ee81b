// MetricsHttpServer: a process's Prometheus endpoint, on its own port.
//
//   GET /metrics  the registry's text exposition (text/plain; version=0.0.4)
//   GET /healthz  200 "ok" while the process serves
//   GET /readyz   200 "ready" once ready() says so (a shard: after its
//                 restore finished), else 503 "not ready"
//
// Served by cpp-httplib on a small thread pool of its own, apart from gRPC.
// Thread-safe; the destructor stops the server and joins its thread.
#ifndef TAUPS_COMMON_METRICS_HTTP_H_
#define TAUPS_COMMON_METRICS_HTTP_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/metrics.h"

namespace httplib {
class Server;
}

namespace taups {

class MetricsHttpServer {
 public:
  struct Options {
    std::string host = "127.0.0.1";
    int port = 0;  // 0: any free port (see port())
  };
  // `registry` must outlive the server. UNAVAILABLE if the port is taken.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const Options& options, const MetricsRegistry* registry,
      std::function<bool()> ready);
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace taups

#endif  // TAUPS_COMMON_METRICS_HTTP_H_
