#include "server/consistency_controller.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/staleness.h"
#include "common/vector_math.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

// A multi-slice push whose remaining slices have not come within this time is
// forgotten (its sender died or gave up); its applied slices stay applied.
constexpr absl::Duration kAbandonedPushAge = absl::Minutes(2);

const char* CloseReasonName(int reason) {
  static const char* kNames[] = {"all arrived", "timeout", "membership change",
                                 "policy change"};
  return kNames[reason];
}

}  // namespace

ConsistencyController::ConsistencyController(Table* table, const Clock* clock)
    : table_(table),
      clock_(clock),
      consistency_(table->config().consistency),
      staleness_(table->config().staleness),
      step_opened_(clock->Now()),
      step_sum_(table->NewBuffer()) {}

uint64_t ConsistencyController::version() const {
  absl::ReaderMutexLock lock(&mu_);
  return version_;
}

uint64_t ConsistencyController::open_step() const {
  absl::ReaderMutexLock lock(&mu_);
  return barrier() ? open_step_ : 0;
}

ConsistencyConfig ConsistencyController::consistency() const {
  absl::ReaderMutexLock lock(&mu_);
  return consistency_;
}

StalenessConfig ConsistencyController::staleness() const {
  absl::ReaderMutexLock lock(&mu_);
  return staleness_;
}

absl::StatusOr<PushOutcome> ConsistencyController::StampLocked(
    const PushArgs& args) {
  if (args.slices > 1) {
    auto it = pending_.find(PushKey{args.origin.worker_id,
                                    args.origin.worker_incarnation,
                                    args.origin.seq});
    if (it != pending_.end()) return it->second.stamp;
  }
  if (args.base_version > version_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "base_version ", args.base_version, " is ahead of this shard's version ",
        version_, " of table '", table_->config().name,
        "' (the shard restarted?); pull again before pushing"));
  }
  const uint64_t tau = version_ - args.base_version;
  const StalenessDecision decision = DecideStaleness(staleness_, tau, version_);
  PushOutcome stamp;
  stamp.tau = tau;
  stamp.accepted = decision.accepted;
  stamp.lr_factor = decision.lr_factor;
  stamp.reject_reason = decision.reject_reason;
  stamp.new_version = version_;

  WorkerTableStats& w = stats_.workers[args.origin.worker_id];
  ++stats_.pushes;
  stats_.tau.Add(static_cast<double>(tau));
  w.tau.Add(static_cast<double>(tau));
  if (!decision.accepted) {
    ++stats_.rejected;
    ++w.rejected;
    spdlog::warn("table '{}': push from worker {} rejected: {}",
                 table_->config().name, args.origin.worker_id,
                 decision.reject_reason);
  } else if (decision.downweighted) {
    ++stats_.downweighted;
    ++w.downweighted;
  }
  if (args.slices > 1) {
    const absl::Time now = clock_->Now();
    if (pending_.size() >= 64) {
      absl::erase_if(pending_, [now](const auto& entry) {
        return now - entry.second.first_seen > kAbandonedPushAge;
      });
    }
    pending_[PushKey{args.origin.worker_id, args.origin.worker_incarnation,
                     args.origin.seq}] = PendingPush{stamp, args.slices, now};
  }
  return stamp;
}

bool ConsistencyController::FinishSliceLocked(const PushArgs& args) {
  if (args.slices <= 1) return true;
  auto it = pending_.find(PushKey{args.origin.worker_id,
                                  args.origin.worker_incarnation,
                                  args.origin.seq});
  if (it == pending_.end()) return true;
  if (--it->second.slices_left > 0) return false;
  pending_.erase(it);
  return true;
}

