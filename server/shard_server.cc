#include "server/shard_server.h"

#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/grpc_lifetime.h"
#include "common/log_rate_limiter.h"
#include "common/shard_map.h"
#include "server/cluster_file.h"
#include "server/grpc_auth.h"
#include "server/grpc_health.h"
#include "server/grpc_service.h"
#include "server/lent_values.h"
#include "server/listen_check.h"
#include "common/build_info.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "server/configured_tables.h"
#include "server/parameter_store.h"
#include "server/shard_metrics.h"
#include "proto/grpc_credentials.h"
#include "spdlog/spdlog.h"

namespace taups {

absl::Status ShardServerOptions::Validate() const {
  if (num_shards == 0 || shard_index >= num_shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard_index ", shard_index, " must be below num_shards ", num_shards));
  }
  if (listen_address.empty()) {
    return absl::InvalidArgumentError("listen address is empty");
  }
  if (absl::Status s = security.Validate(); !s.ok()) return s;
  const bool loopback = IsLoopbackHost(HostOf(listen_address));
  if (!security.tls() && !loopback && !allow_insecure_remote) {
    return absl::InvalidArgumentError(absl::StrCat(
        "without TLS a shard listens on loopback only, not ", listen_address,
        " (give a TLS certificate, or allow plaintext with --insecure)"));
  }
  if (!auth_file.empty() && !security.tls() && !loopback) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tokens without TLS are checked over local credentials, which serve "
        "loopback only, not ", listen_address, " (give a TLS certificate)"));
  }
  if (default_lease <= absl::ZeroDuration() ||
      tick_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("lease and tick interval must be > 0");
  }
  if (max_wait <= absl::ZeroDuration() || max_wait > absl::Hours(24)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_wait ", absl::FormatDuration(max_wait), " is not in (0, 24h]"));
  }
  if (max_message_bytes < (1 << 20)) {
    return absl::InvalidArgumentError("max_message_bytes must be >= 1 MiB");
  }
  if (!checkpoints.dir.empty()) {
    absl::Status valid = checkpoints.Validate();
    if (!valid.ok()) return valid;
  }
  if (metrics_port < -1 || metrics_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics port ", metrics_port, " is not in [-1, 65535]"));
  }
  return limits.Validate();
}

struct ShardServer::State {
  ShardServerOptions options;
  uint64_t incarnation = 0;
  int port = 0;
  std::unique_ptr<ParameterStore> store;
  std::unique_ptr<AuthGate> auth;  // null: no authentication
  std::unique_ptr<ShardCheckpointer> checkpointer;  // null: no checkpoint dir
  std::unique_ptr<ParameterServerService> service;
  MetricsRegistry metrics;
  std::atomic<bool> ready{false};  // restore done, serving
  absl::Time started = absl::Now();
  std::unique_ptr<MetricsHttpServer> metrics_server;
  std::unique_ptr<grpc::Server> server;
  absl::Notification stop_stats;
  std::thread stats_thread;
  // The last stats line logged per table, so an unchanged table is not
  // logged again. Used by the stats thread, then by Shutdown() after joining
  // it; never concurrently.
  absl::flat_hash_map<std::string, std::string> last_stats;
  std::once_flag shutdown_once;
  absl::Notification shut_down;
};

