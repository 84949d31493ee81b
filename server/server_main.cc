// ps_server: one shard of a tauPS parameter server.
//
//   ps_server --shard_index=0 --num_shards=2 --port=7000
//   ps_server --cluster_file=/etc/taups/cluster.txt --shard_index=1
//   ps_server --config=/etc/taups/cluster.textproto --shard_index=1
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>
#include <tuple>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "common/flag_checks.h"
#include "common/grpc_logging.h"
#include "common/lock_checks.h"
#include "common/logging.h"
#include "common/malloc_tuning.h"
#include "common/port_file.h"
#include "common/process_flags.h"
#include "common/tool_start.h"
#include "common/transport_security.h"
#include "common/task_pool.h"
#include "server/cluster_config.h"
#include "server/cluster_file.h"
#include "server/limits.h"
#include "server/shard_server.h"
#include "server/systemd_heartbeat.h"
#include "server/systemd_notify.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(uint32_t, shard_index, 0, "Index of this shard, 0-based.");
ABSL_FLAG(uint32_t, num_shards, 1,
          "Shards in the cluster. Ignored when --cluster_file is given.");
ABSL_FLAG(std::string, host, "",
          "Address to listen on. Default: 0.0.0.0 with --tls_cert, else "
          "127.0.0.1; a non-loopback address without TLS needs --insecure.");
// Transport security and authentication (docs/SECURITY.md).
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain of this shard: serve TLS (needs --tls_key).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA bundle client certificates are checked against (mutual "
          "TLS; needs --tls_cert).");
ABSL_FLAG(bool, tls_require_client_cert, false,
          "Refuse clients without a certificate signed by --tls_ca.");
ABSL_FLAG(std::string, auth_file, "",
          "Principals, roles and their bearer tokens or certificate names "
          "(mode 600; reread on SIGHUP). Empty: no authentication.");
ABSL_FLAG(bool, insecure, false,
          "Allow plaintext with no authentication on a non-loopback --host.");
ABSL_FLAG(int, port, 7000,
          "Port to listen on; 0 picks a free one (see --port_file). Ignored "
          "when --cluster_file is given.");
ABSL_FLAG(std::string, cluster_file, "",
          "File listing every shard's host:port in shard order; this shard "
          "listens on the port of line --shard_index.");
ABSL_FLAG(std::string, config, "",
          "Cluster config file (protobuf text format; see "
          "/usr/share/taups/config/cluster.textproto.example): the shard list "
          "(this shard listens on the port of shard[--shard_index]) and tables "
          "created at start. Instead of --cluster_file; --num_shards and "
          "--port, if set too, must agree with it.");
ABSL_FLAG(std::string, port_file, "",
          "Once listening, write the bound port to this file (for scripts and "
          "tests that start shards on --port=0).");
ABSL_FLAG(int, max_message_mb, 256,
          "Largest gRPC message accepted or sent, in MiB.");
ABSL_FLAG(int, stats_interval_s, 10,
          "Seconds between stats log lines (per table); 0 disables.");
ABSL_FLAG(double, lease_s, 10.0,
          "Lease granted to a worker that asks for none: a worker silent for "
          "longer is declared dead and leaves every barrier and quorum.");
ABSL_FLAG(double, max_lease_s, 60.0,
          "Longest lease a worker may ask for in Register (at least --lease_s): "
          "a longer one is refused, so no client can keep a dead worker in a "
          "sync step for longer than this.");
// Limits (server/limits.h): what one table or request may make the shard
// allocate, checked before anything is.
ABSL_FLAG(uint64_t, max_table_mb, 2048,
          "Most MiB one table's part on this shard may take, optimizer state "
          "included.");
ABSL_FLAG(uint64_t, memory_budget_mb, 0,
          "Most MiB this shard's tables (values, optimizer state, sparse rows "
          "at their row limit) and per-worker state (delay-compensation "
          "copies) may take together. 0: three quarters of the memory this "
          "process may use (MemTotal or the cgroup's memory.max), at most "
          "16384. The default --max_table_mb is lowered to the budget if above.");
