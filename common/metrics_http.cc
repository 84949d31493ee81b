#include "common/metrics_http.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace taups {

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const Options& options, const MetricsRegistry* registry,
    std::function<bool()> ready) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics port ", options.port, " is not in [0, 65535]"));
  }
  std::unique_ptr<MetricsHttpServer> self(new MetricsHttpServer());
  self->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *self->server_;
  server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  server.Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry->Scrape(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/readyz", [ready = std::move(ready)](const httplib::Request&,
                                                   httplib::Response& res) {
    const bool is_ready = !ready || ready();
    res.status = is_ready ? 200 : 503;
    res.set_content(is_ready ? "ready\n" : "not ready\n", "text/plain");
  });
  if (options.port == 0) {
    self->port_ = server.bind_to_any_port(options.host);
  } else if (server.bind_to_port(options.host, options.port)) {
    self->port_ = options.port;
  }
  if (self->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for metrics on ", options.host, ":", options.port, ": ",
        std::strerror(errno), " (is the port in use?)"));
  }
  self->thread_ = std::thread([&server] { server.listen_after_bind(); });
  return self;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace taups
