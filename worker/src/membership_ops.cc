// ClientCore's membership: registration, heartbeats, Leave, and the clock a
// (re)joining worker resumes at.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/log_rate_limiter.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"
#include "worker/src/client_core.h"

namespace taups {
namespace {

int64_t NowNs() { return absl::ToUnixNanos(absl::Now()); }

// A heartbeat is one attempt with a deadline of about one interval: the next
// round sends a fresh one, so retrying this one would only pile calls up.
RetryPolicy HeartbeatPolicy(absl::Duration every) {
  RetryPolicy policy;
  policy.max_attempts = 1;
  policy.call_timeout = std::max(every, absl::Milliseconds(100));
  return policy;
}

}  // namespace

void ClientCore::CatchUp(absl::string_view table, uint64_t step) {
  absl::MutexLock lock(&clock_mu_);
  uint64_t& ahead = clock_ahead_[table];
  const uint64_t current = clock_.load() + ahead;
  if (step > current) ahead += step - current;
}

uint64_t ClientCore::clock() const {
  absl::MutexLock lock(&clock_mu_);
  uint64_t ahead = 0;
  for (const auto& [table, a] : clock_ahead_) ahead = std::max(ahead, a);
  return clock_.load() + ahead;
}

uint64_t ClientCore::ClockOf(absl::string_view table) const {
  absl::MutexLock lock(&clock_mu_);
  auto it = clock_ahead_.find(table);
  return clock_.load() + (it == clock_ahead_.end() ? 0 : it->second);
}

bool ClientCore::StartMembershipCall() {
  absl::MutexLock lock(&membership_mu_);
  if (left_) return false;
  ++membership_calls_;
  return true;
}

void ClientCore::EndMembershipCall() {
  absl::MutexLock lock(&membership_mu_);
  --membership_calls_;
}

void ClientCore::RegisterAsync(uint32_t shard,
                               std::function<void(absl::Status)> done) {
  if (!StartMembershipCall()) {
    return done(absl::FailedPreconditionError("the worker left"));
  }
  v1::RegisterRequest request;
  request.set_worker_id(options_.worker_id);
  request.set_worker_incarnation(options_.worker_incarnation);
  request.set_lease_s(absl::ToDoubleSeconds(options_.lease));
  // After the shard restarted: what this worker saw of its previous process,
  // so the shard can count what its restore lost.
  for (auto& [table, version] : lost_updates_.TakeReport(shard)) {
    v1::TableVersionSeen* seen = request.add_seen_before_restart();
    seen->set_table(std::move(table));
    seen->set_version(version);
  }
  const int64_t sent_ns = NowNs();
  Call<v1::RegisterRequest>(
      shard, std::move(request),
      [this, shard, sent_ns, done = std::move(done)](
          const absl::Status& status, v1::RegisterResponse* response) {
        if (status.ok()) {
          NoteIncarnation(shard, response->server_incarnation());
          {
            // Applied at each table's next pull (BeginStep): applying it
            // now could move the clock in the middle of a step.
            absl::MutexLock lock(&mu_);
            for (const auto& [table, clock] : response->start_clock()) {
              uint64_t& join = join_clocks_[table];
              join = std::max(join, clock);
            }
          }
          ShardLease& lease = leases_[shard];
          lease.lease_ns = static_cast<int64_t>(response->lease_s() * 1e9);
          lease.renewed_ns = sent_ns;
          registrations_[shard].fetch_add(1);
          const int64_t every_ms = std::max<int64_t>(
              10, static_cast<int64_t>(response->heartbeat_every_s() * 1000));
          int64_t current = heartbeat_every_ms_.load();
          while (every_ms < current &&
                 !heartbeat_every_ms_.compare_exchange_weak(current, every_ms)) {
          }
        }
        done(status);
        EndMembershipCall();
      });
}

absl::Status ClientCore::RegisterWith(uint32_t shard) {
  std::promise<absl::Status> done;
  RegisterAsync(shard, [&done](absl::Status status) { done.set_value(status); });
  return done.get_future().get();
}

absl::Status ClientCore::StartMembership() {
  heartbeat_every_ms_ = std::numeric_limits<int64_t>::max();
  for (uint32_t s = 0; s < shards_.size(); ++s) RETURN_IF_ERROR(RegisterWith(s));
  membership_started_ = true;
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
  return absl::OkStatus();
}

void ClientCore::RenewAsync(uint32_t shard, std::function<void()> done,
                            const RetryPolicy* policy) {
  if (!StartMembershipCall()) return done();
  v1::HeartbeatRequest request;
  request.set_worker_id(options_.worker_id);
  request.set_worker_incarnation(options_.worker_incarnation);
  const int64_t sent_ns = NowNs();
  CallWith<v1::HeartbeatRequest>(
      policy != nullptr ? *policy : HeartbeatPolicy(HeartbeatEvery()), shard,
      std::move(request),
      [this, shard, sent_ns, done = std::move(done)](
          const absl::Status& status, v1::HeartbeatResponse* response) {
        if (status.ok()) NoteIncarnation(shard, response->server_incarnation());
        if (!status.ok()) {
          heartbeat_failures_[shard].fetch_add(1);
          LogRateLimited(DefaultLogRateLimiter(), spdlog::level::warn,
                         absl::StrCat("heartbeat to shard ", shard, " failed"),
                         "heartbeat to shard {} failed: {}", shard,
                         status.ToString());
        } else if (response->known()) {
          leases_[shard].renewed_ns = sent_ns;
        } else {
          bool left = false;
          {
            absl::MutexLock lock(&membership_mu_);
            left = left_;
          }
          if (!left) {
            spdlog::warn("shard {} no longer knows worker {} (lease expired or "
                         "shard restarted); registering again",
                         shard, options_.worker_id);
            // Still counted as in flight: Leave waits for the registration.
            RegisterAsync(shard, [this, shard, done](absl::Status registered) {
              if (!registered.ok()) {
                spdlog::warn("re-registering with shard {} failed: {}", shard,
                             registered.ToString());
              }
              done();
            });
            EndMembershipCall();
            return;
          }
        }
        done();
        EndMembershipCall();
      });
}

ClientCore::MembershipMark ClientCore::MarkOf(uint32_t shard) const {
  return {incarnations_[shard].load(), registrations_[shard].load()};
}

void ClientCore::ConfirmForgotten(uint32_t shard, MembershipMark mark,
                                  std::function<void(bool)> done) {
  if (!membership_started_) return done(false);
  // Retried like any call: this heartbeat decides whether a push goes on.
  RenewAsync(
      shard,
      [this, shard, mark, done = std::move(done)] {
        const MembershipMark now = MarkOf(shard);
        done(now.incarnation != mark.incarnation ||
             now.registrations != mark.registrations);
      },
      &policy_);
}

void ClientCore::HeartbeatLoop() {
  while (!stop_heartbeats_.WaitForNotificationWithTimeout(HeartbeatEvery())) {
    if (heartbeats_paused_) continue;
    for (uint32_t s = 0; s < shards_.size(); ++s) {
      // A shard whose last heartbeat is still out (it is slow or gone) is
      // skipped this round; the others are not held up by it.
      if (leases_[s].beating.exchange(true)) continue;
      RenewAsync(s, [this, s] { leases_[s].beating = false; });
    }
  }
}

void ClientCore::EnsureLeases() {
  if (!membership_started_) return;
  const int64_t now = NowNs();
  std::vector<uint32_t> lapsing;
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    // Renewed regularly, a lease is never older than a quarter of itself
    // plus a round trip; past half of it, it may be lost by the time the
    // request lands, so renew (or register again) first.
    const ShardLease& lease = leases_[s];
    if (now - lease.renewed_ns.load() > lease.lease_ns.load() / 2) {
      lapsing.push_back(s);
    }
  }
  if (lapsing.empty()) return;
  {
    absl::MutexLock lock(&membership_mu_);
    if (left_) return;
  }
  auto finished = std::make_shared<std::promise<void>>();
  auto fan = std::make_shared<FanIn>(
      lapsing.size(), [finished](absl::Status) { finished->set_value(); });
  for (uint32_t s : lapsing) {
    RenewAsync(s, [fan] { fan->Report(absl::OkStatus()); });
  }
  finished->get_future().wait();
}