ABSL_FLAG(uint64_t, sparse_default_max_rows, uint64_t{1} << 22,
          "Row limit per shard of a sparse table created without a bound of "
          "its own (lowered to what --max_table_mb buys).");
ABSL_FLAG(uint64_t, max_tables, 1024, "Most tables on this shard.");
ABSL_FLAG(uint64_t, max_keys_per_request, uint64_t{1} << 22,
          "Most keys in one sparse pull or push.");
ABSL_FLAG(uint64_t, max_pull_mb, 256,
          "Most MiB of one pull's answer (and at most --max_message_mb).");
ABSL_FLAG(uint64_t, max_pull_in_flight_mb, 4096,
          "Most MiB of pull answers made and not yet read by their callers, "
          "in all (at least --max_pull_mb). A pull past it is refused "
          "UNAVAILABLE, which the client library retries: a slow or stalled "
          "reader cannot make the shard pile up answers. Large dense answers "
          "are sent from the table's memory and count at their full size.");
ABSL_FLAG(uint64_t, max_block_values, uint64_t{1} << 26,
          "Most values one encoded gradient block may decode to.");
ABSL_FLAG(uint64_t, max_table_name_length, 128,
          "Most characters of a table name.");
ABSL_FLAG(uint64_t, max_staged_mb, 1024,
          "Most MiB of unfinished multi-slice pushes one table's part holds.");
ABSL_FLAG(uint64_t, max_workers, 65536,
          "Worker ids this shard serves: 0 to max_workers - 1.");
ABSL_FLAG(uint64_t, max_workers_per_table, 1024,
          "Most distinct workers that may hold state (have pulled or pushed) "
          "in one table's part on this shard.");
ABSL_FLAG(uint64_t, max_waiting_per_worker, 16,
          "Most pulls of one worker id that may wait for their policy (a sync "
          "step, the SSP bound) at once on this shard; more are refused.");
ABSL_FLAG(uint64_t, max_waiting_calls, 256,
          "Most pulls that may wait for their policy at once on this shard.");
ABSL_FLAG(double, max_wait_s, 60,
          "Longest a pull waits for its policy (a sync step to close, the SSP "
          "bound) when its client's deadline is later or absent; it then gets "
          "DEADLINE_EXCEEDED. Waiting pulls hold no server thread.");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "Directory of this shard's checkpoints (its own; created if absent). "
          "At start the newest valid one is restored; without one the shard "
          "refuses to start unless --start_empty. Empty: no checkpoints, the "
          "tables live in memory only.");
ABSL_FLAG(uint32_t, checkpoint_keep, 3, "Complete checkpoints kept.");
ABSL_FLAG(double, checkpoint_interval_s, 0,
          "Seconds between checkpoints; 0: not on a timer.");
ABSL_FLAG(uint64_t, checkpoint_every_versions, 0,
          "Checkpoint as soon as the shard's tables applied this many "
          "updates (N) since the last checkpoint began (the apply path wakes "
          "the checkpointer; one is written at a time). A kill -9 then loses "
          "at most max(N, W) + W updates, W being the most applied while one "
          "checkpoint is written: N + W while a write takes less time than N "
          "updates. 0: no such trigger.");
ABSL_FLAG(uint32_t, checkpoint_full_every, 1,
          "Of every N checkpoints one is full and the other N-1 are "
          "incremental: sparse tables write only the rows changed and the "
          "keys evicted since the checkpoint before (1: every one full).");
ABSL_FLAG(uint64_t, checkpoint_every_steps, 0,
          "Checkpoint right after every N-th step of the sync and semi-sync "
          "tables closes, copied on the apply path, so shards running the "
          "same steps hold checkpoints of the same step; the manifest records "
          "it (0: no step cut).");
