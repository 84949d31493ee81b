// Value types describing one push as the server core sees it.
#ifndef TAUPS_SERVER_PUSH_TYPES_H_
#define TAUPS_SERVER_PUSH_TYPES_H_

#include <cstdint>
#include <string>

namespace taups {

// Who sent a push. `seq` increases per (worker_id, worker_incarnation).
struct PushOrigin {
  uint32_t worker_id = 0;
  uint64_t worker_incarnation = 0;
  uint64_t seq = 0;
};

// The server's answer to a push (or to one slice of it).
struct PushOutcome {
  bool accepted = true;
  uint64_t tau = 0;          // version_now - base_version when first seen
  float lr_factor = 1.0f;    // learning-rate multiplier applied
  uint64_t new_version = 0;  // table version on this shard afterwards
  std::string reject_reason;
};

}  // namespace taups

#endif  // TAUPS_SERVER_PUSH_TYPES_H_
