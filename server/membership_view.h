// MembershipView: one consistent picture of a shard's membership, taken
// under Membership's lock in one go (Membership::View) and handed as a whole
// to every table part (Partition / ConsistencyController::SetLiveWorkers),
// so no part ever sees live and awaited workers from two different moments.
//
// A plain value; thread-compatible.
#ifndef TAUPS_SERVER_MEMBERSHIP_VIEW_H_
#define TAUPS_SERVER_MEMBERSHIP_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taups {

struct MembershipView {
  std::vector<uint32_t> live;     // workers holding a lease, in id order
  // Known to restored tables, not registered again yet (AwaitReturning), in
  // id order: not live, but barriers count them.
  std::vector<uint32_t> awaited;
  // Workers that registered with this process at least once (awaited ones
  // do not count until they do).
  size_t ever_registered = 0;
};

}  // namespace taups

#endif  // TAUPS_SERVER_MEMBERSHIP_VIEW_H_
