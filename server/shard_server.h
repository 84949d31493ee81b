// ShardServer: one running ps_server shard — a ParameterStore served over
// gRPC, with a ticker (leases, step timeouts) and a periodic stats log line
// per table (only when the table's figures changed since its last line; a
// last line for every table at shutdown). Used by ps_server's main and by
// in-process benchmarks.
//
// Thread-safe: Shutdown() may be called from any thread (e.g. a signal
// watcher) while another thread is in Wait().
#ifndef TAUPS_SERVER_SHARD_SERVER_H_
#define TAUPS_SERVER_SHARD_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/transport_security.h"
#include "server/limits.h"
#include "server/shard_checkpointer.h"
#include "taups/table_config.h"

namespace taups {

struct ShardServerOptions {
  uint32_t shard_index = 0;
  uint32_t num_shards = 1;
  // Address to bind, "host:port"; port 0 picks a free port. Without TLS it
  // must be a loopback address unless allow_insecure_remote.
  std::string listen_address = "127.0.0.1:7000";
  // TLS / mutual TLS of the port (common/transport_security.h). Without a
  // certificate the port is plaintext (local credentials with auth_file).
  ServerSecurity security;
  // Principals and their roles (server/principals.h); empty: no
  // authentication, every caller may call everything. Without TLS it
  // needs a loopback listen address (gRPC local credentials).
  std::string auth_file;
  // Serve plaintext on a non-loopback address (ps_server --insecure).
  bool allow_insecure_remote = false;
  // Largest request/response accepted or sent, in bytes.
  int max_message_bytes = 256 << 20;
  // Longest a pull waits for its policy (a sync step, an SSP bound) when
  // its client's deadline is later or absent: then DEADLINE_EXCEEDED
  // (ps_server --max_wait_s). In (0, 1 day].
  absl::Duration max_wait = absl::Seconds(60);
  // One stats line per table every interval; zero disables.
  absl::Duration stats_interval = absl::Seconds(10);
  // Lease granted to a worker that does not ask for one.
  absl::Duration default_lease = absl::Seconds(10);
  // How often leases and semi-sync timeouts are checked.
  absl::Duration tick_interval = absl::Milliseconds(5);
  // What tables and requests may make this shard allocate (limits.h).
  ServerLimits limits;
  // Durability (shard_checkpointer.h). An empty checkpoints.dir keeps the
  // tables in memory only. With a directory, Start restores its newest
  // valid checkpoint before serving; when it holds none, Start refuses
  // (FAILED_PRECONDITION) unless start_empty says this is a first start.
  // Shutdown takes a last checkpoint after in-flight calls finished.
  ShardCheckpointerOptions checkpoints;
  bool start_empty = false;
  // Tables to create once the restore is done, before the port opens
  // (ps_server --config; server/configured_tables.h): a table restored
  // from the checkpoint keeps its own settings.
  std::vector<TableConfig> tables;
  // Prometheus /metrics, /healthz, /readyz (common/metrics_http.h) on this
  // port of metrics_host; -1: none, 0: any free port (see metrics_port()).
  int metrics_port = -1;
  std::string metrics_host = "127.0.0.1";
  // Called by the ticker thread after every tick (leases, step timeouts)
  // with the store and the checkpointer (null without a checkpoint dir);
  // ps_server feeds systemd's watchdog and status from it. Must be quick.
  std::function<void(const ParameterStore&, const ShardCheckpointer*)> on_tick;

  absl::Status Validate() const;
};

class ShardServer {
 public:
  // Binds and starts serving. UNAVAILABLE, saying why, if the address cannot
  // be bound; a port another process listens on is refused (gRPC's
  // SO_REUSEPORT is turned off).
  static absl::StatusOr<std::unique_ptr<ShardServer>> Start(
      const ShardServerOptions& options);
  ~ShardServer();

  int port() const;
  int metrics_port() const;  // -1 when not serving metrics
  uint64_t incarnation() const;
  // Reads auth_file again (SIGHUP): the new principals apply to the next
  // calls; on error the old ones stay. FAILED_PRECONDITION without one.
  absl::Status ReloadAuth();
  // Takes a checkpoint now (FAILED_PRECONDITION without a checkpoint dir).
  absl::Status Checkpoint();
  // Blocks until Shutdown() has completed.
  void Wait();
  // Answers every parked pull UNAVAILABLE ("shard shutting down"), stops
  // accepting calls, lets in-flight calls finish (up to `grace`), then
  // returns. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

 private:
  struct State;
  explicit ShardServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_SHARD_SERVER_H_
