#include "server/consistency_controller.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/staleness.h"
#include "common/status_macros.h"
#include "common/vector_math.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

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
    const PushArgs& args) const {
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
  stamp.downweighted = decision.downweighted;
  return stamp;
}

void ConsistencyController::RecordLocked(const PushArgs& args,
                                         const PushOutcome& stamp) {
  WorkerTableStats& w = stats_.workers[args.origin.worker_id];
  ++stats_.pushes;
  stats_.tau.Add(static_cast<double>(stamp.tau));
  w.tau.Add(static_cast<double>(stamp.tau));
  if (!stamp.accepted) {
    ++stats_.rejected;
    ++w.rejected;
    spdlog::warn("table '{}': push from worker {} rejected: {}",
                 table_->config().name, args.origin.worker_id,
                 stamp.reject_reason);
  } else if (stamp.downweighted) {
    ++stats_.downweighted;
    ++w.downweighted;
  }
}

bool ConsistencyController::StaysFiniteLocked(
    absl::Span<const GradientPart> parts, float lr_factor,
    uint32_t worker) const {
  for (const GradientPart& part : parts) {
    if (!table_->UpdateStaysFinite(part, lr_factor, worker)) return false;
  }
  return true;
}

absl::Status ConsistencyController::NonFiniteError(const PushArgs& args) const {
  return absl::InvalidArgumentError(absl::StrCat(
      "table '", table_->config().name, "': the update of push ",
      args.origin.seq, " from worker ", args.origin.worker_id,
      " would make parameters or optimizer state non-finite (gradient too "
      "large for the values it meets); nothing was applied"));
}

void ConsistencyController::ApplyLocked(absl::Span<const GradientPart> parts,
                                        float lr_factor, uint32_t worker) {
  for (const GradientPart& part : parts) table_->Apply(part, lr_factor, worker);
}

absl::StatusOr<PushOutcome> ConsistencyController::Push(const PushArgs& args) {
  absl::MutexLock lock(&mu_);
  // Norm clipping scales the gradient itself (not the learning rate), so it
  // means the same under every optimizer.
  const float clip_norm = staleness_.clip_norm;
  std::vector<std::vector<float>> clipped;
  std::vector<GradientPart> scaled;
  PushArgs treated = args;
  if (clip_norm > 0.0f) {
    double norm_sq = args.push_norm_sq;
    if (norm_sq <= 0.0) {
      for (const GradientPart& part : args.parts) norm_sq += SquaredNorm(part.values);
    }
    const float scale = ClipScale(clip_norm, norm_sq);
    if (scale < 1.0f) {
      for (const GradientPart& part : args.parts) {
        std::vector<float>& copy = clipped.emplace_back(part.values.begin(),
                                                        part.values.end());
        for (float& v : copy) v *= scale;
        GradientPart& p = scaled.emplace_back(part);
        p.values = copy;
        if (p.max_abs >= 0.0f) p.max_abs *= scale;
      }
      treated.parts = scaled;
    }
  }
  if (!barrier()) return PushAsyncLocked(treated);
  return PushBarrierLocked(treated);
}

absl::StatusOr<PushOutcome> ConsistencyController::PushAsyncLocked(
    const PushArgs& args) {
  ASSIGN_OR_RETURN(PushOutcome outcome, StampLocked(args));
  if (outcome.accepted &&
      !StaysFiniteLocked(args.parts, outcome.lr_factor, args.origin.worker_id)) {
    ++stats_.nonfinite_refused;
    return NonFiniteError(args);
  }
  RecordLocked(args, outcome);
  if (!outcome.accepted) return outcome;
  ApplyLocked(args.parts, outcome.lr_factor, args.origin.worker_id);
  ++version_;
  uint64_t& c = clocks_[args.origin.worker_id];
  c = std::max(c, args.clock + 1);
  outcome.new_version = version_;
  return outcome;
}

absl::StatusOr<PushOutcome> ConsistencyController::PushBarrierLocked(
    const PushArgs& args) {
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
  if (args.clock == open_step_ && arrivals_.contains(worker)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", table_->config().name, "': worker ", worker,
        " already pushed for step ", open_step_));
  }
  ASSIGN_OR_RETURN(PushOutcome outcome, StampLocked(args));
  if (args.clock < open_step_) return PushLateLocked(args, outcome);
  RecordLocked(args, outcome);
  if (outcome.accepted) {
    // A stale on-time push counts with weight f(tau).
    const float weight =
        DownweightFactor(staleness_.downweight, staleness_.downweight_lambda,
                         outcome.tau);
    for (const GradientPart& part : args.parts) step_sum_->Add(part, weight);
    if (consistency_.late == LatePolicy::kReuseLast &&
        consistency_.kind == ConsistencyKind::kSemiSync) {
      StepBuffer& current = BufferOf(current_, worker);
      for (const GradientPart& part : args.parts) current.Add(part, weight);
    }
    outcome.lr_factor = weight;
  }
  // A rejected push still counts as the worker's arrival (with nothing to
  // add), so the step does not wait for a push that will never come.
  arrivals_.insert(worker);
  if (outcome.accepted) ++contributed_;
  uint64_t& c = clocks_[worker];
  c = std::max(c, args.clock + 1);
  MaybeCloseLocked(CloseReason::kArrivals, worker);
  outcome.new_version = version_;
  return outcome;
}

