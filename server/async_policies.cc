// The policies that apply every push at once: async and ssp(s).
#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/consistency_policy.h"

namespace taups {
namespace {

class AsyncPolicy : public ConsistencyPolicy {
 public:
  absl::StatusOr<PushOutcome> Push(PolicyState& state, const PushArgs& args,
                                   PushOutcome stamp) const override {
    if (stamp.accepted &&
        !state.StaysFinite(args.parts, stamp.lr_factor, args.origin.worker_id)) {
      return state.NonFiniteError(args);
    }
    state.Record(args, stamp);
    if (!stamp.accepted) return stamp;
    state.Apply(args.parts, stamp.lr_factor, args.origin.worker_id);
    ++state.version;
    state.AdvanceClock(args.origin.worker_id, args.clock);
    stamp.new_version = state.version;
    return stamp;
  }
  bool PullReady(const PolicyState&, uint32_t, uint64_t) const override {
    return true;
  }
  std::string WaitingFor(const PolicyState&, uint64_t) const override {
    return "nothing (async pulls never wait)";
  }
  uint64_t JoinClock(const PolicyState& state, uint32_t worker) const override {
    return state.workers.ClockOf(worker);
  }
};

// Bounded staleness: pushes as async; a pull at clock c needs every live
// worker at c - s or later. A worker that joins starts at the slowest live
// worker's clock, so it neither blocks the others nor runs ahead of them.
class SspPolicy final : public AsyncPolicy {
 public:
  bool PullReady(const PolicyState& state, uint32_t,
                 uint64_t clock) const override {
    const uint64_t min = state.workers.MinLive(-1);
    return min == std::numeric_limits<uint64_t>::max() ||
           clock <= min + state.consistency.staleness_bound;
  }
  std::string WaitingFor(const PolicyState& state, uint64_t clock) const override {
    const uint64_t min = state.workers.MinLive(-1);
    const std::vector<uint32_t> slowest = state.workers.LiveAt(min);
    const uint64_t bound = state.consistency.staleness_bound;
    return absl::StrCat("a pull at clock ", clock,
                        " needs every live worker at >= ",
                        clock - std::min<uint64_t>(clock, bound), "; workers [",
                        absl::StrJoin(slowest, ","), "] are at ", min);
  }
  uint64_t JoinClock(const PolicyState& state, uint32_t worker) const override {
    const uint64_t min = state.workers.MinLive(worker);
    const uint64_t start = min == std::numeric_limits<uint64_t>::max() ? 0 : min;
    return std::max(start, AsyncPolicy::JoinClock(state, worker));
  }
};

}  // namespace

const ConsistencyPolicy& AsyncPolicyInstance() {
  static const AsyncPolicy* const policy = new AsyncPolicy();
  return *policy;
}

const ConsistencyPolicy& SspPolicyInstance() {
  static const SspPolicy* const policy = new SspPolicy();
  return *policy;
}

const ConsistencyPolicy& PolicyFor(ConsistencyKind kind) {
  switch (kind) {
    case ConsistencyKind::kSync:
    case ConsistencyKind::kSemiSync:
      return BarrierPolicyInstance();
    case ConsistencyKind::kSsp:
      return SspPolicyInstance();
    case ConsistencyKind::kAsync:
      break;
  }
  return AsyncPolicyInstance();
}

}  // namespace taups
