// Refusal: why a shard refused a call, in a form a client tests without
// reading the message (which is for people, and may be reworded). The reason
// rides on the absl::Status as a payload under kRefusalPayloadUrl whose
// value is the reason's number (ps.proto's RefusalReason numbering), and
// across gRPC in the status details (proto/grpc_status_convert.cc: a
// google.rpc.Status-shaped message with one RefusalDetail). A status
// without it, whatever its message says, has Refusal::kNone.
//
// Header-only; thread-safe (pure functions).
#ifndef TAUPS_COMMON_REFUSAL_H_
#define TAUPS_COMMON_REFUSAL_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace taups {

enum class Refusal {
  kNone = 0,
  // A sync / semi-sync table refused a push from a worker the shard does
  // not hold live (it restarted, or the lease ran out): register, then
  // send the push again.
  kNotRegistered = 1,
};

inline constexpr char kRefusalPayloadUrl[] = "type.googleapis.com/taups.v1.RefusalDetail";

inline absl::Status WithRefusal(absl::Status status, Refusal why) {
  if (!status.ok() && why != Refusal::kNone) {
    status.SetPayload(kRefusalPayloadUrl,
                      absl::Cord(std::to_string(static_cast<int>(why))));
  }
  return status;
}

// The number a payload holds; nullopt when there is none or it is not one.
inline std::optional<int> RefusalNumberOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kRefusalPayloadUrl);  // absl::optional
  int number = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &number)) return std::nullopt;
  return number;
}

inline Refusal RefusalOf(const absl::Status& status) {
  const std::optional<int> number = RefusalNumberOf(status);
  if (number == static_cast<int>(Refusal::kNotRegistered)) return Refusal::kNotRegistered;
  return Refusal::kNone;
}

}  // namespace taups

#endif  // TAUPS_COMMON_REFUSAL_H_
