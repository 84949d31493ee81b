// tauPS worker client: the library a training job links to pull parameters
// from and push gradients to a sharded tauPS cluster.
//
//   taups::ClientOptions options;
//   options.servers = {"127.0.0.1:7000", "127.0.0.1:7001"};
//   options.worker_id = 3;
//   auto client = taups::Client::Connect(options);
//   if (!client.ok()) ...
//   (*client)->CreateTable(taups::TableConfig::Dense("mlp", n));
//   std::vector<float> params(n), grad(n);
//   (*client)->PullDense("mlp", absl::MakeSpan(params));
//   ... compute grad on params ...
//   auto result = (*client)->PushDense("mlp", grad);  // tau per shard inside
//
// Versions: every pull records, per table and shard, the version it read; the
// next push of that table sends it as `base_version`, so the server measures
// how stale the gradient is. Pass an explicit `basis` to push against another
// pull (pipelined training).
//
// Thread-safety: a Client is safe to use from many threads at once. Spans
// passed to the *Async forms must stay valid until the future is ready, and
// every future must be ready before the Client is destroyed. A sparse pull or
// push of 8,192 keys or more to several shards builds its shards' requests
// on a pool of up to 3 helper threads, made on first use and shared by every
// Client of the process; such a push to one shard has one of them merge its
// rows while the calling thread groups its keys.
//
// Consistency: on sync, semi_sync and ssp tables a pull waits (up to
// call_timeout) until the table's policy lets this worker's clock read; call
// Clock() after each step.
//
// Every call has a deadline (ClientOptions::call_timeout) and retries with
// exponential backoff while a shard answers UNAVAILABLE (for at least
// max_attempts attempts and retry_budget); pushes are also resent after a
// deadline passed, which shards answer once (a duplicate is not applied).
//
// Membership: with register_worker (the default) the client holds a lease on
// every shard, renewed in the background. A worker that is done calls
// Leave(); destroying the Client leaves too if Leave() was not called. A
// worker whose lease ran out (the process was stopped, the network cut)
// registers again on its own, and its clock moves to the step the shard
// gives it at the start of its next step (its next pull).
#ifndef TAUPS_CLIENT_H_
#define TAUPS_CLIENT_H_

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "taups/compression.h"
#include "taups/table_config.h"

namespace taups {

struct ClientOptions {
  // One "host:port" per shard, in shard-index order.
  std::vector<std::string> servers;
  uint32_t worker_id = 0;
  // Distinguishes restarts of the same worker id; 0 = pick one at Connect.
  uint64_t worker_incarnation = 0;
  // Deadline of each RPC attempt.
  absl::Duration call_timeout = absl::Seconds(30);
  // Connect() waits this long for every shard to come up.
  absl::Duration connect_timeout = absl::Seconds(30);
  // Attempts per RPC while the shard answers UNAVAILABLE (>= 1).
  int max_attempts = 8;
  // ... and keep retrying until this long after a call's first attempt, so
  // a worker rides through a shard's restart (systemd's RestartSec plus the
  // checkpoint restore) instead of failing: the restarted shard answers
  // with a new incarnation, pushes computed on parameters it no longer has
  // come back accepted = false, and the next pull brings its values.
  absl::Duration retry_budget = absl::Seconds(60);
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(2);
  // Dense transfers are cut into slices of at most this many bytes, sent
  // concurrently: gRPC moves several ~1 MiB messages faster than one large one.
  size_t slice_bytes = size_t{1} << 20;
  // gRPC channels opened to each shard; slices are spread over them.
  int channels_per_shard = 2;
  // Register with every shard at Connect and renew the lease by heartbeat
  // from a background thread. Required by sync, semi_sync and ssp tables
  // (they count registered workers); harmless for async ones.
  bool register_worker = true;
  // Lease asked for; zero = the server's default (ps_server --lease_s).
  absl::Duration lease = absl::ZeroDuration();
  // Transport security (docs/SECURITY.md). A PEM CA bundle the shards'
  // certificates are checked against turns TLS on; a client certificate
  // and key (both or neither) make it mutual TLS; tls_server_name is the
  // name the shards' certificates carry when it is not the host dialled.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_server_name;
  // Bearer token of this client's principal, sent with every call (the
  // shard's auth file gives it a role and, for workers, its worker ids).
  // Without TLS it only goes to loopback shards, over gRPC local
  // credentials. Keep it out of logs and command lines.
  std::string auth_token;

