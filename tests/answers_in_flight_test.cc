// AnswersInFlight: answers are admitted while the bytes in flight stay
// within the limit (or when alone), refused UNAVAILABLE with the flag named
// otherwise, and given back when the last copy of an admission goes.
#include "server/answers_in_flight.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/match.h"

namespace taups {
namespace {

using AdmissionPtr = std::shared_ptr<const AnswersInFlight::Admission>;

TEST_CASE("answers are admitted up to the limit and refused past it") {
  auto in_flight = AnswersInFlight::Create(100);
  absl::StatusOr<AdmissionPtr> a = in_flight->Admit(60);
  REQUIRE(a.ok());
  CHECK(in_flight->bytes_in_flight() == 60);
  absl::StatusOr<AdmissionPtr> b = in_flight->Admit(40);  // exactly full
  REQUIRE(b.ok());
  CHECK(in_flight->bytes_in_flight() == 100);

  absl::StatusOr<AdmissionPtr> c = in_flight->Admit(1);
  REQUIRE(absl::IsUnavailable(c.status()));
  CHECK(absl::StrContains(c.status().message(), "--max_pull_in_flight_mb"));
  CHECK(absl::StrContains(c.status().message(), "100 B"));  // in flight
  CHECK(absl::StrContains(c.status().message(), "retry"));
  CHECK(in_flight->refused() == 1);
  CHECK(in_flight->bytes_in_flight() == 100);  // a refusal takes nothing

  // A copy of an admission holds it too; the last one gives it back.
  AdmissionPtr copy = *a;
  a->reset();
  CHECK(in_flight->bytes_in_flight() == 100);
  copy.reset();
  CHECK(in_flight->bytes_in_flight() == 40);
  CHECK(in_flight->Admit(60).ok());  // dropped at once: back to 40
  CHECK(in_flight->bytes_in_flight() == 40);
  b->reset();
  CHECK(in_flight->bytes_in_flight() == 0);
}

TEST_CASE("an answer alone is admitted whatever its size; one more is not") {
  auto in_flight = AnswersInFlight::Create(100);
  absl::StatusOr<AdmissionPtr> big = in_flight->Admit(1000);
  REQUIRE(big.ok());
  CHECK(in_flight->bytes_in_flight() == 1000);
  CHECK(absl::IsUnavailable(in_flight->Admit(1).status()));
  // Sizes near 2^64 neither wrap the check nor the count.
  CHECK(absl::IsUnavailable(in_flight->Admit(~uint64_t{0}).status()));
  big->reset();
  CHECK(in_flight->Admit(~uint64_t{0} - 5).ok());
  CHECK(in_flight->bytes_in_flight() == 0);
  CHECK(in_flight->refused() == 2);
}

TEST_CASE("an admission outlives the bound that made it") {
  auto in_flight = AnswersInFlight::Create(10);
  absl::StatusOr<AdmissionPtr> held = in_flight->Admit(5);
  REQUIRE(held.ok());
  std::weak_ptr<AnswersInFlight> watch = in_flight;
  in_flight.reset();
  CHECK_FALSE(watch.expired());  // kept alive by the admission
  held->reset();
  CHECK(watch.expired());
}

TEST_CASE("threads admitting at once never pass the limit together") {
  constexpr uint64_t kLimit = 1000;
  auto in_flight = AnswersInFlight::Create(kLimit);
  std::atomic<uint64_t> over{0}, admitted{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(t);
      std::uniform_int_distribution<uint64_t> size(1, 400);
      std::vector<AdmissionPtr> held;
      for (int i = 0; i < 20000; ++i) {
        absl::StatusOr<AdmissionPtr> got = in_flight->Admit(size(random));
        if (got.ok()) {
          ++admitted;
          if (in_flight->bytes_in_flight() > kLimit) ++over;
          held.push_back(std::move(*got));
        } else {
          ++refused;
        }
        if (held.size() > 2 || (i % 3 == 0 && !held.empty())) {
          held.erase(held.begin());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(over.load() == 0);
  CHECK(admitted.load() + refused.load() == 80000);
  CHECK(refused.load() == in_flight->refused());
  CHECK(admitted.load() > 0);
  CHECK(in_flight->bytes_in_flight() == 0);
}

}  // namespace
}  // namespace taups
