#include "server/answers_in_flight.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/limits.h"

namespace taups {

AnswersInFlight::Admission::~Admission() { owner_->Release(bytes_); }

std::shared_ptr<AnswersInFlight> AnswersInFlight::Create(uint64_t limit_bytes) {
  return std::shared_ptr<AnswersInFlight>(new AnswersInFlight(limit_bytes));
}

absl::StatusOr<std::shared_ptr<const AnswersInFlight::Admission>>
AnswersInFlight::Admit(uint64_t bytes) {
  uint64_t now = in_flight_.load(std::memory_order_relaxed);
  while (true) {
    // Alone, an answer always goes (the limit is never below one pull's).
    if (now != 0 && (bytes > limit_bytes_ || now > limit_bytes_ - bytes)) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return absl::UnavailableError(absl::StrCat(
          "shard busy: ", HumanBytes(now),
          " of pull answers are still being sent to their callers (limit ",
          HumanBytes(limit_bytes_), ", --max_pull_in_flight_mb); this ",
          HumanBytes(bytes), " answer was not sent: retry once they are read"));
    }
    if (in_flight_.compare_exchange_weak(now, now + bytes,
                                         std::memory_order_relaxed)) {
      break;
    }
  }
  return std::shared_ptr<const Admission>(
      new Admission(shared_from_this(), bytes));
}

void AnswersInFlight::Release(uint64_t bytes) {
  in_flight_.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace taups
