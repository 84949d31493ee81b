// Parked pulls in the shard core (ParameterStore with PullContext::park,
// Partition::ReadOrPark, PullWaiters), with a manual clock: a pull its sync
// step does not let read parks and takes a waiting seat; each way out —
// the step closing, the deadline passing on Tick, a cancel, a dropped
// table, CloseWaits — wakes it exactly once and gives the seat back; many
// pullers racing one closing step are each woken once (run under TSan too).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "common/clock.h"
#include "server/parameter_store.h"

namespace taups {
namespace {

constexpr uint64_t kSize = 4;

struct Shard {
  Shard() : store(0, 1, &clock, absl::Seconds(60)) {
    TableConfig config = TableConfig::Dense("w", kSize);
    config.optimizer.learning_rate = 1.0f;
    config.consistency.kind = ConsistencyKind::kSync;
    config.consistency.num_workers = 2;
    bool created = false;
    REQUIRE(store.CreateTable(config, false, &created).ok());
    store.Register(0, 1, absl::Seconds(60));
    store.Register(1, 1, absl::Seconds(60));
  }
  void Push(uint32_t worker) {
    const std::vector<float> ones(kSize, 1.0f);
    PushMeta meta;
    meta.origin = PushOrigin{worker, 1, 1};
    REQUIRE(store.PushDense("w", 0, ones, meta).ok());
  }
  uint64_t Waiting() const { return store.Resources().waiting_calls; }

  ManualClock clock{absl::FromUnixSeconds(1000)};
  ParameterStore store;
};

// One pull at clock 1 that parks; records how it was woken.
struct Parked {
  Parked(Shard& shard, absl::Duration wait) : out(kSize) {
    PullContext ctx;
    ctx.worker = 0;
    ctx.clock = 1;
    ctx.deadline = shard.clock.Now() + wait;
    PullWaiters::Wake wake = [this](absl::Status why) {
      status = std::move(why);
      wakes.fetch_add(1);
    };
    ctx.park = &wake;
    // No Catch assertion here: some are made on other threads.
    absl::StatusOr<PullResult> pulled =
        shard.store.PullDense("w", 0, absl::MakeSpan(out), ctx);
    answer = pulled.status();
    if (pulled.ok()) ticket = pulled->parked;
  }
  std::vector<float> out;
  absl::Status answer;  // the pull call's own
  ParkedPull ticket;
  absl::Status status;
  std::atomic<int> wakes{0};
};

TEST_CASE("a parked pull is woken once when the step closes, then reads it") {
  Shard shard;
  Parked pull(shard, absl::Seconds(30));
  REQUIRE(pull.answer.ok());
  REQUIRE(pull.ticket.parked());
  CHECK(shard.Waiting() == 1);
  shard.Push(0);
  CHECK(pull.wakes == 0);  // the step waits for worker 1
  shard.Push(1);
  CHECK(pull.wakes == 1);
  CHECK(pull.status.ok());
  CHECK(shard.Waiting() == 0);
  pull.ticket.Cancel();  // already woken: nothing happens
  CHECK(pull.wakes == 1);
  Parked again(shard, absl::Seconds(30));  // the same pull, now ready
  CHECK_FALSE(again.ticket.parked());
  CHECK(again.out == std::vector<float>(kSize, -1.0f));  // 0 - lr * mean(1)
}

TEST_CASE("a parked pull past its deadline is woken on Tick with what it waits for") {
  Shard shard;
  Parked pull(shard, absl::Seconds(5));
  REQUIRE(pull.ticket.parked());
  shard.clock.Advance(absl::Seconds(4));
  shard.store.Tick();
  CHECK(pull.wakes == 0);
  shard.clock.Advance(absl::Seconds(1));
  shard.store.Tick();
  REQUIRE(pull.wakes == 1);
  CHECK(absl::IsDeadlineExceeded(pull.status));
  CHECK(absl::StrContains(pull.status.message(), "step 0"));
  CHECK(absl::StrContains(pull.status.message(), "waiting for workers [0,1]"));
  CHECK(shard.Waiting() == 0);
}

TEST_CASE("cancel, DropTable and CloseWaits each wake parked pulls once") {
  Shard shard;
  Parked cancelled(shard, absl::Seconds(30));
  cancelled.ticket.Cancel();
  CHECK(cancelled.wakes == 1);
  CHECK(absl::IsCancelled(cancelled.status));
  CHECK(shard.Waiting() == 0);

  Parked dropped(shard, absl::Seconds(30));
  REQUIRE(shard.store.DropTable("w").ok());
  CHECK(dropped.wakes == 1);
  CHECK(absl::IsNotFound(dropped.status));

  Shard closing;
  Parked shut(closing, absl::Seconds(30));
  closing.store.CloseWaits(absl::UnavailableError("shard shutting down"));
  CHECK(shut.wakes == 1);
  CHECK(absl::IsUnavailable(shut.status));
  CHECK(closing.Waiting() == 0);
  // Once closed, a pull that would wait is refused instead of parked.
  std::vector<float> out(kSize);
  PullWaiters::Wake never = [](absl::Status) { FAIL("woken after close"); };
  PullContext ctx;
  ctx.worker = 0;
  ctx.clock = 1;
  ctx.deadline = closing.clock.Now() + absl::Seconds(30);
  ctx.park = &never;
  CHECK(absl::IsUnavailable(
      closing.store.PullDense("w", 0, absl::MakeSpan(out), ctx).status()));
}

TEST_CASE("pullers racing the push that closes the step are each woken once or read") {
  for (int round = 0; round < 20; ++round) {
    Shard shard;
    shard.Push(0);
    constexpr int kPullers = 8;
    std::vector<std::unique_ptr<Parked>> pulls(kPullers);
    std::vector<std::thread> threads;
    for (int i = 0; i < kPullers; ++i) {
      threads.emplace_back([&, i] {
        pulls[i] = std::make_unique<Parked>(shard, absl::Seconds(30));
      });
    }
    shard.Push(1);  // races the pullers
    for (std::thread& t : threads) t.join();
    for (const auto& pull : pulls) {
      REQUIRE(pull->answer.ok());
      // Parked: woken once, OK. Not parked: it read the closed step.
      if (pull->ticket.parked()) {
        CHECK(pull->wakes == 1);
        CHECK(pull->status.ok());
      } else {
        CHECK(pull->wakes == 0);
        CHECK(pull->out == std::vector<float>(kSize, -1.0f));
      }
    }
    CHECK(shard.Waiting() == 0);
  }
}

}  // namespace
}  // namespace taups
