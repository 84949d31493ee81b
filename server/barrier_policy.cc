// The barrier policies, sync (BSP) and semi_sync: pushes for the open step
// are summed and the step's mean applies once when it closes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/refusal.h"
#include "common/staleness.h"
#include "server/consistency_policy.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

enum class CloseReason { kArrivals, kTimeout, kMembership, kPolicyChange };

const char* CloseReasonName(CloseReason reason) {
  switch (reason) {
    case CloseReason::kArrivals: return "all arrived";
    case CloseReason::kTimeout: return "timeout";
    case CloseReason::kMembership: return "membership change";
    case CloseReason::kPolicyChange: return "policy change";
  }
  return "?";
}

bool SemiSync(const PolicyState& state) {
  return state.consistency.kind == ConsistencyKind::kSemiSync;
}

bool ReusesLast(const PolicyState& state) {
  return SemiSync(state) && state.consistency.late == LatePolicy::kReuseLast;
}

class BarrierPolicy final : public ConsistencyPolicy {
 public:
  absl::StatusOr<PushOutcome> Push(PolicyState& state, const PushArgs& args,
                                   PushOutcome stamp) const override {
    const uint32_t worker = args.origin.worker_id;
    if (!state.workers.live().contains(worker)) {
      // The reason is structured (common/refusal.h): the client redoes the
      // push after registering on it, never on the message's words.
      return WithRefusal(
          absl::FailedPreconditionError(absl::StrCat(
              "worker ", worker, " is not registered with this shard (or its "
              "lease expired); table '", state.name(), "' is ",
              ConsistencyKindName(state.consistency.kind),
              ", so register before pushing")),
          Refusal::kNotRegistered);
    }
    if (args.clock > state.open_step && state.just_switched) {
      // Right after a switch to this policy another shard may have opened
      // a later step, and the worker (whose clock follows the most advanced
      // shard) pushes for it: close what this shard gathered and catch up,
      // instead of stopping the worker. Only until a step closes normally,
      // so no client can make steps skip in steady state.
      if (!state.arrivals.empty()) Close(state, CloseReason::kPolicyChange, -1);
      state.open_step = args.clock;
      state.step_opened = state.clock->Now();
    }
    if (args.clock > state.open_step) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table '", state.name(), "': worker ", worker, " pushed for step ",
          args.clock, " but step ", state.open_step,
          " is still open; pull (which waits for the step to close) first"));
    }
    if (args.clock == state.open_step && state.arrivals.contains(worker)) {
      return absl::FailedPreconditionError(
          absl::StrCat("table '", state.name(), "': worker ", worker,
                       " already pushed for step ", state.open_step));
    }
    if (args.clock < state.open_step) return PushLate(state, args, stamp);
    state.Record(args, stamp);
    if (stamp.accepted) {
      // A stale on-time push counts with weight f(tau).
      const float weight =
          DownweightFactor(state.staleness.downweight,
                           state.staleness.downweight_lambda, stamp.tau);
      for (const GradientPart& part : args.parts) state.step_sum->Add(part, weight);
      if (ReusesLast(state)) {
        StepBuffer& current = state.BufferOf(state.current, worker);
        for (const GradientPart& part : args.parts) current.Add(part, weight);
      }
      stamp.lr_factor = weight;
    }
    // A rejected push still counts as the worker's arrival (with nothing to
    // add), so the step does not wait for a push that will never come.
    state.arrivals.insert(worker);
    if (stamp.accepted) ++state.contributed;
    state.AdvanceClock(worker, args.clock);
    MaybeClose(state, CloseReason::kArrivals, worker);
    stamp.new_version = state.version;
    return stamp;
  }

  // A pull at clock c reads once step c-1 closed. While catching up (after
  // a restore or a switch, until a step closes normally) it also reads when
  // this shard will not see the puller's push for step c-1: the shard is
  // more than one step behind it, or one step behind without its arrival.
  // Its push was then lost with a restarted shard (or landed on a shard
  // that switched earlier), so the step could only close by the pull's
  // deadline; the puller's next push, for step c, catches the shard up.
  bool PullReady(const PolicyState& state, uint32_t worker,
                 uint64_t clock) const override {
    if (state.open_step >= clock) return true;
    if (!state.just_switched) return false;
    return state.open_step + 1 < clock || !state.arrivals.contains(worker);
  }

  std::string WaitingFor(const PolicyState& state, uint64_t) const override {
    std::vector<uint32_t> waiting;
    for (uint32_t w : state.workers.live()) {
      if (!state.arrivals.contains(w)) waiting.push_back(w);
    }
    std::sort(waiting.begin(), waiting.end());
    std::vector<uint32_t> awaited(state.awaited.begin(), state.awaited.end());
    std::sort(awaited.begin(), awaited.end());
    return absl::StrCat("step ", state.open_step, " of table '", state.name(),
                        "' is still open, waiting for workers [",
                        absl::StrJoin(waiting, ","), "]",
                        awaited.empty()
                            ? std::string()
                            : absl::StrCat(" and for [", absl::StrJoin(awaited, ","),
                                           "] to register again after the "
                                           "shard's restore"),
                        " (",
                        state.ever_registered, " of ",
                        state.consistency.num_workers,
                        " expected workers registered)");
  }

  uint64_t JoinClock(const PolicyState& state, uint32_t) const override {
    return state.open_step;
  }
  uint64_t OpenStep(const PolicyState& state) const override {
    return state.open_step;
  }

  void OnMembership(PolicyState& state) const override {
    MaybeClose(state, CloseReason::kMembership, -1);
  }

  void OnTick(PolicyState& state) const override {
    if (!SemiSync(state) || state.consistency.step_timeout_s <= 0.0 ||
        state.arrivals.empty() ||
        state.ever_registered < state.consistency.num_workers) {
      return;
    }
    if (state.clock->Now() - state.step_opened >=
        absl::Seconds(state.consistency.step_timeout_s)) {
      Close(state, CloseReason::kTimeout, -1);
    }
  }

  void OnLeave(PolicyState& state) const override {
    if (!state.arrivals.empty()) Close(state, CloseReason::kPolicyChange, -1);
  }

  void OnEnter(PolicyState& state) const override {
    // Gather first the step after the one the most advanced live worker is
    // on. A worker may have pulled for its current step under the old policy
    // (which did not wait); its push for that step arrives now and must not
    // be "ahead" of the open step, which would stop the worker. It comes
    // late instead and is dropped, as are the laggards' pushes until they
    // reach the open step (their pulls return at once and carry the step,
    // so they catch up in one or two steps).
    uint64_t max_clock = 0;
    bool any = false;
    for (uint32_t w : state.workers.live()) {
      auto it = state.workers.clocks().find(w);
      if (it == state.workers.clocks().end()) continue;
      max_clock = std::max(max_clock, it->second);
      any = true;
    }
    if (any) state.open_step = std::max(state.open_step, max_clock + 1);
    state.step_opened = state.clock->Now();
    state.just_switched = true;
  }

 private:
  // A push for a step that already closed.
  static absl::StatusOr<PushOutcome> PushLate(PolicyState& state,
                                              const PushArgs& args,
                                              PushOutcome stamp) {
    const uint32_t worker = args.origin.worker_id;
    const std::string step_closed = absl::StrCat(
        "late: step ", args.clock, " of table '", state.name(),
        "' closed before this push arrived (open step is ", state.open_step, ")");
    const bool apply_late = SemiSync(state) &&
                            state.consistency.late == LatePolicy::kApplyLate &&
                            stamp.accepted;
    float late_factor = 0.0f;
    if (apply_late) {
      // One worker's share of a step, weighted by its staleness.
      const DownweightKind kind =
          state.staleness.downweight == DownweightKind::kNone
              ? DownweightKind::kInverse
              : state.staleness.downweight;
      const float share =
          1.0f / static_cast<float>(std::max<size_t>(1, state.workers.live().size()));
      late_factor =
          share *
          DownweightFactor(kind, state.staleness.downweight_lambda, stamp.tau) *
          WarmupFactor(state.version, state.staleness.warmup_versions);
      if (!state.StaysFinite(args.parts, late_factor, worker)) {
        return state.NonFiniteError(args);
      }
    }
    state.Record(args, stamp);
    ++state.stats.late;
    ++state.stats.workers[worker].late;
    if (!SemiSync(state) || state.consistency.late == LatePolicy::kDrop) {
      stamp.accepted = false;
      stamp.reject_reason = SemiSync(state)
                                ? absl::StrCat(step_closed, "; dropped (late=drop)")
                                : step_closed;
      return stamp;
    }
    if (state.consistency.late == LatePolicy::kReuseLast) {
      // Not applied now: it becomes the stand-in for the next step this
      // worker misses.
      StepBuffer& last = state.BufferOf(state.last, worker);
      last.Clear();
      for (const GradientPart& part : args.parts) last.Add(part, 1.0f);
      stamp.accepted = false;
      stamp.reject_reason = absl::StrCat(
          step_closed, "; kept to stand in for this worker (late=reuse_last)");
      return stamp;
    }
    if (!stamp.accepted) return stamp;  // apply_late of a rejected push
    stamp.lr_factor = late_factor;
    state.Apply(args.parts, late_factor, worker);
    ++state.version;
    stamp.new_version = state.version;
    return stamp;
  }

  // Closes the open step if enough live workers arrived.
  static void MaybeClose(PolicyState& state, CloseReason reason,
                         int64_t last_arrival) {
    if (state.arrivals.empty()) return;
    if (state.ever_registered < state.consistency.num_workers) return;  // start-up gate
    size_t live_arrived = 0;
    for (uint32_t w : state.workers.live()) live_arrived += state.arrivals.contains(w) ? 1 : 0;
    // Workers awaited after a restore count as live that have not arrived
    // (they cannot push before registering again).
    const size_t members = state.workers.live().size() + state.awaited.size();
    size_t needed = members;
    if (SemiSync(state)) {
      needed = static_cast<size_t>(std::ceil(
          state.consistency.quorum * static_cast<double>(members) - 1e-9));
      needed = std::max<size_t>(needed, 1);
    }
    if (live_arrived >= needed) Close(state, reason, last_arrival);
  }

  static void Close(PolicyState& state, CloseReason reason,
                    int64_t last_arrival) {
    const absl::Time now = state.clock->Now();
    size_t contributors = state.contributed;
    // Missing workers in id order, so stand-ins are summed in the same order
    // on every run (the live set's iteration order is not deterministic).
    std::vector<uint32_t> missing;
    for (uint32_t w : state.workers.live()) {
      if (!state.arrivals.contains(w)) missing.push_back(w);
    }
    std::sort(missing.begin(), missing.end());
    for (uint32_t w : missing) {
      ++state.stats.workers[w].missed_steps;
      if (!ReusesLast(state)) continue;
      auto last = state.last.find(w);
      if (last != state.last.end() && !last->second->empty()) {
        state.step_sum->AddBuffer(*last->second, 1.0f);
        ++contributors;
      }
    }
    if (contributors > 0) {
      const float scale = 1.0f / static_cast<float>(contributors);
      const float warmup =
          WarmupFactor(state.version, state.staleness.warmup_versions);
      if (state.table->BufferStaysFinite(*state.step_sum, scale, warmup)) {
        state.table->ApplyBuffer(*state.step_sum, scale, warmup);
        ++state.version;
      } else {
        ++state.stats.nonfinite_refused;
        spdlog::error("table '{}': step {}'s mean update would make "
                      "parameters non-finite; the step closes without an "
                      "update", state.name(), state.open_step);
      }
    }
    for (auto& [w, buffer] : state.current) {
      if (buffer->empty()) continue;
      std::unique_ptr<StepBuffer>& last = state.last[w];
      if (!last) last = state.table->NewBuffer();
      last.swap(buffer);
      buffer->Clear();
    }
    const absl::Duration waited = now - state.step_opened;
    TableStats& stats = state.stats;
    ++stats.steps_closed;
    stats.step_wait_s.Add(absl::ToDoubleSeconds(waited));
    if (reason == CloseReason::kTimeout) {
      ++stats.timeout_closes;
    } else {
      ++stats.quorum_closes;
    }
    if (last_arrival >= 0) {
      stats.last_straggler = last_arrival;
      ++stats.workers[static_cast<uint32_t>(last_arrival)].closed_steps_as_last;
    }
    spdlog::debug("table '{}': step {} closed after {} ({}); {} gradients, "
                  "closed by worker {}, missing [{}]",
                  state.name(), state.open_step, absl::FormatDuration(waited),
                  CloseReasonName(reason), contributors, last_arrival,
                  absl::StrJoin(missing, ","));
    ++state.open_step;
    state.step_opened = now;
    if (reason != CloseReason::kPolicyChange) state.just_switched = false;
    state.arrivals.clear();
    state.contributed = 0;
    state.step_sum->Clear();
  }
};

}  // namespace

const ConsistencyPolicy& BarrierPolicyInstance() {
  static const BarrierPolicy* const policy = new BarrierPolicy();
  return *policy;
}

}  // namespace taups