absl::StatusOr<PushOutcome> ConsistencyController::Push(const PushArgs& args) {
  float clip_norm = 0.0f;
  bool is_barrier = false;
  {
    absl::ReaderMutexLock lock(&mu_);
    clip_norm = staleness_.clip_norm;
    is_barrier = barrier();
  }
  // Norm clipping scales the gradient itself (not the learning rate), so it
  // means the same under every optimizer.
  GradientPart part = args.part;
  std::vector<float> clipped;
  if (clip_norm > 0.0f) {
    const double norm_sq =
        args.push_norm_sq > 0.0 ? args.push_norm_sq : SquaredNorm(part.values);
    const float scale = ClipScale(clip_norm, norm_sq);
    if (scale < 1.0f) {
      clipped.assign(part.values.begin(), part.values.end());
      for (float& v : clipped) v *= scale;
      part.values = clipped;
    }
  }
  if (!is_barrier) return PushAsync(args, part);
  absl::MutexLock lock(&mu_);
  return PushBarrierLocked(args, part);
}

absl::StatusOr<PushOutcome> ConsistencyController::PushAsync(
    const PushArgs& args, const GradientPart& part) {
  PushOutcome outcome;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<PushOutcome> stamp = StampLocked(args);
    if (!stamp.ok()) return stamp.status();
    outcome = *stamp;
    if (!outcome.accepted) {
      FinishSliceLocked(args);
      return outcome;
    }
  }
  table_->Apply(part, outcome.lr_factor, args.origin.worker_id);
  absl::MutexLock lock(&mu_);
  if (FinishSliceLocked(args)) {
    ++version_;
    uint64_t& c = clocks_[args.origin.worker_id];
    c = std::max(c, args.clock + 1);
  }
  outcome.new_version = version_;
  return outcome;
}

absl::StatusOr<PushOutcome> ConsistencyController::PushBarrierLocked(
    const PushArgs& args, const GradientPart& part) {
  const uint32_t worker = args.origin.worker_id;
  if (!live_.contains(worker)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", worker, " is not registered with this shard (or its lease "
        "expired); table '", table_->config().name, "' is ",
        ConsistencyKindName(consistency_.kind), ", so register before pushing"));
  }
  if (args.clock > open_step_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", table_->config().name, "': worker ", worker,
        " pushed for step ", args.clock, " but step ", open_step_,
        " is still open; pull (which waits for the step to close) first"));
  }
  auto arrival = arrivals_.find(worker);
  if (args.clock == open_step_ && arrival != arrivals_.end() &&
      arrival->second == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", table_->config().name, "': worker ", worker,
        " already pushed for step ", open_step_));
  }
  absl::StatusOr<PushOutcome> stamped = StampLocked(args);
  if (!stamped.ok()) return stamped.status();
  PushOutcome outcome = *stamped;
  if (args.clock < open_step_) return PushLateLocked(args, part, outcome);
  if (outcome.accepted) {
    // A stale on-time push counts with weight f(tau).
    const float weight =
        DownweightFactor(staleness_.downweight, staleness_.downweight_lambda,
                         outcome.tau);
    step_sum_->Add(part, weight);
    if (consistency_.late == LatePolicy::kReuseLast &&
        consistency_.kind == ConsistencyKind::kSemiSync) {
      BufferOf(current_, worker).Add(part, weight);
    }
    outcome.lr_factor = weight;
  }
  // A rejected push still counts as the worker's arrival (with nothing to
  // add), so the step does not wait for a push that will never come.
  if (arrival == arrivals_.end()) {
    arrival = arrivals_.emplace(worker, args.slices).first;
  }
  FinishSliceLocked(args);
  if (--arrival->second == 0) {
    ++arrived_;
    if (outcome.accepted) ++contributed_;
    uint64_t& c = clocks_[worker];
    c = std::max(c, args.clock + 1);
    MaybeCloseLocked(CloseReason::kArrivals, worker);
  }
  outcome.new_version = version_;
  return outcome;
}