  absl::Status Validate() const;
};

// What a sparse pull returns besides the rows.
struct SparsePullOptions {
  // Also return every key's row version (PullInfo::row_versions). A
  // PushSparse whose basis is this pull (explicit, or the last pull of the
  // table) then sends them back and gets each row's tau.
  bool row_versions = false;
};

// What a pull read: the table version on each shard it touched.
struct PullInfo {
  std::vector<uint64_t> shard_versions;  // indexed by shard; 0 where untouched
  std::vector<bool> shard_touched;
  uint64_t server_incarnation_changed = 0;  // shards whose incarnation changed
  // sync / semi_sync: the step the table is gathering (the client's clock
  // moves up to it if it was behind).
  uint64_t step = 0;
  // Time the pull spent, including any wait for the table's policy.
  absl::Duration elapsed;
  // Sparse pulls with SparsePullOptions::row_versions, in the caller's key
  // order: the keys pulled, and each key's row version, the number of
  // updates applied to that row on its shard since the row was created. A
  // row that was evicted or expired and comes back is created anew and
  // restarts at version 0; a key not admitted yet reads 0. Empty otherwise.
  std::vector<uint64_t> row_keys;
  std::vector<uint64_t> row_versions;
};

struct ShardPushResult {
  bool touched = false;  // false: this push sent nothing to the shard
  bool accepted = false;
  uint64_t tau = 0;
  float lr_factor = 1.0f;
  uint64_t new_version = 0;
  std::string reject_reason;
  // The shard had seen this push before (a retry whose first answer was
  // lost): it answered again and applied nothing now.
  bool duplicate = false;
  // Sparse pushes with row versions (see PushResult::row_taus): the rows
  // this shard measured (keys with a row and a known base), their mean and
  // largest tau, and how many were evicted or expired since the pull.
  uint64_t row_tau_rows = 0;
  double row_tau_mean = 0;
  uint64_t row_tau_max = 0;
  uint64_t row_tau_reborn = 0;
};

struct PushResult {
  std::vector<ShardPushResult> shards;  // indexed by shard
  // Gradient accumulation (CompressionConfig::accumulate_steps): this
  // gradient was added to the local sum and nothing was sent.
  bool deferred = false;
  bool all_accepted() const;
  uint64_t max_tau() const;
  double mean_tau() const;  // over touched shards
  // Sparse pushes whose basis pull had row versions: per-row tau = the
  // row's version when the push reached it minus the version the pull read,
  // one per key in the caller's key order (duplicate keys share their
  // row's). kUnknownRowVersion for a key the basis did not pull; 0 for a
  // key without a row (not admitted). A row evicted or expired since the
  // pull was re-created at version 0: its tau counts only the new row's
  // updates (and ShardPushResult::row_tau_reborn counts it). Measured
  // atomically with the update for async and ssp tables, on arrival for
  // sync and semi-sync ones. Empty when no row versions were sent.
  std::vector<uint64_t> row_taus;
  uint64_t max_row_tau() const;   // over the rows measured on every shard
  double mean_row_tau() const;    // same; 0 when none
};

// What this worker moved for one table: raw = float32 bytes of the values,
// wire = the bytes of the tensor fields actually sent or received.
struct TransferCounters {
  uint64_t pushes_sent = 0;
  uint64_t pushes_deferred = 0;  // accumulated, not sent
  uint64_t push_raw_bytes = 0;
  uint64_t push_wire_bytes = 0;
  uint64_t pulls = 0;
  uint64_t pull_raw_bytes = 0;
  uint64_t pull_wire_bytes = 0;
};

// One worker as one shard sees it, for one table.
struct WorkerShardStats {
  uint32_t worker_id = 0;
  bool live = false;
  uint64_t clock = 0;
  double last_seen_age_s = 0;
  double tau_mean = 0, tau_max = 0;
  uint64_t pushes = 0;
  uint64_t rejected = 0;
  uint64_t downweighted = 0;
  uint64_t closed_steps_as_last = 0;  // steps it held up (it arrived last)
  uint64_t missed_steps = 0;          // semi-sync steps closed without it
};

// One shard's view of one table's staleness and steps (see Client::Stats).
struct TableShardStats {
  uint32_t shard = 0;
  uint64_t version = 0;
  uint64_t pushes = 0;
  uint64_t rejected = 0;
  uint64_t downweighted = 0;
  uint64_t late = 0;
  // Tensor bytes that reached / left this shard (all workers): float32 size
  // and as they travelled; encoded blocks received and refused.
  uint64_t push_raw_bytes = 0, push_wire_bytes = 0;
  uint64_t pull_raw_bytes = 0, pull_wire_bytes = 0;
  uint64_t encoded_pushes = 0, bad_blocks = 0;
  double tau_mean = 0, tau_p50 = 0, tau_p99 = 0, tau_max = 0;
  uint64_t steps_closed = 0;
  uint64_t timeout_closes = 0;
  double step_wait_p50_s = 0, step_wait_p99_s = 0, step_wait_max_s = 0;
  int64_t last_straggler = -1;  // worker whose arrival closed the last step
  uint32_t live_workers = 0;
  uint32_t dead_workers = 0;
  uint64_t lease_expirations = 0;
  std::vector<WorkerShardStats> workers;
  // Sparse tables: rows held, rows evicted to stay under the limit, rows
  // expired after the ttl idle, touches of keys not admitted yet, bytes the
  // rows' storage holds and the row limit in force (0 = none).
  uint64_t sparse_rows = 0;
  uint64_t sparse_evictions = 0;
  uint64_t sparse_ttl_expired = 0;
  uint64_t sparse_refused = 0;
  uint64_t sparse_bytes = 0;
  uint64_t sparse_row_limit = 0;
  // Sparse tables: per-row tau of every push that carried row versions,
  // one value per row measured.
  uint64_t row_tau_count = 0;
  double row_tau_mean = 0, row_tau_p50 = 0, row_tau_p99 = 0, row_tau_max = 0;
};

class Client {
 public:
  // Opens channels to every shard and waits (up to connect_timeout) until each
  // answers. Fails with INVALID_ARGUMENT for bad options, UNAVAILABLE if a
  // shard never came up.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      const ClientOptions& options);