namespace {

uint64_t NewIncarnation() {
  const uint64_t now = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  const uint64_t mixed = MixKey(now ^ (static_cast<uint64_t>(getpid()) << 32));
  return mixed == 0 ? 1 : mixed;
}

// Logs one stats line per table whose line differs from the one in `last`
// (every table when `all`), and records what it logged there.
void LogStats(const ParameterStore& store,
              absl::flat_hash_map<std::string, std::string>& last, bool all) {
  const StoreStats stats = store.Stats();
  size_t live = 0;
  for (const WorkerStatus& w : stats.workers) live += w.live ? 1 : 0;
  for (const auto& [info, t] : stats.tables) {
    std::string steps;
    if (t.steps_closed > 0) {
      steps = absl::StrCat(
          " steps=", t.steps_closed, " timeouts=", t.timeout_closes,
          " wait_p50=", absl::FormatDuration(absl::Seconds(t.step_wait_s.Percentile(0.5))),
          " wait_p99=", absl::FormatDuration(absl::Seconds(t.step_wait_s.Percentile(0.99))),
          t.last_straggler >= 0 ? absl::StrCat(" straggler=worker", t.last_straggler)
                                : std::string());
    }
    std::string line = fmt::format(
        "stats shard={} table={} {} version={} pushes={} tau_mean={:.2f} "
        "tau_p99={} tau_max={} rejected={} downweighted={} late={}{} "
        "workers_live={}/{}{}",
        info.shard_index, info.config.name,
        ConsistencyKindName(info.config.consistency.kind), info.version,
        t.pushes, t.tau.mean(), t.tau.Percentile(0.99), t.tau.max(),
        t.rejected, t.downweighted, t.late, steps, live, stats.workers.size(),
        info.config.kind == TableKind::kSparse
            ? absl::StrCat(" rows=", info.sparse_rows, " evicted=",
                           info.sparse_evictions, " ttl_expired=",
                           info.sparse_ttl_expired, " refused=",
                           info.sparse_refused, " bytes=", info.sparse_bytes,
                           t.row_tau.count() == 0
                               ? std::string()
                               : absl::StrCat(" row_tau_mean=",
                                              std::round(t.row_tau.mean() * 100) / 100,
                                              " row_tau_max=", t.row_tau.max()))
            : std::string());
    std::string& previous = last[info.config.name];
    if (all || line != previous) {
      spdlog::info("{}", line);
      previous = std::move(line);
    }
  }
}

// The smallest open step of the restored sync / semi-sync tables, when the
// shard restored its newest checkpoint on its own (not a step every shard
// was told to restore, --checkpoint_restore_step): the other shards went on
// past it, so until a rollback this shard's later step cuts are not a model
// that existed.
std::optional<uint64_t> ResumedAlone(const ShardServerOptions& options,
                                     const RestoreReport& restored,
                                     const ParameterStore& store) {
  if (options.checkpoints.restore_step.has_value()) return std::nullopt;
  std::optional<uint64_t> step;
  for (const PartitionSummary& table : restored.tables) {
    absl::StatusOr<TableInfo> info = store.GetTable(table.table);
    if (!info.ok() || info->config.consistency.kind == ConsistencyKind::kAsync) continue;
    step = std::min(step.value_or(table.open_step), table.open_step);
  }
  return step;
}

// Loads the newest valid checkpoint into the empty store, or decides that
// this is a first start. *resumed_step: see ResumedAlone.
absl::Status RestoreOrStartEmpty(const ShardServerOptions& options,
                                 ShardCheckpointer& checkpointer,
                                 ParameterStore& store,
                                 std::optional<uint64_t>* resumed_step) {
  absl::StatusOr<RestoreReport> restored = checkpointer.Restore();
  if (absl::IsNotFound(restored.status())) {
    if (!options.start_empty) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no valid checkpoint in ", options.checkpoints.dir,
          "; refusing to start with empty tables (pass --start_empty for a "
          "shard's first start)"));
    }
    spdlog::warn("shard {}: no checkpoint in {}; starting empty (--start_empty)",
                 options.shard_index, options.checkpoints.dir);
    return absl::OkStatus();
  }
  if (!restored.ok()) return restored.status();
  for (const std::string& broken : restored->broken) {
    spdlog::error("shard {}: checkpoint {} was corrupt or partial; renamed to "
                  "*.broken and an older one used", options.shard_index, broken);
  }
  const absl::Duration age = absl::Now() - restored->created;
  for (const PartitionSummary& table : restored->tables) {
    // Workers that register again report what they saw after this
    // checkpoint; RestoreLosses logs and counts it.
    store.restore_losses().Restored(table.table, table.version, table.open_step);
    spdlog::warn("shard {} restored table '{}' at version {}{} from {} "
                 "(written {} ago); updates applied after it are lost (workers "
                 "that register again report how many) and workers pull again", options.shard_index, table.table,
                 table.version,
                 table.open_step > 0 ? absl::StrCat(" (step ", table.open_step, ")")
                                     : std::string(),
                 restored->path, absl::FormatDuration(absl::Trunc(age, absl::Milliseconds(1))));
  }
  *resumed_step = ResumedAlone(options, *restored, store);
  if (resumed_step->has_value()) {
    spdlog::warn("shard {} resumed its sync tables at step {} on its own: until "
                 "`ps_admin rollback` brings every shard to one step cut, the "
                 "model mixes this checkpoint with the other shards' later steps",
                 options.shard_index, **resumed_step);
  }
  return absl::OkStatus();
}