absl::StatusOr<PushOutcome> ConsistencyController::PushLateLocked(
    const PushArgs& args, const GradientPart& part, PushOutcome outcome) {
  const uint32_t worker = args.origin.worker_id;
  WorkerTableStats& w = stats_.workers[worker];
  const bool first_slice = IsFirstSliceLocked(args);
  const bool last_slice = FinishSliceLocked(args);
  if (last_slice) {
    ++stats_.late;
    ++w.late;
  }
  const std::string step_closed = absl::StrCat(
      "late: step ", args.clock, " of table '", table_->config().name,
      "' closed before this push arrived (open step is ", open_step_, ")");
  if (consistency_.kind == ConsistencyKind::kSync) {
    outcome.accepted = false;
    outcome.reject_reason = step_closed;
    return outcome;
  }
  switch (consistency_.late) {
    case LatePolicy::kDrop:
      outcome.accepted = false;
      outcome.reject_reason = absl::StrCat(step_closed, "; dropped (late=drop)");
      return outcome;
    case LatePolicy::kReuseLast: {
      // Not applied now: it becomes the stand-in for the next step this
      // worker misses.
      StepBuffer& last = BufferOf(last_, worker);
      if (first_slice) last.Clear();
      last.Add(part, 1.0f);
      outcome.accepted = false;
      outcome.reject_reason = absl::StrCat(
          step_closed, "; kept to stand in for this worker (late=reuse_last)");
      return outcome;
    }
    case LatePolicy::kApplyLate: {
      if (!outcome.accepted) return outcome;
      // One worker's share of a step, weighted by its staleness.
      const DownweightKind kind = staleness_.downweight == DownweightKind::kNone
                                      ? DownweightKind::kInverse
                                      : staleness_.downweight;
      const float share = 1.0f / static_cast<float>(std::max<size_t>(1, live_.size()));
      outcome.lr_factor =
          share * DownweightFactor(kind, staleness_.downweight_lambda, outcome.tau) *
          WarmupFactor(version_, staleness_.warmup_versions);
      table_->Apply(part, outcome.lr_factor, worker);
      if (last_slice) ++version_;
      outcome.new_version = version_;
      return outcome;
    }
  }
  return outcome;
}

StepBuffer& ConsistencyController::BufferOf(
    absl::flat_hash_map<uint32_t, std::unique_ptr<StepBuffer>>& map,
    uint32_t worker) {
  std::unique_ptr<StepBuffer>& slot = map[worker];
  if (!slot) slot = table_->NewBuffer();
  return *slot;
}

bool ConsistencyController::IsFirstSliceLocked(const PushArgs& args) const {
  if (args.slices <= 1) return true;
  auto it = pending_.find(PushKey{args.origin.worker_id,
                                  args.origin.worker_incarnation,
                                  args.origin.seq});
  return it == pending_.end() || it->second.slices_left == args.slices;
}

void ConsistencyController::MaybeCloseLocked(CloseReason reason,
                                             int64_t last_arrival) {
  if (!barrier() || arrived_ == 0) return;
  if (ever_registered_ < consistency_.num_workers) return;  // start-up gate
  size_t live_arrived = 0;
  for (uint32_t w : live_) {
    auto it = arrivals_.find(w);
    if (it != arrivals_.end() && it->second == 0) ++live_arrived;
  }
  size_t needed = live_.size();
  if (consistency_.kind == ConsistencyKind::kSemiSync) {
    needed = static_cast<size_t>(
        std::ceil(consistency_.quorum * static_cast<double>(live_.size()) - 1e-9));
    needed = std::max<size_t>(needed, 1);
  }
  if (live_arrived >= needed) {
    CloseStepLocked(reason, last_arrival);
  }
}