ABSL_FLAG(int64_t, checkpoint_restore_step, -1,
          "Restore the newest checkpoint of this sync step (give every shard "
          "the same step to restore one model of all shards); -1: the newest "
          "checkpoint.");
ABSL_FLAG(int, apply_threads, 0,
          "Cores that share one large call: a dense push's apply, its finite "
          "check and a dense pull of 1 MiB of floats or more, and a sparse "
          "pull or push of 8192 keys or more (its stripes); the calls still "
          "apply one at a time in their order. 0: min(hardware threads, 4); "
          "1: every call on the thread that received it.");
ABSL_FLAG(bool, start_empty, false,
          "With --checkpoint_dir holding no valid checkpoint: start with no "
          "tables (a shard's first start) instead of refusing.");

namespace {

// Most shards a cluster may have; more is surely a typo.
constexpr long double kMaxShards = 4096;

// Every numeric flag above (taups::CheckNumericFlags refuses a numeric flag
// missing here).
constexpr taups::FlagRange kFlagRanges[] = {
    {"shard_index", 0, kMaxShards - 1},
    {"num_shards", 1, kMaxShards},
    {"port", 0, 65535},
    // The limit is an int of bytes in gRPC: 2047 MiB is the most it holds.
    {"max_message_mb", 1, 2047},
    {"stats_interval_s", 0, 86400},
    // Leases last at most an hour; the default is at most --max_lease_s
    // too (checked once both are parsed).
    {"lease_s", 0, 3600, /*min_open=*/true},
    {"max_lease_s", 0, taups::ServerLimits::kMaxLeaseS, /*min_open=*/true},
    {"max_table_mb", 1, taups::ServerLimits::kMaxMb},
    {"memory_budget_mb", 0, taups::ServerLimits::kMaxMb},
    {"sparse_default_max_rows", taups::ServerLimits::kMinSparseRows,
     taups::ServerLimits::kMaxSparseRows},
    {"max_tables", 1, taups::ServerLimits::kMaxTables},
    {"max_keys_per_request", 1, taups::ServerLimits::kMaxKeys},
    {"max_pull_mb", 1, taups::ServerLimits::kMaxPullMb},
    {"max_pull_in_flight_mb", 1, taups::ServerLimits::kMaxMb},
    {"max_block_values", 1, taups::ServerLimits::kMaxBlockValues},
    {"max_table_name_length", 1, taups::kMaxTableNameLength},
    {"max_staged_mb", 1, taups::ServerLimits::kMaxMb},
    {"checkpoint_keep", 1, 1000},
    {"checkpoint_interval_s", 0, 7 * 86400},
    {"checkpoint_every_versions", 0, uint64_t{1} << 48},
    {"checkpoint_full_every", 1, 1000},
    {"checkpoint_every_steps", 0, uint64_t{1} << 48},
    {"checkpoint_restore_step", -1, int64_t{1} << 48},
    {"metrics_port", -1, 65535},
    {"max_workers", 1, taups::ServerLimits::kMaxWorkers},
    {"max_workers_per_table", 1, taups::ServerLimits::kMaxWorkers},
    {"max_waiting_per_worker", 1, taups::ServerLimits::kMaxWaitingCalls},
    {"max_waiting_calls", 1, taups::ServerLimits::kMaxWaitingCalls},
    {"max_wait_s", 0, 86400, /*min_open=*/true},
    {"apply_threads", 0, 64},
};

// The limits the flags ask for; the caller validates them (Start does).
taups::ServerLimits LimitsFromFlags() {
  taups::ServerLimits limits;
  limits.max_table_bytes = absl::GetFlag(FLAGS_max_table_mb) << 20;
  limits.memory_budget_bytes = absl::GetFlag(FLAGS_memory_budget_mb) << 20;
  if (limits.memory_budget_bytes == 0) {
    limits.memory_budget_bytes = taups::DefaultMemoryBudget();
  }
  // Only the default per-table limit follows a smaller budget; one given
  // explicitly above the budget is refused by Validate.
  if (absl::GetFlag(FLAGS_max_table_mb) == 2048) {
    limits.max_table_bytes =
        std::min(limits.max_table_bytes, limits.memory_budget_bytes);
  }
  limits.default_sparse_rows = absl::GetFlag(FLAGS_sparse_default_max_rows);
  limits.max_tables = absl::GetFlag(FLAGS_max_tables);
  limits.max_keys_per_request = absl::GetFlag(FLAGS_max_keys_per_request);
  limits.max_pull_bytes =
      std::min<uint64_t>(absl::GetFlag(FLAGS_max_pull_mb),
                         absl::GetFlag(FLAGS_max_message_mb))
      << 20;
  limits.max_pull_in_flight_bytes = absl::GetFlag(FLAGS_max_pull_in_flight_mb)
                                    << 20;
  limits.max_block_values = absl::GetFlag(FLAGS_max_block_values);
  limits.max_name_length = absl::GetFlag(FLAGS_max_table_name_length);
  limits.max_staged_bytes = absl::GetFlag(FLAGS_max_staged_mb) << 20;
  limits.max_workers = absl::GetFlag(FLAGS_max_workers);
  limits.max_workers_per_table = absl::GetFlag(FLAGS_max_workers_per_table);
  limits.max_waiting_per_worker = absl::GetFlag(FLAGS_max_waiting_per_worker);
  limits.max_waiting_calls = absl::GetFlag(FLAGS_max_waiting_calls);
  limits.max_lease_s = absl::GetFlag(FLAGS_max_lease_s);
  return limits;
}

// --config: the shards and tables of a cluster config file. --num_shards
// and --port left at their defaults yield to the file; set to anything
// else they must agree with it (a contradiction is refused, naming both).
absl::Status ApplyConfigFile(const std::string& host,
                             taups::ShardServerOptions& options) {
  const std::string path = absl::GetFlag(FLAGS_config);
  if (!absl::GetFlag(FLAGS_cluster_file).empty()) {
    return absl::InvalidArgumentError(
        "--config and --cluster_file both list the shards: give one");
  }
  absl::StatusOr<taups::ClusterConfig> config = taups::ReadClusterConfig(path);
  if (!config.ok()) return config.status();
  const auto shards = static_cast<uint32_t>(config->shards.size());
  if (taups::FlagOffDefault("num_shards") && absl::GetFlag(FLAGS_num_shards) != shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num_shards=", absl::GetFlag(FLAGS_num_shards), " but --config ",
        path, " lists ", shards, " shards"));
  }
  if (options.shard_index >= shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shard_index=", options.shard_index, " but --config ", path,
        " lists ", shards, " shards"));
  }
  const std::string& address = config->shards[options.shard_index];
  const int port = *taups::PortOf(address);  // checked when read
  if (taups::FlagOffDefault("port") && absl::GetFlag(FLAGS_port) != port) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--port=", absl::GetFlag(FLAGS_port), " but --config ", path,
        " gives shard ", options.shard_index, " the address ", address));
  }
  options.num_shards = shards;
  options.listen_address = absl::StrCat(host, ":", port);
  options.tables = std::move(config->tables);
  return absl::OkStatus();
}

