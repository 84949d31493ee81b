// GrpcClient: the implementation of taups::Client over gRPC's callback API.
//
// Every public call fans out one RPC per shard (per slice for large dense
// tensors), all in flight at once, and joins them with a FanIn. Blocking
// forms wait on the asynchronous ones.
//
// Thread-safe. mu_ guards the table cache and the last-pulled versions;
// it is never held across an RPC.
#ifndef TAUPS_WORKER_SRC_GRPC_CLIENT_H_
#define TAUPS_WORKER_SRC_GRPC_CLIENT_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "taups/client.h"
#include "worker/src/delayed_runner.h"
#include "worker/src/retrying_call.h"
#include "worker/src/row_version_basis.h"
#include "worker/src/shard_router.h"
#include "worker/src/table_compression.h"

namespace taups {

class GrpcClient final : public Client {
 public:
  GrpcClient(const ClientOptions& options,
             std::vector<std::unique_ptr<ShardChannels>> shards);
  ~GrpcClient() override;

  int num_shards() const override { return static_cast<int>(shards_.size()); }
  uint32_t worker_id() const override { return options_.worker_id; }

  absl::Status CreateTable(const TableConfig& config) override;
  absl::StatusOr<TableConfig> OpenTable(absl::string_view name) override;
  absl::Status SetConsistency(absl::string_view table,
                              const ConsistencyConfig& consistency,
                              const StalenessConfig& staleness) override;
  absl::StatusOr<std::vector<TableShardStats>> Stats(
      absl::string_view table) override;
  absl::Status SetCompression(absl::string_view table,
                              const CompressionConfig& config) override;
  absl::StatusOr<TransferCounters> Transfers(absl::string_view table) override;
  uint64_t clock() const override { return clock_.load(); }
  void Clock() override { clock_.fetch_add(1); }

  // Registers with every shard and starts the heartbeat thread.
  absl::Status StartMembership();

  // The table's worker-side compression state (residual, accumulation
  // buffer), for tests and inspection; a default one if none was set.
  std::shared_ptr<const TableCompression> Compression(absl::string_view table) {
    return CompressionOf(std::string(table));
  }

  absl::StatusOr<PullInfo> PullDense(absl::string_view table,
                                     absl::Span<float> values) override;
  std::future<absl::StatusOr<PullInfo>> PullDenseAsync(
      absl::string_view table, absl::Span<float> values) override;
  absl::StatusOr<PushResult> PushDense(absl::string_view table,
                                       absl::Span<const float> gradient,
                                       const PullInfo* basis) override;
  std::future<absl::StatusOr<PushResult>> PushDenseAsync(
      absl::string_view table, absl::Span<const float> gradient,
      const PullInfo* basis) override;
  absl::StatusOr<PushResult> PushDenseWith(absl::string_view table,
                                          SliceEncoder& encoder,
                                          const PullInfo* basis) override;

  absl::StatusOr<PullInfo> PullSparse(absl::string_view table,
                                      absl::Span<const uint64_t> keys,
                                      absl::Span<float> rows) override;
  absl::StatusOr<PullInfo> PullSparse(absl::string_view table,
                                      absl::Span<const uint64_t> keys,
                                      absl::Span<float> rows,
                                      const SparsePullOptions& options) override;
  absl::StatusOr<PushResult> PushSparse(absl::string_view table,
                                        absl::Span<const uint64_t> keys,
                                        absl::Span<const float> gradients,
                                        const PullInfo* basis) override;

 private:
  // What the client knows of a table: its config and, for dense tables, the
  // slice plan (fixed for the table's life).
  struct TableMeta {
    TableConfig config;
    std::vector<DenseSlice> slices;
  };