void ClientCore::BeginStep(const std::string& table, ConsistencyKind kind) {
  EnsureLeases();
  uint64_t join = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = join_clocks_.find(table);
    if (it == join_clocks_.end()) return;
    join = it->second;
    join_clocks_.erase(it);
  }
  if (kind != ConsistencyKind::kAsync) CatchUp(table, join);
}

absl::Status ClientCore::Leave() {
  if (!membership_started_) return absl::OkStatus();
  {
    absl::MutexLock lock(&membership_mu_);
    if (left_) return absl::OkStatus();
    left_ = true;
  }
  stop_heartbeats_.Notify();
  if (heartbeat_thread_.joinable() &&
      heartbeat_thread_.get_id() != std::this_thread::get_id()) {
    heartbeat_thread_.join();
  }
  {
    // A heartbeat or registration still out could land after the Leave and
    // make the worker live again.
    absl::MutexLock lock(&membership_mu_);
    membership_mu_.Await(absl::Condition(
        +[](int64_t* n) { return *n == 0; }, &membership_calls_));
  }
  RetryPolicy policy = policy_;
  policy.max_attempts = std::min(policy.max_attempts, 3);
  policy.call_timeout = std::min(policy.call_timeout, absl::Seconds(5));
  policy.budget = absl::ZeroDuration();  // a goodbye does not wait out restarts
  v1::LeaveRequest request;
  request.set_worker_id(options_.worker_id);
  request.set_worker_incarnation(options_.worker_incarnation);
  return CallEveryShard<v1::LeaveRequest>(
      request,
      [this](uint32_t s, v1::LeaveResponse* response) {
        NoteIncarnation(s, response->server_incarnation());
        if (!response->known()) {
          spdlog::info("shard {} did not know worker {} any more (its lease "
                       "had run out, or the shard restarted)",
                       s, options_.worker_id);
        }
        return absl::OkStatus();
      },
      &policy);
}

}  // namespace taups