int Fail(const absl::Status& status) {
  taups::LogFailure(status.ToString());
  return 1;
}

int FailFlags(const absl::Status& status) {
  taups::LogFailure(status.message());
  return taups::kExitBadFlags;
}

// The TLS and auth flags, each named file checked (errors name the flag).
absl::StatusOr<taups::ServerSecurity> SecurityFromFlags() {
  taups::ServerSecurity security;
  security.cert_file = absl::GetFlag(FLAGS_tls_cert);
  security.key_file = absl::GetFlag(FLAGS_tls_key);
  security.client_ca_file = absl::GetFlag(FLAGS_tls_ca);
  security.require_client_cert = absl::GetFlag(FLAGS_tls_require_client_cert);
  for (const auto& [flag, path] :
       {std::pair<const char*, std::string>{"--tls_cert", security.cert_file},
        {"--tls_key", security.key_file},
        {"--tls_ca", security.client_ca_file},
        {"--auth_file", absl::GetFlag(FLAGS_auth_file)}}) {
    if (path.empty()) continue;
    if (absl::Status s = taups::CheckReadableFile(flag, path); !s.ok()) return s;
  }
  if (security.cert_file.empty() != security.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!security.client_ca_file.empty() && security.cert_file.empty()) {
    return absl::InvalidArgumentError("--tls_ca needs --tls_cert");
  }
  if (security.require_client_cert && security.client_ca_file.empty()) {
    return absl::InvalidArgumentError("--tls_require_client_cert needs --tls_ca");
  }
  return security;
}

}  // namespace