  absl::StatusOr<std::shared_ptr<const TableMeta>> Meta(absl::string_view name);
  std::shared_ptr<const TableMeta> Remember(const TableConfig& config);
  // PushDenseAsync and PushDenseWith: exactly one of `gradient` (a span of
  // the table's size) and `encoder` is used.
  std::future<absl::StatusOr<PushResult>> PushDenseImpl(
      absl::string_view table, absl::Span<const float> gradient,
      SliceEncoder* encoder, const PullInfo* basis);
  // The table's compression state; a default one (no codec) on first use.
  std::shared_ptr<TableCompression> CompressionOf(const std::string& table);
  // Base versions for a push: `basis` if given, else the last pull's.
  std::vector<uint64_t> BaseVersions(const std::string& table,
                                     const PullInfo* basis);
  void RecordPull(const std::string& table, const PullInfo& info);
  // Keeps a sparse pull's row versions for the next push of `table` that
  // names no basis (forgets them when the pull had none).
  void RecordRowVersions(const std::string& table, const PullInfo& info);
  // The row versions of the last pull of `table`, or null for none.
  std::shared_ptr<const RowVersionBasis> LastRowVersions(
      const std::string& table);
  // Tracks the shard's incarnation; true if it changed since last seen.
  bool NoteIncarnation(uint32_t shard, uint64_t incarnation);
  v1::PushOrigin NextOrigin();
  // Moves the clock up to `step` if it is behind.
  void CatchUp(uint64_t step);
  absl::Status RegisterWith(uint32_t shard);
  void HeartbeatLoop();

  // Starts one retried RPC. Counts it in flight until `done` has returned,
  // so the destructor can wait for every callback to finish.
  template <typename Request, typename Response, typename Invoke>
  void Call(uint32_t shard, Request request, Invoke invoke,
            std::function<void(const absl::Status&, Response*)> done) {
    {
      absl::MutexLock lock(&calls_mu_);
      ++calls_in_flight_;
    }
    StartCall<Request, Response>(
        shards_[shard].get(), &runner_, policy_, std::move(request),
        std::move(invoke),
        [this, done = std::move(done)](const absl::Status& status,
                                       Response* response) {
          done(status, response);
          absl::MutexLock lock(&calls_mu_);
          --calls_in_flight_;
        });
  }

  // Sends `request` to every shard, all in flight at once, and blocks until
  // each answered. on_response(shard, response) runs for every successful
  // call (on a gRPC thread: it must synchronize what it writes) and may turn
  // it into an error. Returns the first error, or OK.
  template <typename Request, typename Response, typename Invoke>
  absl::Status CallEveryShard(
      const Request& request, Invoke invoke,
      std::function<absl::Status(uint32_t, Response*)> on_response) {
    auto promise = std::make_shared<std::promise<absl::Status>>();
    auto fan = std::make_shared<FanIn>(
        shards_.size(), [promise](absl::Status s) { promise->set_value(s); });
    for (uint32_t s = 0; s < shards_.size(); ++s) {
      Call<Request, Response>(
          s, request, invoke,
          [s, fan, on_response](const absl::Status& status, Response* response) {
            fan->Report(status.ok() ? on_response(s, response) : status);
          });
    }
    return promise->get_future().get();
  }

  const ClientOptions options_;
  const RetryPolicy policy_;
  std::vector<std::unique_ptr<ShardChannels>> shards_;
  std::unique_ptr<std::atomic<uint64_t>[]> incarnations_;  // per shard; 0 = unseen
  std::atomic<uint64_t> next_seq_{1};
  std::atomic<uint64_t> clock_{0};
  std::atomic<int64_t> heartbeat_every_ms_{1000};
  absl::Notification stop_heartbeats_;
  std::thread heartbeat_thread_;
  absl::Mutex calls_mu_;
  int64_t calls_in_flight_ ABSL_GUARDED_BY(calls_mu_) = 0;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const TableMeta>> tables_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::vector<uint64_t>> last_pulled_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const RowVersionBasis>>
      last_row_versions_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> any_row_versions_{false};  // last_row_versions_ non-empty
  absl::flat_hash_map<std::string, std::shared_ptr<TableCompression>>
      compression_ ABSL_GUARDED_BY(mu_);
  // Declared last: destroyed first, so pending retries finish while the
  // members above still exist.
  DelayedRunner runner_;
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_GRPC_CLIENT_H_