void ConsistencyController::CloseStepLocked(CloseReason reason,
                                            int64_t last_arrival) {
  const absl::Time now = clock_->Now();
  size_t contributors = contributed_;
  // Missing workers in id order, so stand-ins are summed in the same order
  // on every run (the live set's iteration order is not deterministic).
  std::vector<uint32_t> missing;
  for (uint32_t w : live_) {
    auto it = arrivals_.find(w);
    if (it == arrivals_.end() || it->second != 0) missing.push_back(w);
  }
  std::sort(missing.begin(), missing.end());
  for (uint32_t w : missing) {
    ++stats_.workers[w].missed_steps;
    if (consistency_.kind == ConsistencyKind::kSemiSync &&
        consistency_.late == LatePolicy::kReuseLast) {
      auto last = last_.find(w);
      if (last != last_.end() && !last->second->empty()) {
        step_sum_->AddBuffer(*last->second, 1.0f);
        ++contributors;
      }
    }
  }
  if (contributors > 0) {
    table_->ApplyBuffer(*step_sum_, 1.0f / static_cast<float>(contributors),
                        WarmupFactor(version_, staleness_.warmup_versions));
    ++version_;
  }
  for (auto& [w, buffer] : current_) {
    if (buffer->empty()) continue;
    std::unique_ptr<StepBuffer>& last = last_[w];
    if (!last) last = table_->NewBuffer();
    last.swap(buffer);
    buffer->Clear();
  }
  const absl::Duration waited = now - step_opened_;
  ++stats_.steps_closed;
  stats_.step_wait_s.Add(absl::ToDoubleSeconds(waited));
  if (reason == CloseReason::kTimeout) {
    ++stats_.timeout_closes;
  } else {
    ++stats_.quorum_closes;
  }
  if (last_arrival >= 0) {
    stats_.last_straggler = last_arrival;
    ++stats_.workers[static_cast<uint32_t>(last_arrival)].closed_steps_as_last;
  }
  spdlog::debug("table '{}': step {} closed after {} ({}); {} gradients, "
                "closed by worker {}, missing [{}]",
                table_->config().name, open_step_, absl::FormatDuration(waited),
                CloseReasonName(static_cast<int>(reason)), contributors,
                last_arrival, absl::StrJoin(missing, ","));
  ++open_step_;
  step_opened_ = now;
  arrivals_.clear();
  arrived_ = 0;
  contributed_ = 0;
  step_sum_->Clear();
}

uint64_t ConsistencyController::MinLiveClockLocked(int64_t excluding) const {
  uint64_t min = std::numeric_limits<uint64_t>::max();
  for (uint32_t w : live_) {
    if (static_cast<int64_t>(w) == excluding) continue;
    auto it = clocks_.find(w);
    min = std::min(min, it == clocks_.end() ? 0 : it->second);
  }
  return min;
}

bool ConsistencyController::PullReadyLocked(uint32_t /*worker*/,
                                            uint64_t clock) const {
  switch (consistency_.kind) {
    case ConsistencyKind::kAsync:
      return true;
    case ConsistencyKind::kSync:
    case ConsistencyKind::kSemiSync:
      return open_step_ >= clock;
    case ConsistencyKind::kSsp: {
      const uint64_t min = MinLiveClockLocked(-1);
      return min == std::numeric_limits<uint64_t>::max() ||
             clock <= min + consistency_.staleness_bound;
    }
  }
  return true;
}

bool ConsistencyController::PullReady(uint32_t worker, uint64_t clock) const {
  absl::ReaderMutexLock lock(&mu_);
  return PullReadyLocked(worker, clock);
}

