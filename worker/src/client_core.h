// ClientCore: the implementation of taups::Client, over one ShardTransport
// per shard (shard_transport.h). It holds the protocol: slice plans and key
// routing (ShardRouter, by the OwnershipMap), base versions from the last
// pull, worker-side compression and error feedback (TableCompression), the
// (worker, incarnation, seq) origin of every push, retries (RetryingCall) and
// membership. It knows nothing of how a request reaches a shard: over gRPC
// (Client::Connect, grpc_client.cc) or in one process (ConnectInProcess).
//
// Every public call fans out one call per shard (per slice for large dense
// tensors), all in flight at once, and joins them with a FanIn. Blocking
// forms wait on the asynchronous ones.
//
// Membership (membership_ops.cc): the client registers with every shard and
// renews its leases from a heartbeat thread, one asynchronous heartbeat per
// shard with its own deadline, so a shard that does not answer delays no
// other. A lease that may have lapsed (the process was paused, say) is
// renewed, or the worker registered again, before the next pull or push. The
// clock a shard gives a (re)joining worker is kept per table and applied at
// that table's next pull, the start of a step, never in the middle of one.
//
// Pushes (SendPush): each shard's part of a push is sent as a unit. When a
// shard refuses its part because it does not know this worker (it restarted
// from a checkpoint and forgot membership, or let the lease run out), and a
// heartbeat confirms it forgot the worker since the part was sent, the
// client registers again and sends that part once more with a fresh seq:
// the refused seq keeps its refusal in the shard's dedup window, and the
// parts other shards accepted are not sent again.
//
// Thread-safe. mu_ guards the table cache, the last-pulled versions and the
// join clocks; membership_mu_ guards whether the worker left and the
// membership calls in flight. Neither is held across an RPC.
#ifndef TAUPS_WORKER_SRC_CLIENT_CORE_H_
#define TAUPS_WORKER_SRC_CLIENT_CORE_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/ownership_map.h"
#include "taups/client.h"
#include "worker/src/delayed_runner.h"
#include "worker/src/retrying_call.h"
#include "worker/src/lost_updates.h"
#include "worker/src/row_version_basis.h"
#include "worker/src/shard_router.h"
#include "worker/src/shard_transport.h"
#include "worker/src/table_compression.h"

namespace taups {

class ClientCore final : public Client {
 public:
  // One transport per shard, in shard-index order. Prefer Open.
  ClientCore(const ClientOptions& options,
             std::vector<std::unique_ptr<ShardTransport>> shards);
  // A client over `shards` (at least one; options.servers is not used to
  // reach them), registered with every shard when options.register_worker.
  static absl::StatusOr<std::unique_ptr<ClientCore>> Open(
      const ClientOptions& options,
      std::vector<std::unique_ptr<ShardTransport>> shards);
  ~ClientCore() override;

  int num_shards() const override { return static_cast<int>(shards_.size()); }
  uint32_t worker_id() const override { return options_.worker_id; }

  absl::Status CreateTable(const TableConfig& config) override;
  absl::StatusOr<TableConfig> OpenTable(absl::string_view name) override;
  absl::Status SetConsistency(absl::string_view table,
                              const ConsistencyConfig& consistency,
                              const StalenessConfig& staleness) override;
  absl::StatusOr<uint64_t> DropTable(absl::string_view name) override;
  absl::StatusOr<std::vector<TableShardStats>> Stats(
      absl::string_view table) override;
  absl::Status SetCompression(absl::string_view table,
                              const CompressionConfig& config) override;
  absl::StatusOr<TransferCounters> Transfers(absl::string_view table) override;
  // The most advanced table's clock (each table keeps its own; ClockOf).
  uint64_t clock() const override;
  void Clock() override { clock_.fetch_add(1); }
  absl::Status Leave() override;

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

  // The ownership map requests are routed by (epoch 1 until replaced).
  std::shared_ptr<const OwnershipMap> Ownership() const ABSL_LOCKS_EXCLUDED(mu_);
  // Routes later requests by `map`. FAILED_PRECONDITION when it is for
  // another number of shards, older than the map in use, or a different map
  // at the same epoch. Dense slice plans are made again from it.
  absl::Status AdoptOwnership(const OwnershipMap& map) ABSL_LOCKS_EXCLUDED(mu_);

  // The shard restarts this client saw and the attempts it made again, so
  // far (client_events.h). Read-only.
  ClientEvents Events() const;

  // Tests: while paused, the heartbeat thread sends nothing (as if the
  // process were stopped), so the shards let the lease run out.
  void PauseHeartbeatsForTest(bool paused) { heartbeats_paused_ = paused; }

