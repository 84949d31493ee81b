#include "worker/src/client_core.h"

#include <unistd.h>

#include <limits>

#include "absl/strings/string_view.h"
#include "absl/strings/str_cat.h"
#include "common/refusal.h"
#include "common/shard_map.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"
#include "message_convert.h"

namespace taups {

absl::Duration RetryPolicy::Backoff(int attempt, uint64_t salt) const {
  absl::Duration delay = initial_backoff;
  for (int i = 1; i < attempt && delay < max_backoff; ++i) delay *= 2;
  delay = std::min(delay, max_backoff);
  const double jitter = static_cast<double>(MixKey(salt + attempt) % 1000) / 4000.0;
  return delay * (1.0 + jitter);
}

namespace {

template <typename T>
absl::StatusOr<T> Wait(std::future<absl::StatusOr<T>> future) {
  return future.get();
}

RetryPolicy PolicyFrom(const ClientOptions& options, RetryCounter* retries) {
  RetryPolicy policy;
  policy.retries = retries;
  policy.max_attempts = options.max_attempts;
  policy.budget = options.retry_budget;
  policy.call_timeout = options.call_timeout;
  policy.initial_backoff = options.initial_backoff;
  policy.max_backoff = options.max_backoff;
  return policy;
}

ClientOptions WithIncarnation(ClientOptions options) {
  if (options.worker_incarnation == 0) {
    options.worker_incarnation =
        MixKey(static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^
               (static_cast<uint64_t>(getpid()) << 20)) | 1;
  }
  return options;
}
}  // namespace

ClientCore::ClientCore(const ClientOptions& options,
                       std::vector<std::unique_ptr<ShardTransport>> shards)
    : options_(WithIncarnation(options)),
      policy_(PolicyFrom(options, &retries_)),
      shards_(std::move(shards)),
      incarnations_(new std::atomic<uint64_t>[shards_.size()]),
      restarts_(new std::atomic<uint64_t>[shards_.size()]),
      registrations_(new std::atomic<uint64_t>[shards_.size()]),
      redos_(new std::atomic<uint64_t>[shards_.size()]),
      heartbeat_failures_(new std::atomic<uint64_t>[shards_.size()]),
      lost_updates_(shards_.size()),
      leases_(new ShardLease[shards_.size()]),
      ownership_(std::make_shared<const OwnershipMap>(
          OwnershipMap::Initial(static_cast<uint32_t>(shards_.size())))) {
  for (size_t s = 0; s < shards_.size(); ++s) {
    incarnations_[s] = restarts_[s] = registrations_[s] = redos_[s] = 0;
    heartbeat_failures_[s] = 0;
  }
}

absl::StatusOr<std::unique_ptr<ClientCore>> ClientCore::Open(
    const ClientOptions& options,
    std::vector<std::unique_ptr<ShardTransport>> shards) {
  if (shards.empty()) {
    return absl::InvalidArgumentError("a client needs at least one shard");
  }
  auto client = std::make_unique<ClientCore>(options, std::move(shards));
  if (options.register_worker) RETURN_IF_ERROR(client->StartMembership());
  return client;
}

ClientCore::~ClientCore() {
  // A worker that did not say goodbye does now, so the shards record it as
  // having left rather than declare it dead when its lease runs out.
  const absl::Status left = Leave();
  if (!left.ok()) {
    spdlog::warn("worker {} could not leave every shard: {}; its lease will "
                 "run out there instead",
                 options_.worker_id, left.ToString());
  }
  if (!stop_heartbeats_.HasBeenNotified()) stop_heartbeats_.Notify();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  // Callbacks may still be unwinding after their futures became ready.
  absl::MutexLock lock(&calls_mu_);
  calls_mu_.Await(absl::Condition(
      +[](int64_t* n) { return *n == 0; }, &calls_in_flight_));
}

bool ClientCore::NoteIncarnation(uint32_t shard, uint64_t incarnation) {
  const uint64_t before = incarnations_[shard].exchange(incarnation);
  if (before != 0 && before != incarnation) {
    restarts_[shard].fetch_add(1);
    // A restarted shard knows no workers: count the lease as lapsed, so the
    // next push renews it first (EnsureLeases), which registers again; a
    // push that reached the new process unregistered would be refused, and
    // the refusal is what its seq answers from then on.
    leases_[shard].renewed_ns = 0;
    lost_updates_.Restarted(shard);
    spdlog::warn(
        "shard {} restarted (incarnation {:016x} -> {:016x}); pull before the "
        "next push, registering again first",
        shard, before, incarnation);
    return true;
  }
  return false;
}

bool ClientCore::NoteAnswer(uint32_t shard, uint64_t incarnation,
                            const std::string& table, uint64_t version) {
  const bool restarted = NoteIncarnation(shard, incarnation);
  lost_updates_.Saw(shard, table, version);
  return restarted;
}

ClientEvents ClientCore::Events() const {
  ClientEvents events;
  for (size_t s = 0; s < shards_.size(); ++s) {
    events.shard_restarts.push_back(restarts_[s].load());
    events.push_redos.push_back(redos_[s].load());
    events.heartbeat_failures.push_back(heartbeat_failures_[s].load());
  }
  events.updates_lost = lost_updates_.ByShard();
  events.retries = retries_.Counts();
  return events;
}

std::optional<ClientEvents> EventsOf(const Client& client) {
  const auto* core = dynamic_cast<const ClientCore*>(&client);
  if (core == nullptr) return std::nullopt;
  return core->Events();
}

bool ClientCore::RefusedUnregistered(const absl::Status& status) {
  // The structured reason only (common/refusal.h): a message that happens
  // to contain the words is not a reason to send a push again.
  return RefusalOf(status) == Refusal::kNotRegistered;
}

void ClientCore::NoteRedo(uint32_t shard, const std::string& table,
                          uint64_t refused_seq, uint64_t seq,
                          const absl::Status& refusal) {
  redos_[shard].fetch_add(1);
  spdlog::warn(
      "shard {} forgot worker {} (restarted, or its lease ran out) and did not "
      "apply push seq {} of table '{}' ({}); registered again, sending that "
      "shard's part once more as seq {}",
      shard, options_.worker_id, refused_seq, table, std::string(refusal.message()),
      seq);
}

v1::PushOrigin ClientCore::NextOrigin() {
  v1::PushOrigin origin;
  origin.set_worker_id(options_.worker_id);
  origin.set_worker_incarnation(options_.worker_incarnation);
  origin.set_seq(next_seq_.fetch_add(1));
  return origin;
}

std::shared_ptr<const OwnershipMap> ClientCore::Ownership() const {
  absl::MutexLock lock(&mu_);
  return ownership_;
}

absl::Status ClientCore::AdoptOwnership(const OwnershipMap& map) {
  absl::MutexLock lock(&mu_);
  if (map.num_shards() != shards_.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ownership map epoch ", map.epoch(), " is for ", map.num_shards(),
        " shards; this client has ", shards_.size()));
  }
  if (map.epoch() < ownership_->epoch() ||
      (map.epoch() == ownership_->epoch() && !(map == *ownership_))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ownership map epoch ", map.epoch(), " does not follow the map in use (epoch ",
        ownership_->epoch(), ")"));
  }
  ownership_ = std::make_shared<const OwnershipMap>(map);
  // Dense plans follow the new map at each table's next use.
  tables_.clear();
  return absl::OkStatus();
}