  virtual ~Client() = default;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  virtual int num_shards() const = 0;
  virtual uint32_t worker_id() const = 0;

  // Creates `config` on every shard. Creating a table that exists with an
  // identical config succeeds (so every worker may call it); a different
  // config fails with ALREADY_EXISTS.
  virtual absl::Status CreateTable(const TableConfig& config) = 0;
  // Looks an existing table up on the shards. NOT_FOUND if absent.
  virtual absl::StatusOr<TableConfig> OpenTable(absl::string_view name) = 0;
  // Admin: changes a table's consistency policy and staleness treatment on
  // every shard.
  virtual absl::Status SetConsistency(absl::string_view table,
                                      const ConsistencyConfig& consistency,
                                      const StalenessConfig& staleness) = 0;
  // Admin: drops `name` on every shard, giving each shard's memory budget
  // back; returns the bytes given back, summed over the shards. NOT_FOUND if
  // a shard has no such table (the others still drop theirs).
  virtual absl::StatusOr<uint64_t> DropTable(absl::string_view name) = 0;
  // What every shard measured for `table`.
  virtual absl::StatusOr<std::vector<TableShardStats>> Stats(
      absl::string_view table) = 0;

  // Worker-side compression of `table` (see taups/compression.h): how its
  // pushes are encoded, error feedback and accumulation (dense tables), and
  // how pulls travel. Replaces earlier settings and starts from an empty
  // residual and accumulation buffer. INVALID_ARGUMENT for a bad config, or
  // error feedback / accumulation asked for a sparse table; NOT_FOUND for an
  // unknown table.
  virtual absl::Status SetCompression(absl::string_view table,
                                      const CompressionConfig& config) = 0;
  // Bytes this client has pushed and pulled for `table`, raw and on the wire.
  virtual absl::StatusOr<TransferCounters> Transfers(
      absl::string_view table) = 0;