absl::StatusOr<PushOutcome> ConsistencyController::PushLateLocked(
    const PushArgs& args, PushOutcome outcome) {
  const uint32_t worker = args.origin.worker_id;
  const std::string step_closed = absl::StrCat(
      "late: step ", args.clock, " of table '", table_->config().name,
      "' closed before this push arrived (open step is ", open_step_, ")");
  float late_factor = 0.0f;
  if (consistency_.kind == ConsistencyKind::kSemiSync &&
      consistency_.late == LatePolicy::kApplyLate && outcome.accepted) {
    // One worker's share of a step, weighted by its staleness.
    const DownweightKind kind = staleness_.downweight == DownweightKind::kNone
                                    ? DownweightKind::kInverse
                                    : staleness_.downweight;
    const float share =
        1.0f / static_cast<float>(std::max<size_t>(1, live_.size()));
    late_factor = share *
                  DownweightFactor(kind, staleness_.downweight_lambda, outcome.tau) *
                  WarmupFactor(version_, staleness_.warmup_versions);
    if (!StaysFiniteLocked(args.parts, late_factor, worker)) {
      ++stats_.nonfinite_refused;
      return NonFiniteError(args);
    }
  }
  RecordLocked(args, outcome);
  WorkerTableStats& w = stats_.workers[worker];
  ++stats_.late;
  ++w.late;
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
      last.Clear();
      for (const GradientPart& part : args.parts) last.Add(part, 1.0f);
      outcome.accepted = false;
      outcome.reject_reason = absl::StrCat(
          step_closed, "; kept to stand in for this worker (late=reuse_last)");
      return outcome;
    }
    case LatePolicy::kApplyLate: {
      if (!outcome.accepted) return outcome;
      outcome.lr_factor = late_factor;
      ApplyLocked(args.parts, outcome.lr_factor, worker);
      ++version_;
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

void ConsistencyController::MaybeCloseLocked(CloseReason reason,
                                             int64_t last_arrival) {
  if (!barrier() || arrivals_.empty()) return;
  if (ever_registered_ < consistency_.num_workers) return;  // start-up gate
  size_t live_arrived = 0;
  for (uint32_t w : live_) live_arrived += arrivals_.contains(w) ? 1 : 0;
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
    if (!arrivals_.contains(w)) missing.push_back(w);
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
    const float scale = 1.0f / static_cast<float>(contributors);
    const float warmup = WarmupFactor(version_, staleness_.warmup_versions);
    if (table_->BufferStaysFinite(*step_sum_, scale, warmup)) {
      table_->ApplyBuffer(*step_sum_, scale, warmup);
      ++version_;
    } else {
      ++stats_.nonfinite_refused;
      spdlog::error("table '{}': step {}'s mean update would make parameters "
                    "non-finite; the step closes without an update",
                    table_->config().name, open_step_);
    }
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
      if (!arrivals_.contains(w)) waiting.push_back(w);
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
      consistency_.step_timeout_s <= 0.0 || arrivals_.empty() ||
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
  if (barrier() && !arrivals_.empty()) CloseStepLocked(CloseReason::kPolicyChange, -1);
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

PolicySnapshot ConsistencyController::Export() const {
  absl::ReaderMutexLock lock(&mu_);
  PolicySnapshot snapshot;
  snapshot.consistency = consistency_;
  snapshot.staleness = staleness_;
  snapshot.version = version_;
  snapshot.open_step = open_step_;
  snapshot.clocks.insert(clocks_.begin(), clocks_.end());
  snapshot.arrivals.assign(arrivals_.begin(), arrivals_.end());
  std::sort(snapshot.arrivals.begin(), snapshot.arrivals.end());
  snapshot.contributed = contributed_;
  snapshot.step_sum = step_sum_->Export();
  for (const auto& [w, buffer] : current_) {
    if (!buffer->empty()) snapshot.current[w] = buffer->Export();
  }
  for (const auto& [w, buffer] : last_) {
    if (!buffer->empty()) snapshot.last[w] = buffer->Export();
  }
  return snapshot;
}

absl::Status ConsistencyController::Import(const PolicySnapshot& snapshot) {
  // Load the buffers first, so a misfit changes nothing.
  std::unique_ptr<StepBuffer> step_sum = table_->NewBuffer();
  RETURN_IF_ERROR(step_sum->Import(snapshot.step_sum));
  auto load = [this](const std::map<uint32_t, BufferSnapshot>& from,
                     absl::flat_hash_map<uint32_t, std::unique_ptr<StepBuffer>>* to)
      -> absl::Status {
    for (const auto& [w, contents] : from) {
      std::unique_ptr<StepBuffer> buffer = table_->NewBuffer();
      RETURN_IF_ERROR(buffer->Import(contents));
      (*to)[w] = std::move(buffer);
    }
    return absl::OkStatus();
  };
  absl::flat_hash_map<uint32_t, std::unique_ptr<StepBuffer>> current, last;
  RETURN_IF_ERROR(load(snapshot.current, &current));
  RETURN_IF_ERROR(load(snapshot.last, &last));
  absl::MutexLock lock(&mu_);
  consistency_ = snapshot.consistency;
  staleness_ = snapshot.staleness;
  version_ = snapshot.version;
  open_step_ = snapshot.open_step;
  clocks_.clear();
  clocks_.insert(snapshot.clocks.begin(), snapshot.clocks.end());
  arrivals_ = absl::flat_hash_set<uint32_t>(snapshot.arrivals.begin(),
                                            snapshot.arrivals.end());
  contributed_ = snapshot.contributed;
  step_sum_ = std::move(step_sum);
  current_ = std::move(current);
  last_ = std::move(last);
  step_opened_ = clock_->Now();
  table_->SetStaleness(staleness_);
  return absl::OkStatus();
}

}  // namespace taups