std::shared_ptr<const ClientCore::TableMeta> ClientCore::Remember(
    const TableConfig& config) {
  auto meta = std::make_shared<TableMeta>();
  meta->config = config;
  absl::MutexLock lock(&mu_);
  // Planned under the lock, so a plan never outlives the map it was made by.
  meta->ownership = ownership_;
  if (config.kind == TableKind::kDense) {
    meta->slices = PlanDenseSlices(*meta->ownership, config.dense_size,
                                   options_.slice_bytes / sizeof(float));
  }
  tables_[config.name] = meta;
  return meta;
}

absl::StatusOr<std::shared_ptr<const ClientCore::TableMeta>> ClientCore::Meta(
    absl::string_view name) {
  {
    absl::MutexLock lock(&mu_);
    auto it = tables_.find(name);
    if (it != tables_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(TableConfig config, OpenTable(name));
  return Remember(config);
}

std::vector<uint64_t> ClientCore::BaseVersions(const std::string& table,
                                               const PullInfo* basis) {
  if (basis != nullptr) return basis->shard_versions;
  absl::MutexLock lock(&mu_);
  auto it = last_pulled_.find(table);
  if (it == last_pulled_.end()) return std::vector<uint64_t>(shards_.size(), 0);
  return it->second;
}

void ClientCore::RecordPull(const std::string& table, const PullInfo& info) {
  absl::MutexLock lock(&mu_);
  std::vector<uint64_t>& versions = last_pulled_[table];
  versions.resize(shards_.size(), 0);
  for (size_t s = 0; s < shards_.size(); ++s) {
    if (info.shard_touched[s]) versions[s] = info.shard_versions[s];
  }
}

absl::Status ClientCore::CreateTable(const TableConfig& config) {
  RETURN_IF_ERROR(config.Validate());
  v1::CreateTableRequest request;
  ToWire(config, request.mutable_config());
  request.set_exist_ok(true);
  RETURN_IF_ERROR((CallEveryShard<v1::CreateTableRequest>(
      request,
      [this](uint32_t s, v1::CreateTableResponse* response) {
        NoteIncarnation(s, response->server_incarnation());
        if (response->info().num_shards() != shards_.size()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "shard ", s, " believes the cluster has ",
              response->info().num_shards(), " shards; this client has ",
              shards_.size()));
        }
        return absl::OkStatus();
      })));
  Remember(config);
  return absl::OkStatus();
}

