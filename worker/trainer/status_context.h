// Adds a "where" prefix to an error while keeping its code, so a failure deep
// in a training loop reads e.g. "step 17: PushDense fashion_mlp: UNAVAILABLE".
//
// Stateless; thread-safe.
#ifndef TAUPS_WORKER_TRAINER_STATUS_CONTEXT_H_
#define TAUPS_WORKER_TRAINER_STATUS_CONTEXT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace taups::trainer {

// OK stays OK; an error keeps its code and gets "`context`: " in front.
inline absl::Status WithContext(const absl::Status& status,
                                std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(std::string(context), ": ", status.message()));
}

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_STATUS_CONTEXT_H_