 private:
  // What the client knows of a table: its config and, for dense tables, the
  // slice plan (fixed for the table's life).
  struct TableMeta {
    TableConfig config;
    std::shared_ptr<const OwnershipMap> ownership;  // the plan's map
    std::vector<DenseSlice> slices;
  };
  // One shard's lease as this client knows it.
  struct ShardLease {
    std::atomic<bool> beating{false};  // a heartbeat or re-register in flight
    // When the last renewal the shard confirmed was sent, and the lease it
    // granted (0 = not registered).
    std::atomic<int64_t> renewed_ns{0};
    std::atomic<int64_t> lease_ns{0};
  };

  absl::StatusOr<std::shared_ptr<const TableMeta>> Meta(absl::string_view name);
  std::shared_ptr<const TableMeta> Remember(const TableConfig& config);
  // PushDenseAsync and PushDenseWith: exactly one of `gradient` (a span of
  // the table's size) and `encoder` is used. `borrow_gradient`: the caller
  // keeps `gradient` until the future is ready (PushDense), so it is sent
  // from there; else it is copied first.
  std::future<absl::StatusOr<PushResult>> PushDenseImpl(
      absl::string_view table, absl::Span<const float> gradient,
      SliceEncoder* encoder, const PullInfo* basis, bool borrow_gradient);
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
  // NoteIncarnation, then records `version` (a pull's version or a push's
  // new version; 0: none) of `table` from `shard` in lost_updates_, which
  // counts how far the first answer after a restart went back.
  bool NoteAnswer(uint32_t shard, uint64_t incarnation, const std::string& table,
                  uint64_t version);
  v1::PushOrigin NextOrigin();
  // Moves `table`'s clock up to `step` if it is behind. Each table has its
  // own clock: the steps this worker completed (Clock()) plus how far that
  // table's shards moved it ahead (a rejoin, a policy switch). One table's
  // step never moves another's: pushes to a sync table carry that table's
  // step, whatever step a second table's shards are gathering.
  void CatchUp(absl::string_view table, uint64_t step);
  uint64_t ClockOf(absl::string_view table) const;
  // Before a pull or push: renews, synchronously, every lease that may have
  // lapsed (registering again where the shard forgot this worker).
  void EnsureLeases() ABSL_LOCKS_EXCLUDED(mu_, membership_mu_);
  // At the start of a pull of `table` (a step): EnsureLeases, then moves the
  // clock up to the step a shard gave this worker for `table` when it last
  // (re)joined, unless `kind` is async (its clock means nothing there).
  void BeginStep(const std::string& table, ConsistencyKind kind)
      ABSL_LOCKS_EXCLUDED(mu_, membership_mu_);
  // What the client knew of its membership with a shard when it sent a
  // push's part there: the shard's incarnation and how often the client had
  // registered with it.
  struct MembershipMark {
    uint64_t incarnation = 0;
    uint64_t registrations = 0;
  };
  MembershipMark MarkOf(uint32_t shard) const;
  // After `shard` refused a push's part: one heartbeat (retried like any
  // call; registering again if the shard no longer knows this worker), then
  // done(true) when the shard forgot the worker since `mark` (its
  // incarnation changed, or the client registered with it again). done(false)
  // without a call for a client that does not register (register_worker).
  void ConfirmForgotten(uint32_t shard, MembershipMark mark,
                        std::function<void(bool)> done);
  // Counts and logs the redo of a push's part on `shard` as seq `seq`.
  void NoteRedo(uint32_t shard, const std::string& table, uint64_t refused_seq,
                uint64_t seq, const absl::Status& refusal);
  absl::Status RegisterWith(uint32_t shard);
  // Registers with `shard`; `done` runs once with the outcome.
  void RegisterAsync(uint32_t shard, std::function<void(absl::Status)> done);
  // One heartbeat to `shard` (by default one attempt, a deadline of about
  // one interval; else `policy`); registers again if the shard no longer
  // knows this worker. `done` runs once when all of that finished.
  void RenewAsync(uint32_t shard, std::function<void()> done,
                  const RetryPolicy* policy = nullptr);
  // Counts a membership call in flight; false once the worker left.
  bool StartMembershipCall() ABSL_LOCKS_EXCLUDED(membership_mu_);
  void EndMembershipCall() ABSL_LOCKS_EXCLUDED(membership_mu_);
  absl::Duration HeartbeatEvery() const {
    return absl::Milliseconds(heartbeat_every_ms_.load());
  }
  void HeartbeatLoop();