// One line saying how the port is protected; a loud one when it is not.
void LogTransport(const ShardServerOptions& options,
                  const ServerSecurity& security, const AuthGate* auth) {
  const std::string principals =
      auth == nullptr
          ? std::string("no authentication")
          : absl::StrCat(auth->principals()->principals(),
                         " principals from ", options.auth_file);
  if (security.tls()) {
    spdlog::info("transport: TLS{}; {}",
                 security.require_client_cert ? " requiring client certificates"
                 : security.client_ca_file.empty() ? ""
                                                   : " with optional client certificates",
                 principals);
  } else if (!IsLoopbackHost(HostOf(options.listen_address))) {
    spdlog::warn("transport: INSECURE plaintext on {} with no authentication "
                 "(--insecure): anyone who reaches this port may read and "
                 "change every table", options.listen_address);
  } else {
    spdlog::info("transport: {} on loopback; {}",
                 security.local ? "local credentials" : "plaintext", principals);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardServer>> ShardServer::Start(
    const ShardServerOptions& options) {
  absl::Status valid = options.Validate();
  if (!valid.ok()) return valid;
  KeepGrpcInitialized();
  auto state = std::make_unique<State>();
  state->options = options;
  state->incarnation = NewIncarnation();
  state->store = std::make_unique<ParameterStore>(
      options.shard_index, options.num_shards, RealClock::Get(),
      options.default_lease, options.limits);
  ServerSecurity security = options.security;
  if (!options.auth_file.empty()) {
    absl::StatusOr<std::unique_ptr<AuthGate>> auth =
        AuthGate::Open(options.auth_file);
    if (!auth.ok()) return auth.status();
    state->auth = std::move(*auth);
    security.local = !security.tls();  // gRPC checks tokens on secure ports only
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(security);
  if (!credentials.ok()) return credentials.status();
  state->service = std::make_unique<ParameterServerService>(
      state->store.get(), state->incarnation, state->auth.get(),
      options.max_wait);
  State* s = state.get();
  if (options.metrics_port >= 0) {
    // Up before the restore, so probes see "not ready" while it runs.
    state->metrics.Add(ShardMetricsCollector(
        state->store.get(), &state->service->traffic(),
        BuildLabels{std::string(GetBuildInfo().version),
                    std::string(GetBuildInfo().commit),
                    std::string(GetBuildInfo().build_type)}));
    state->metrics.Add([buffers = state->service->answer_buffers(),
                        admitted = state->service->answers_in_flight()](
                           MetricsWriter& out) {
      PullAnswerMemory memory;
      memory.buffers_in_flight = buffers->lent_bytes();
      memory.buffers_kept = buffers->kept_bytes();
      memory.displaced_lent = DisplacedLentBytes();
      memory.admitted = admitted->bytes_in_flight();
      memory.admitted_limit = admitted->limit_bytes();
      memory.refused = admitted->refused();
      WritePullAnswerMetrics(memory, out);
    });
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> http =
        MetricsHttpServer::Start({options.metrics_host, options.metrics_port},
                                 &state->metrics, [s] { return s->ready.load(); });
    if (!http.ok()) return http.status();
    state->metrics_server = std::move(*http);
    spdlog::info("metrics on http://{}:{}/metrics", options.metrics_host,
                 state->metrics_server->port());
  }
  std::optional<uint64_t> resumed_step;  // ResumedAlone
  if (!options.checkpoints.dir.empty()) {
    absl::StatusOr<std::unique_ptr<ShardCheckpointer>> checkpointer =
        ShardCheckpointer::Open(state->store.get(), PosixCheckpointFs(),
                                options.checkpoints, state->incarnation);
    if (!checkpointer.ok()) return checkpointer.status();
    state->checkpointer = std::move(*checkpointer);
    absl::Status restored = RestoreOrStartEmpty(options, *state->checkpointer,
                                                *state->store, &resumed_step);
    if (!restored.ok()) return restored;
    if (const size_t awaited = state->store->AwaitRestoredWorkers(); awaited > 0) {
      spdlog::info("shard {}: steps wait for the {} workers the checkpoint "
                   "knew until each registers again (or one lease and one "
                   "heartbeat pass)", options.shard_index, awaited);
    }
    state->metrics.Add([s](MetricsWriter& out) { s->checkpointer->WriteMetrics(out); });
  }
  if (absl::Status made = CreateConfiguredTables(options.tables, *state->store);
      !made.ok()) {
    return made;
  }

  state->service->SetShardLife(
      {state->checkpointer.get(), state->started, &state->ready, resumed_step});
  EnableHealthAndReflection();  // before the builder: it collects plugins
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which lets a second shard bind a
  // port that one already listens on (and the kernel split the calls
  // between them). A port in use must be an error instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.listen_address, *credentials, &state->port);
  builder.RegisterService(state->service.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  state->server = builder.BuildAndStart();
  if (state->server == nullptr || state->port == 0) {
    return ExplainListenFailure(options.listen_address);
  }
  SetServingHealth(*state->server, false);  // until Start has finished
  const absl::StatusOr<int> requested = PortOf(options.listen_address);
  if (requested.ok() && *requested != 0 && *requested != state->port) {
    state->server->Shutdown();
    return absl::UnavailableError(absl::StrCat(
        "asked to listen on ", options.listen_address, " but bound port ",
        state->port));
  }
  spdlog::info("shard {}/{} serving on port {} (incarnation {:016x})",
               options.shard_index, options.num_shards, state->port,
               state->incarnation);
  LogTransport(options, security, state->auth.get());
  if (options.stats_interval > absl::ZeroDuration()) {
    spdlog::info("stats lines every {} per table that changed",
                 absl::FormatDuration(options.stats_interval));
  }
  {
    // One background thread: leases and step timeouts every tick, held-back
    // repeats of rate-limited warnings once a second, a stats line every
    // stats_interval.
    state->stats_thread = std::thread([s] {
      absl::Time next_stats = absl::Now() + s->options.stats_interval;
      absl::Time next_repeats = absl::Now() + absl::Seconds(1);
      while (!s->stop_stats.WaitForNotificationWithTimeout(
          s->options.tick_interval)) {
        s->store->Tick();
        if (s->options.on_tick) s->options.on_tick(*s->store, s->checkpointer.get());
        if (absl::Now() >= next_repeats) {
          LogOverdueRepeats(DefaultLogRateLimiter(), spdlog::level::warn);
          next_repeats = absl::Now() + absl::Seconds(1);
        }
        if (s->options.stats_interval > absl::ZeroDuration() &&
            absl::Now() >= next_stats) {
          LogStats(*s->store, s->last_stats, /*all=*/false);
          next_stats = absl::Now() + s->options.stats_interval;
        }
      }
    });
  }
  if (state->checkpointer) state->checkpointer->StartBackground();
  state->ready = true;
  SetServingHealth(*state->server, true);  // grpc.health.v1: restore done
  return std::unique_ptr<ShardServer>(new ShardServer(std::move(state)));
}

ShardServer::ShardServer(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

ShardServer::~ShardServer() {
  Shutdown();
  Wait();
}

int ShardServer::port() const { return state_->port; }
int ShardServer::metrics_port() const {
  return state_->metrics_server ? state_->metrics_server->port() : -1;
}

absl::Status ShardServer::ReloadAuth() {
  if (!state_->auth) {
    return absl::FailedPreconditionError("this shard has no auth file");
  }
  return state_->auth->Reload();
}

absl::Status ShardServer::Checkpoint() {
  if (!state_->checkpointer) {
    return absl::FailedPreconditionError("this shard has no checkpoint dir");
  }
  return state_->checkpointer->TakeNow().status();
}
uint64_t ShardServer::incarnation() const { return state_->service->incarnation(); }

void ShardServer::Wait() { state_->shut_down.WaitForNotification(); }

void ShardServer::Shutdown(absl::Duration grace) {
  std::call_once(state_->shutdown_once, [this, grace] {
    state_->ready = false;  // ShardStatus says so while calls drain
    SetServingHealth(*state_->server, false);
    // Parked pulls would otherwise hold the shutdown until `grace`.
    state_->store->CloseWaits(absl::UnavailableError(absl::StrCat(
        "shard ", state_->options.shard_index, " shutting down")));
    state_->server->Shutdown(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(absl::ToInt64Milliseconds(grace)));
    state_->server->Wait();
    state_->stop_stats.Notify();
    if (state_->stats_thread.joinable()) state_->stats_thread.join();
    // Every call has finished: this checkpoint holds each acknowledged push.
    if (state_->checkpointer) state_->checkpointer->TakeNow().IgnoreError();
    LogStats(*state_->store, state_->last_stats, /*all=*/true);  // final figures
    LogOverdueRepeats(DefaultLogRateLimiter(), spdlog::level::warn,
                      /*include_recent=*/true);
    spdlog::info("shard {} stopped", state_->options.shard_index);
    state_->shut_down.Notify();
  });
}

}  // namespace taups