absl::StatusOr<TableConfig> ClientCore::OpenTable(absl::string_view name) {
  absl::Mutex mu;
  std::vector<TableConfig> configs;
  v1::GetTableRequest request;
  request.set_name(std::string(name));
  // The callbacks have all run when CallEveryShard returns, so they may use
  // these locals by reference.
  RETURN_IF_ERROR((CallEveryShard<v1::GetTableRequest>(
      request,
      [this, &mu, &configs](uint32_t s, v1::GetTableResponse* response) {
        NoteIncarnation(s, response->server_incarnation());
        absl::StatusOr<TableConfig> config = FromWire(response->info().config());
        if (!config.ok()) return config.status();
        absl::MutexLock lock(&mu);
        configs.push_back(*std::move(config));
        return absl::OkStatus();
      })));
  for (const TableConfig& config : configs) {
    if (!(config == configs.front())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table '", name, "' has different configurations on different shards"));
    }
  }
  return configs.front();
}

absl::Status ClientCore::SetConsistency(absl::string_view table,
                                        const ConsistencyConfig& consistency,
                                        const StalenessConfig& staleness) {
  v1::SetConsistencyRequest request;
  request.set_table(std::string(table));
  ToWire(consistency, request.mutable_consistency());
  ToWire(staleness, request.mutable_staleness());
  RETURN_IF_ERROR(
      (CallEveryShard<v1::SetConsistencyRequest>(
          request,
          [](uint32_t, v1::SetConsistencyResponse*) {
            return absl::OkStatus();
          })));
  absl::MutexLock lock(&mu_);
  tables_.erase(table);  // re-read the config on next use
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ClientCore::DropTable(absl::string_view name) {
  v1::DropTableRequest request;
  request.set_name(std::string(name));
  std::atomic<uint64_t> freed{0};
  // The callbacks have all run when CallEveryShard returns.
  const absl::Status dropped = CallEveryShard<v1::DropTableRequest>(
      request, [this, &freed](uint32_t s, v1::DropTableResponse* response) {
        NoteIncarnation(s, response->server_incarnation());
        freed.fetch_add(response->freed_bytes());
        return absl::OkStatus();
      });
  {
    absl::MutexLock lock(&mu_);
    tables_.erase(name);
  }
  RETURN_IF_ERROR(dropped);
  return freed.load();
}

absl::StatusOr<std::vector<TableShardStats>> ClientCore::Stats(
    absl::string_view table) {
  std::vector<TableShardStats> all(shards_.size());
  v1::StatsRequest request;
  request.set_table(std::string(table));
  // Each callback writes only its own shard's entry.
  RETURN_IF_ERROR((CallEveryShard<v1::StatsRequest>(
      request,
      [&all](uint32_t s, v1::StatsResponse* r) {
        if (r->tables_size() != 1) {
          return absl::InternalError(absl::StrCat(
              "shard ", s, " answered Stats with ", r->tables_size(), " tables"));
        }
        TableShardStats* out = &all[s];
        const v1::TableStats& t = r->tables(0);
        out->shard = s;
        out->version = t.info().version();
        out->pushes = t.pushes();
        out->rejected = t.rejected();
        out->downweighted = t.downweighted();
        out->push_raw_bytes = t.push_raw_bytes();
        out->push_wire_bytes = t.push_wire_bytes();
        out->pull_raw_bytes = t.pull_raw_bytes();
        out->pull_wire_bytes = t.pull_wire_bytes();
        out->encoded_pushes = t.encoded_pushes();
        out->bad_blocks = t.bad_blocks();
        out->late = t.late_pushes();
        out->tau_mean = t.tau().mean();
        out->tau_p50 = t.tau().p50();
        out->tau_p99 = t.tau().p99();
        out->tau_max = t.tau().max();
        out->steps_closed = t.steps_closed();
        out->timeout_closes = t.timeout_closes();
        out->step_wait_p50_s = t.step_wait_s().p50();
        out->step_wait_p99_s = t.step_wait_s().p99();
        out->step_wait_max_s = t.step_wait_s().max();
        out->last_straggler = t.has_straggler() ? t.last_straggler() : -1;
        out->live_workers = r->live_workers();
        out->dead_workers = r->dead_workers();
        out->lease_expirations = r->lease_expirations();
        const v1::TableInfo& info = t.info();
        out->sparse_rows = info.sparse_rows();
        out->sparse_evictions = info.sparse_evictions();
        out->sparse_ttl_expired = info.sparse_ttl_expired();
        out->sparse_refused = info.sparse_refused();
        out->sparse_bytes = info.sparse_bytes();
        out->sparse_row_limit = info.sparse_row_limit();
        out->row_tau_count = info.sparse_row_tau().count();
        out->row_tau_mean = info.sparse_row_tau().mean();
        out->row_tau_p50 = info.sparse_row_tau().p50();
        out->row_tau_p99 = info.sparse_row_tau().p99();
        out->row_tau_max = info.sparse_row_tau().max();
        for (const v1::WorkerStats& w : t.workers()) {
          WorkerShardStats& ws = out->workers.emplace_back();
          ws.worker_id = w.worker_id();
          ws.live = w.live();
          ws.clock = w.clock();
          ws.last_seen_age_s = w.last_seen_age_s();
          ws.tau_mean = w.tau().mean();
          ws.tau_max = w.tau().max();
          ws.pushes = w.tau().count();
          ws.rejected = w.rejected();
          ws.downweighted = w.downweighted();
          ws.closed_steps_as_last = w.steps_closed_last();
          ws.missed_steps = w.missed_steps();
        }
        return absl::OkStatus();
      })));
  return all;
}

absl::StatusOr<PullInfo> ClientCore::PullDense(absl::string_view table,
                                               absl::Span<float> values) {
  return Wait(PullDenseAsync(table, values));
}

absl::StatusOr<PushResult> ClientCore::PushDense(
    absl::string_view table, absl::Span<const float> gradient,
    const PullInfo* basis) {
  return Wait(PushDenseImpl(table, gradient, nullptr, basis,
                            /*borrow_gradient=*/true));
}

}  // namespace taups