  // Starts one retried call. Counts it in flight until `done` has returned,
  // so the destructor can wait for every callback to finish.
  template <typename Request>
  void Call(uint32_t shard, Request request,
            std::function<void(const absl::Status&, ResponseOf<Request>*)> done) {
    CallWith(policy_, shard, std::move(request), std::move(done));
  }
  // The same with its own retry policy (attempts, deadline).
  template <typename Request>
  void CallWith(const RetryPolicy& policy, uint32_t shard, Request request,
                std::function<void(const absl::Status&, ResponseOf<Request>*)> done) {
    CallKeeping<Request>(
        policy, shard, std::move(request),
        [done = std::move(done)](const absl::Status& status,
                                 ResponseOf<Request>* response,
                                 Request*) { done(status, response); });
  }
  // The same, and `done` gets the request back (it may move it out).
  template <typename Request>
  void CallKeeping(const RetryPolicy& policy, uint32_t shard, Request request,
                   typename RetryingCall<Request>::Done done) {
    {
      absl::MutexLock lock(&calls_mu_);
      ++calls_in_flight_;
    }
    StartCall<Request>(
        shards_[shard].get(), &runner_, policy, std::move(request),
        [this, done = std::move(done)](const absl::Status& status,
                                       ResponseOf<Request>* response,
                                       Request* sent) {
          done(status, response, sent);
          absl::MutexLock lock(&calls_mu_);
          --calls_in_flight_;
        });
  }

  // One push's requests, by shard (a dense push's slices for that shard, or
  // a sparse push's one request; no requests: the shard has no part). Every
  // request is sent at once; on_answer(shard, response) runs for each OK
  // answer (on a transport's thread; it must synchronize what it writes)
  // and may turn it into an error; `fan` gets one report per request once
  // its shard's part is settled. A part refused because the shard forgot
  // this worker is sent once more with a fresh seq (see the header comment).
  template <typename Request>
  void SendPush(std::vector<std::vector<Request>> by_shard,
                std::function<absl::Status(uint32_t, v1::PushResponse*)> on_answer,
                std::shared_ptr<FanIn> fan) {
    for (uint32_t s = 0; s < by_shard.size(); ++s) {
      SendShardPush(s, std::move(by_shard[s]), on_answer, fan);
    }
  }
  // SendPush of one shard's part alone, for a push whose parts are sent as
  // soon as each is built (nothing in one depends on the others); no
  // requests: nothing is sent.
  template <typename Request>
  void SendShardPush(
      uint32_t shard, std::vector<Request> requests,
      std::function<absl::Status(uint32_t, v1::PushResponse*)> on_answer,
      std::shared_ptr<FanIn> fan) {
    if (requests.empty()) return;
    auto part = std::make_shared<PushPart<Request>>();
    part->shard = shard;
    part->requests = std::move(requests);
    part->statuses.resize(part->requests.size());
    part->on_answer = std::move(on_answer);
    part->fan = std::move(fan);
    SendPart(std::move(part));
  }

  // One shard's part of a push while it is in flight (SendPush).
  template <typename Request>
  struct PushPart {
    uint32_t shard = 0;
    std::vector<Request> requests;  // back from the calls once answered
    std::vector<absl::Status> statuses;
    std::function<absl::Status(uint32_t, v1::PushResponse*)> on_answer;
    std::shared_ptr<FanIn> fan;
    MembershipMark mark;  // when this round was sent
    std::atomic<size_t> remaining{0};
    std::atomic<bool> final_answer{false};  // an answer not merely staged
    std::atomic<bool> redone{false};
  };

  template <typename Request>
  void SendPart(std::shared_ptr<PushPart<Request>> part) {
    part->mark = MarkOf(part->shard);
    part->remaining = part->requests.size();
    part->final_answer = false;
    for (size_t i = 0; i < part->requests.size(); ++i) {
      CallKeeping<Request>(
          policy_, part->shard, std::move(part->requests[i]),
          [this, part, i](const absl::Status& status, v1::PushResponse* response,
                          Request* sent) {
            absl::Status answer = status;
            if (status.ok()) {
              if (!response->staged()) part->final_answer = true;
              answer = part->on_answer(part->shard, response);
            }
            part->statuses[i] = std::move(answer);
            part->requests[i] = std::move(*sent);
            if (part->remaining.fetch_sub(1) == 1) SettlePart(part);
          });
    }
  }