std::string ConsistencyController::WaitingForLocked(uint64_t clock) const {
  std::vector<uint32_t> waiting;
  if (barrier()) {
    for (uint32_t w : live_) {
      auto it = arrivals_.find(w);
      if (it == arrivals_.end() || it->second != 0) waiting.push_back(w);
    }
    std::sort(waiting.begin(), waiting.end());
    return absl::StrCat("step ", open_step_, " of table '",
                        table_->config().name, "' is still open, waiting for workers [",
                        absl::StrJoin(waiting, ","), "] (", ever_registered_, " of ",
                        consistency_.num_workers, " expected workers registered)");
  }
  const uint64_t min = MinLiveClockLocked(-1);
  for (uint32_t w : live_) {
    auto it = clocks_.find(w);
    if ((it == clocks_.end() ? 0 : it->second) == min) waiting.push_back(w);
  }
  std::sort(waiting.begin(), waiting.end());
  return absl::StrCat("a pull at clock ", clock, " needs every live worker at >= ",
                      clock - std::min<uint64_t>(clock, consistency_.staleness_bound),
                      "; workers [", absl::StrJoin(waiting, ","), "] are at ", min);
}

absl::Status ConsistencyController::AwaitPullReady(uint32_t worker,
                                                   uint64_t clock,
                                                   absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, worker, clock]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return PullReadyLocked(worker, clock);
  };
  if (mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(WaitingForLocked(clock));
}

void ConsistencyController::SetLiveWorkers(const std::vector<uint32_t>& live,
                                           size_t ever_registered) {
  absl::MutexLock lock(&mu_);
  live_ = absl::flat_hash_set<uint32_t>(live.begin(), live.end());
  ever_registered_ = ever_registered;
  MaybeCloseLocked(CloseReason::kMembership, -1);
}

uint64_t ConsistencyController::JoinClock(uint32_t worker) {
  absl::MutexLock lock(&mu_);
  uint64_t start = 0;
  if (barrier()) {
    start = open_step_;
  } else if (consistency_.kind == ConsistencyKind::kSsp) {
    const uint64_t min = MinLiveClockLocked(worker);
    start = min == std::numeric_limits<uint64_t>::max() ? 0 : min;
  }
  uint64_t& c = clocks_[worker];
  c = std::max(c, start);
  return c;
}

void ConsistencyController::Tick() {
  absl::MutexLock lock(&mu_);
  if (consistency_.kind != ConsistencyKind::kSemiSync ||
      consistency_.step_timeout_s <= 0.0 || arrived_ == 0 ||
      ever_registered_ < consistency_.num_workers) {
    return;
  }
  if (clock_->Now() - step_opened_ >=
      absl::Seconds(consistency_.step_timeout_s)) {
    CloseStepLocked(CloseReason::kTimeout, -1);
  }
}

absl::Status ConsistencyController::SetConfig(
    const ConsistencyConfig& consistency, const StalenessConfig& staleness) {
  absl::MutexLock lock(&mu_);
  if (barrier() && arrived_ > 0) CloseStepLocked(CloseReason::kPolicyChange, -1);
  const bool was_barrier = barrier();
  consistency_ = consistency;
  staleness_ = staleness;
  if (barrier() && !was_barrier) {
    // Gather next the step the most advanced live worker is on.
    uint64_t max_clock = 0;
    for (uint32_t w : live_) {
      auto it = clocks_.find(w);
      if (it != clocks_.end()) max_clock = std::max(max_clock, it->second);
    }
    open_step_ = std::max(open_step_, max_clock);
    step_opened_ = clock_->Now();
  }
  table_->SetStaleness(staleness);
  spdlog::info("table '{}': consistency now {} (num_workers={} quorum={} "
               "timeout={}s late={} s={}), downweight={} tau_max={}",
               table_->config().name, ConsistencyKindName(consistency.kind),
               consistency.num_workers, consistency.quorum,
               consistency.step_timeout_s, LatePolicyName(consistency.late),
               consistency.staleness_bound,
               DownweightKindName(staleness.downweight),
               staleness.reject_above_tau_max
                   ? absl::StrCat(staleness.tau_max)
                   : std::string("none"));
  return absl::OkStatus();
}

TableStats ConsistencyController::Stats() const {
  absl::ReaderMutexLock lock(&mu_);
  TableStats stats = stats_;
  for (const auto& [w, c] : clocks_) stats.workers[w].clock = c;
  return stats;
}

}  // namespace taups