  // The worker clock: steps this worker has completed. Pulls and pushes
  // carry it; sync/semi_sync/ssp tables use it for barriers. Call Clock()
  // once after each step (after pushing every table of that step).
  virtual uint64_t clock() const = 0;
  virtual void Clock() = 0;

  // Tells every shard this worker is done: it leaves every barrier, quorum
  // and SSP minimum at once, and the shards record it as having left (not
  // as dead, not a lease expiration). Heartbeats stop. Later pulls and async
  // pushes still work; pushes to sync and semi_sync tables are refused
  // (FAILED_PRECONDITION) because the worker is no longer registered.
  // Calling it again does nothing and returns OK; so does a client created
  // with register_worker = false. Returns the first shard's error (each
  // shard is asked with at most a few short attempts; UNAVAILABLE if one
  // could not be reached, which then lets the lease run out instead). The
  // destructor calls it when it was not called.
  virtual absl::Status Leave() { return absl::OkStatus(); }

  // Dense tables. `values` / `gradient` cover the whole table
  // (size == dense_size). With compression the gradient is encoded (and
  // error feedback applied) before PushDense(Async) returns its future; with
  // accumulation, a call that only adds to the local sum returns at once with
  // PushResult::deferred set.
  virtual absl::StatusOr<PullInfo> PullDense(absl::string_view table,
                                             absl::Span<float> values) = 0;
  virtual std::future<absl::StatusOr<PullInfo>> PullDenseAsync(
      absl::string_view table, absl::Span<float> values) = 0;
  virtual absl::StatusOr<PushResult> PushDense(
      absl::string_view table, absl::Span<const float> gradient,
      const PullInfo* basis = nullptr) = 0;
  virtual std::future<absl::StatusOr<PushResult>> PushDenseAsync(
      absl::string_view table, absl::Span<const float> gradient,
      const PullInfo* basis = nullptr) = 0;

  // A dense push whose gradient encodes itself (a SliceEncoder, e.g. one in
  // GPU memory), with the table's push codec and error-feedback setting
  // (codec none sends float32 blocks). INVALID_ARGUMENT when the encoder's
  // size is not the table's or the table accumulates (accumulate_steps > 1).
  virtual absl::StatusOr<PushResult> PushDenseWith(
      absl::string_view table, SliceEncoder& encoder,
      const PullInfo* basis = nullptr) = 0;

  // Sparse tables. Keys in any order; duplicates allowed. `rows` receives
  // keys.size() * dim floats, row i for keys[i]. Missing rows are created on
  // the server by the table's initializer.
  virtual absl::StatusOr<PullInfo> PullSparse(absl::string_view table,
                                              absl::Span<const uint64_t> keys,
                                              absl::Span<float> rows) = 0;
  // The same, returning what `options` asks for too (row versions). The
  // default implementation serves only the default options.
  virtual absl::StatusOr<PullInfo> PullSparse(absl::string_view table,
                                              absl::Span<const uint64_t> keys,
                                              absl::Span<float> rows,
                                              const SparsePullOptions& options) {
    if (options.row_versions) {
      return absl::UnimplementedError("this client has no row versions");
    }
    return PullSparse(table, keys, rows);
  }
  // `gradients` holds keys.size() * dim floats. Duplicate keys are merged
  // (their gradients summed) before sending. When the basis pull (`basis`,
  // or else this client's last pull of the table) returned row versions,
  // they are sent back and the result holds per-row tau (row_taus).
  virtual absl::StatusOr<PushResult> PushSparse(
      absl::string_view table, absl::Span<const uint64_t> keys,
      absl::Span<const float> gradients, const PullInfo* basis = nullptr) = 0;

 protected:
  Client() = default;
};

}  // namespace taups

#endif  // TAUPS_CLIENT_H_