  // Every request of `part` answered: reports them, or redoes the part once
  // when the shard refused it for not knowing this worker (or lost what it
  // had staged of it) and confirms it forgot the worker since it was sent.
  template <typename Request>
  void SettlePart(std::shared_ptr<PushPart<Request>> part) {
    const absl::Status* refusal = nullptr;
    bool all_ok = true;
    for (const absl::Status& s : part->statuses) {
      all_ok = all_ok && s.ok();
      if (refusal == nullptr && RefusedUnregistered(s)) refusal = &s;
    }
    // Every slice of a multi-slice part staged, and none completed it: the
    // shard lost the ones it had staged before it restarted.
    const bool incomplete = all_ok && part->requests.size() > 1 &&
                            !part->final_answer.load();
    if (part->redone || (refusal == nullptr && !incomplete)) {
      return ReportPart(*part);
    }
    const absl::Status reason =
        refusal != nullptr ? *refusal
                           : absl::AbortedError("its staged slices were lost");
    ConfirmForgotten(part->shard, part->mark, [this, part, reason](bool forgot) {
      if (!forgot) return ReportPart(*part);
      part->redone = true;
      const uint64_t refused_seq = part->requests[0].origin().seq();
      const uint64_t seq = next_seq_.fetch_add(1);
      for (Request& r : part->requests) r.mutable_origin()->set_seq(seq);
      NoteRedo(part->shard, part->requests[0].table(), refused_seq, seq, reason);
      SendPart(part);
    });
  }

  template <typename Request>
  static void ReportPart(const PushPart<Request>& part) {
    for (const absl::Status& s : part.statuses) part.fan->Report(s);
  }
  // A shard's refusal of a push from a worker it does not know: the
  // structured reason (Refusal::kNotRegistered, common/refusal.h), never
  // the message's words.
  static bool RefusedUnregistered(const absl::Status& status);

  // Sends `request` to every shard, all in flight at once, and blocks until
  // each answered. on_response(shard, response) runs for every successful
  // call (on a transport's thread: it must synchronize what it writes) and
  // may turn it into an error. Returns the first error, or OK.
  template <typename Request>
  absl::Status CallEveryShard(
      const Request& request,
      std::function<absl::Status(uint32_t, ResponseOf<Request>*)> on_response,
      const RetryPolicy* policy = nullptr) {
    auto promise = std::make_shared<std::promise<absl::Status>>();
    auto fan = std::make_shared<FanIn>(
        shards_.size(), [promise](absl::Status s) { promise->set_value(s); });
    for (uint32_t s = 0; s < shards_.size(); ++s) {
      CallWith<Request>(
          policy != nullptr ? *policy : policy_, s, request,
          [s, fan, on_response](const absl::Status& status,
                                ResponseOf<Request>* response) {
            fan->Report(status.ok() ? on_response(s, response) : status);
          });
    }
    return promise->get_future().get();
  }

  const ClientOptions options_;
  RetryCounter retries_;  // before policy_, which points at it
  const RetryPolicy policy_;
  // Declared before runner_: outlive the retries it may still run.
  std::vector<std::unique_ptr<ShardTransport>> shards_;
  std::unique_ptr<std::atomic<uint64_t>[]> incarnations_;  // per shard; 0 = unseen
  std::unique_ptr<std::atomic<uint64_t>[]> restarts_;  // per shard: changes seen
  // Per shard: successful registrations, and push parts redone.
  std::unique_ptr<std::atomic<uint64_t>[]> registrations_;
  std::unique_ptr<std::atomic<uint64_t>[]> redos_;
  // Per shard: heartbeats that failed (the shard was down, slow or refused).
  std::unique_ptr<std::atomic<uint64_t>[]> heartbeat_failures_;
  LostUpdates lost_updates_;  // per shard, from the versions answered
  std::atomic<uint64_t> next_seq_{1};
  std::atomic<uint64_t> clock_{0};
  mutable absl::Mutex clock_mu_;  // a leaf lock
  // table -> how far its clock runs ahead of clock_
  absl::flat_hash_map<std::string, uint64_t> clock_ahead_ ABSL_GUARDED_BY(clock_mu_);
  std::atomic<int64_t> heartbeat_every_ms_{1000};
  std::unique_ptr<ShardLease[]> leases_;  // per shard
  std::atomic<bool> membership_started_{false};
  std::atomic<bool> heartbeats_paused_{false};
  absl::Notification stop_heartbeats_;
  std::thread heartbeat_thread_;
  absl::Mutex membership_mu_;
  bool left_ ABSL_GUARDED_BY(membership_mu_) = false;
  int64_t membership_calls_ ABSL_GUARDED_BY(membership_mu_) = 0;
  absl::Mutex calls_mu_;
  int64_t calls_in_flight_ ABSL_GUARDED_BY(calls_mu_) = 0;
  mutable absl::Mutex mu_;
  std::shared_ptr<const OwnershipMap> ownership_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const TableMeta>> tables_
      ABSL_GUARDED_BY(mu_);
  // Per table: the clock the shards gave this worker at its last (re)join,
  // not applied yet (the largest, when shards differ).
  absl::flat_hash_map<std::string, uint64_t> join_clocks_ ABSL_GUARDED_BY(mu_);
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

#endif  // TAUPS_WORKER_SRC_CLIENT_CORE_H_