int main(int argc, char** argv) {
  taups::KeepLargeBuffersMapped();
  taups::SkipLockOrderChecks();
  taups::StartToolOrExit(
      argc, argv,
      {.name = "ps_server",
       .usage =
           "ps_server: one shard of a tauPS parameter server.\n"
           "  ps_server --shard_index=0 --num_shards=2 --port=7000\n"
           "  ps_server --cluster_file=cluster.txt --shard_index=1\n"
           "Stops cleanly on SIGTERM or SIGINT. Exit status 2 for a flag out of\n"
           "range, 1 for other failures.",
       .ranges = {std::begin(kFlagRanges), std::end(kFlagRanges)},
       .daemon_log = [] {
         taups::LogOptions log;
         log.tag = absl::StrCat("ps_server[shard ",
                                absl::GetFlag(FLAGS_shard_index), "]");
         log.level = absl::GetFlag(FLAGS_log_level);
         return log;
       }});

  taups::ShardServerOptions options;
  absl::StatusOr<taups::ServerSecurity> security = SecurityFromFlags();
  if (!security.ok()) return FailFlags(security.status());
  options.security = *security;
  options.auth_file = absl::GetFlag(FLAGS_auth_file);
  options.allow_insecure_remote = absl::GetFlag(FLAGS_insecure);
  std::string host = absl::GetFlag(FLAGS_host);
  if (host.empty()) host = options.security.tls() ? "0.0.0.0" : "127.0.0.1";
  options.shard_index = absl::GetFlag(FLAGS_shard_index);
  options.num_shards = absl::GetFlag(FLAGS_num_shards);
  options.listen_address = absl::StrCat(host, ":", absl::GetFlag(FLAGS_port));
  if (!absl::GetFlag(FLAGS_config).empty()) {
    if (absl::Status s = ApplyConfigFile(host, options); !s.ok()) return Fail(s);
  } else if (!absl::GetFlag(FLAGS_cluster_file).empty()) {
    auto shards = taups::ReadClusterFile(absl::GetFlag(FLAGS_cluster_file));
    if (!shards.ok()) return Fail(shards.status());
    options.num_shards = static_cast<uint32_t>(shards->size());
    if (options.shard_index >= options.num_shards) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "--shard_index=", options.shard_index, " but the cluster file lists ",
          options.num_shards, " shards")));
    }
    auto port = taups::PortOf((*shards)[options.shard_index]);
    if (!port.ok()) return Fail(port.status());
    options.listen_address = absl::StrCat(host, ":", *port);
  }
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_mb) * (1 << 20);
  options.stats_interval = absl::Seconds(absl::GetFlag(FLAGS_stats_interval_s));
  options.max_wait = absl::Seconds(absl::GetFlag(FLAGS_max_wait_s));
  options.default_lease = absl::Seconds(absl::GetFlag(FLAGS_lease_s));
  if (absl::GetFlag(FLAGS_lease_s) > absl::GetFlag(FLAGS_max_lease_s)) {
    return FailFlags(absl::InvalidArgumentError(absl::StrCat(
        "--lease_s=", absl::GetFlag(FLAGS_lease_s), " is above --max_lease_s=",
        absl::GetFlag(FLAGS_max_lease_s),
        ": the default lease must be one a worker may ask for")));
  }
  options.limits = LimitsFromFlags();
  taups::TaskPool::SetSharedThreads(absl::GetFlag(FLAGS_apply_threads));
  if (absl::Status s = options.limits.Validate(); !s.ok()) return FailFlags(s);
  spdlog::info("memory budget {} MiB{}, at most {} MiB per table",
               options.limits.memory_budget_bytes >> 20,
               absl::GetFlag(FLAGS_memory_budget_mb) == 0 ? " (default)" : "",
               options.limits.max_table_bytes >> 20);
  options.checkpoints.dir = absl::GetFlag(FLAGS_checkpoint_dir);
  options.checkpoints.keep = absl::GetFlag(FLAGS_checkpoint_keep);
  options.checkpoints.interval =
      absl::Seconds(absl::GetFlag(FLAGS_checkpoint_interval_s));
  options.checkpoints.every_versions = absl::GetFlag(FLAGS_checkpoint_every_versions);
  options.checkpoints.full_every = absl::GetFlag(FLAGS_checkpoint_full_every);
  options.checkpoints.every_steps = absl::GetFlag(FLAGS_checkpoint_every_steps);
  if (absl::GetFlag(FLAGS_checkpoint_restore_step) >= 0) {
    options.checkpoints.restore_step = absl::GetFlag(FLAGS_checkpoint_restore_step);
  }
  options.start_empty = absl::GetFlag(FLAGS_start_empty);
  options.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  options.metrics_host = absl::GetFlag(FLAGS_metrics_host);

  // Signals are taken by a watcher thread; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Under systemd (Type=notify): STATUS= while restoring, READY=1 once
  // restored and listening, then WATCHDOG=1 and STATUS= from the ticker.
  const taups::SystemdNotifier systemd = taups::SystemdNotifier::FromEnvironment();
  taups::SystemdHeartbeat heartbeat(&systemd);
  options.on_tick = [&heartbeat](const taups::ParameterStore& store,
                                 const taups::ShardCheckpointer* checkpointer) {
    heartbeat.Beat(absl::Now(), store, checkpointer);
  };
  systemd.Send(options.checkpoints.dir.empty()
                   ? "STATUS=starting"
                   : "STATUS=restoring the newest checkpoint");
  auto server = taups::ShardServer::Start(options);
  if (!server.ok()) return Fail(server.status());

  for (const auto& [flag, path, port] :
       {std::tuple<const char*, std::string, int>{
            "--port_file", absl::GetFlag(FLAGS_port_file), (*server)->port()},
        std::tuple<const char*, std::string, int>{
            "--metrics_port_file", absl::GetFlag(FLAGS_metrics_port_file),
            (*server)->metrics_port()}}) {
    if (path.empty()) continue;
    if (absl::Status s = taups::WritePortFile(flag, path, port); !s.ok()) {
      return Fail(s);
    }
  }
  systemd.Send("READY=1");

  std::thread watcher([&signals, &systemd, s = server->get()] {
    int signal_number = 0;
    // SIGHUP rereads the auth file; SIGINT or SIGTERM stops the shard.
    while (sigwait(&signals, &signal_number) == 0 && signal_number == SIGHUP) {
      const absl::Status reloaded = s->ReloadAuth();
      if (reloaded.ok()) {
        spdlog::info("SIGHUP: auth file reloaded");
      } else if (absl::IsFailedPrecondition(reloaded)) {
        spdlog::info("SIGHUP: no --auth_file to reread");
      } else {
        spdlog::error("SIGHUP: {}; the principals loaded before stay",
                      std::string(reloaded.message()));
      }
    }
    spdlog::info("received signal {}, shutting down", signal_number);
    systemd.Send("STOPPING=1\nSTATUS=stopping: last checkpoint, then exit");
    s->Shutdown();
  });
  (*server)->Wait();
  watcher.join();
  return 0;
}
