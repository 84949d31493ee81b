// ConsistencyPolicy: when a table part's updates apply and what its pulls
// wait for, as one small rule per policy over a PolicyState (see the table
// in ARCHITECTURE.md):
//
//   async      a push applies at once; pulls never wait.
//   ssp(s)     like async; a pull at clock c waits until every live worker
//              reached c - s.                         (async_policies.cc)
//   sync       pushes for the open step are summed; when every live worker
//              has pushed, the mean applies once (one version) and the next
//              step opens; a pull at clock c waits until step c-1 closed.
//   semi_sync  like sync, but the step closes at quorum or timeout, and
//              missing workers are handled by the late policy.
//                                                     (barrier_policy.cc)
//
// A policy receives a push already stamped: tau and the staleness decision
// (reject above tau_max, f(tau), warm-up; common/staleness.h), clipping
// done. It decides what happens to it, counts it (PolicyState::Record), and
// refuses an update whose result would not be finite.
//
// Stateless and immutable; every method runs under the controller's mutex.
#ifndef TAUPS_SERVER_CONSISTENCY_POLICY_H_
#define TAUPS_SERVER_CONSISTENCY_POLICY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "server/policy_state.h"
#include "server/push_types.h"
#include "taups/table_config.h"

namespace taups {

class ConsistencyPolicy {
 public:
  virtual ~ConsistencyPolicy() = default;

  // A whole push with its stamp. Errors change nothing.
  virtual absl::StatusOr<PushOutcome> Push(PolicyState& state,
                                           const PushArgs& args,
                                           PushOutcome stamp) const = 0;
  // Whether a pull by `worker` at `clock` may read now; if not, what it
  // waits for.
  virtual bool PullReady(const PolicyState& state, uint32_t worker,
                         uint64_t clock) const = 0;
  virtual std::string WaitingFor(const PolicyState& state,
                                 uint64_t clock) const = 0;
  // The clock a (re)joining worker starts at.
  virtual uint64_t JoinClock(const PolicyState& state, uint32_t worker) const = 0;
  // The step being gathered, for barrier policies; else 0.
  virtual uint64_t OpenStep(const PolicyState& /*state*/) const { return 0; }

  // Membership changed (live workers, registrations).
  virtual void OnMembership(PolicyState& /*state*/) const {}
  // Time passed (called every few milliseconds).
  virtual void OnTick(PolicyState& /*state*/) const {}
  // An admin call switches away from this policy: settle what is pending.
  virtual void OnLeave(PolicyState& /*state*/) const {}
  // ... and to this one: start from the state as it is.
  virtual void OnEnter(PolicyState& /*state*/) const {}
};

// The rule for `kind` (a static instance).
const ConsistencyPolicy& PolicyFor(ConsistencyKind kind);

// Defined in async_policies.cc and barrier_policy.cc.
const ConsistencyPolicy& AsyncPolicyInstance();
const ConsistencyPolicy& SspPolicyInstance();
const ConsistencyPolicy& BarrierPolicyInstance();

}  // namespace taups

#endif  // TAUPS_SERVER_CONSISTENCY_POLICY_H_
