#include "server/shard_server.h"

#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <cmath>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/grpc_lifetime.h"
#include "common/log_rate_limiter.h"
#include "common/shard_map.h"
#include "server/cluster_file.h"
#include "server/grpc_service.h"
#include "server/listen_check.h"
#include "server/parameter_store.h"
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
  if (default_lease <= absl::ZeroDuration() ||
      tick_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("lease and tick interval must be > 0");
  }
  if (max_message_bytes < (1 << 20)) {
    return absl::InvalidArgumentError("max_message_bytes must be >= 1 MiB");
  }
  return limits.Validate();
}

struct ShardServer::State {
  ShardServerOptions options;
  uint64_t incarnation = 0;
  int port = 0;
  std::unique_ptr<ParameterStore> store;
  std::unique_ptr<ParameterServerService> service;
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
  state->service = std::make_unique<ParameterServerService>(
      state->store.get(), state->incarnation);

  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which lets a second shard bind a
  // port that one already listens on (and the kernel split the calls
  // between them). A port in use must be an error instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.listen_address,
                           grpc::InsecureServerCredentials(), &state->port);
  builder.RegisterService(state->service.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  state->server = builder.BuildAndStart();
  if (state->server == nullptr || state->port == 0) {
    return ExplainListenFailure(options.listen_address);
  }
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
  if (options.stats_interval > absl::ZeroDuration()) {
    spdlog::info("stats lines every {} per table that changed",
                 absl::FormatDuration(options.stats_interval));
  }
  {
    // One background thread: leases and step timeouts every tick, held-back
    // repeats of rate-limited warnings once a second, a stats line every
    // stats_interval.
    State* s = state.get();
    state->stats_thread = std::thread([s] {
      absl::Time next_stats = absl::Now() + s->options.stats_interval;
      absl::Time next_repeats = absl::Now() + absl::Seconds(1);
      while (!s->stop_stats.WaitForNotificationWithTimeout(
          s->options.tick_interval)) {
        s->store->Tick();
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
  return std::unique_ptr<ShardServer>(new ShardServer(std::move(state)));
}

ShardServer::ShardServer(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

ShardServer::~ShardServer() {
  Shutdown();
  Wait();
}

int ShardServer::port() const { return state_->port; }
uint64_t ShardServer::incarnation() const { return state_->incarnation; }

void ShardServer::Wait() { state_->shut_down.WaitForNotification(); }

void ShardServer::Shutdown(absl::Duration grace) {
  std::call_once(state_->shutdown_once, [this, grace] {
    state_->server->Shutdown(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(absl::ToInt64Milliseconds(grace)));
    state_->server->Wait();
    state_->stop_stats.Notify();
    if (state_->stats_thread.joinable()) state_->stats_thread.join();
    LogStats(*state_->store, state_->last_stats, /*all=*/true);  // final figures
    LogOverdueRepeats(DefaultLogRateLimiter(), spdlog::level::warn,
                      /*include_recent=*/true);
    spdlog::info("shard {} stopped", state_->options.shard_index);
    state_->shut_down.Notify();
  });
}

}  // namespace taups
