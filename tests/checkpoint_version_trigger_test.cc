// --checkpoint_every_versions=N is kept promptly: the apply path wakes the
// checkpointer once the shard applied N updates since the last checkpoint
// began (UpdateTrigger), so consecutive checkpoints are about N versions
// apart even when pushes come far faster than the 200 ms poll.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/checkpoint_store.h"
#include "server/shard_checkpointer.h"
#include "server/update_trigger.h"

namespace taups {
namespace {

TEST_CASE("the trigger wakes once per arm, on the add that reaches it") {
  UpdateTrigger trigger;
  int woken = 0;
  trigger.SetWake([&] { ++woken; });
  trigger.Add(5);
  CHECK(woken == 0);  // not armed
  trigger.Arm(8);
  trigger.Add(2);
  CHECK(woken == 0);
  trigger.Add(1);  // 8
  CHECK(woken == 1);
  CHECK(trigger.armed() == UpdateTrigger::kDisarmed);
  trigger.Add(10);
  CHECK(woken == 1);
  trigger.Arm(3);  // already passed: the next add wakes
  CHECK(woken == 1);
  trigger.Add(1);
  CHECK(woken == 2);
  CHECK(trigger.total() == 19);
  trigger.SetWake(nullptr);
  trigger.Arm(0);
  trigger.Add(1);
  CHECK(woken == 2);
}

TEST_CASE("version-triggered checkpoints come every N versions, not every poll") {
  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                       "/taups_version_trigger_", getpid());
  std::filesystem::remove_all(dir);
  constexpr uint64_t kN = 40;
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(TableConfig::Dense("w", 64), true, &created).ok());
  ShardCheckpointerOptions options;
  options.dir = dir;
  options.keep = 1000;  // every one is read back below
  options.every_versions = kN;  // no timer
  auto checkpointer = ShardCheckpointer::Open(&store, PosixCheckpointFs(), options, 1);
  REQUIRE(checkpointer.ok());
  (*checkpointer)->StartBackground();

  // One pusher, several thousand pushes a second: the 200 ms poll alone
  // would let hundreds of versions go by between checkpoints. After each
  // push it notes the version at which it first saw each checkpoint
  // written (at or after the write's end, within one push).
  std::vector<uint64_t> seen_at;  // [k]: version when checkpoint k was seen
  uint64_t version = 0;
  const absl::Time stop = absl::Now() + absl::Seconds(1);
  const std::vector<float> g(64, 0.001f);
  for (uint64_t seq = 1; absl::Now() < stop; ++seq) {
    PushMeta meta;
    meta.origin = PushOrigin{0, 1, seq};
    meta.base_version = version;
    absl::StatusOr<PushOutcome> pushed = store.PushDense("w", 0, g, meta);
    REQUIRE(pushed.ok());
    version = pushed->new_version;
    const uint64_t taken = (*checkpointer)->stats().taken;
    while (seen_at.size() < taken) seen_at.push_back(version);
    absl::SleepFor(absl::Microseconds(100));
  }
  checkpointer->reset();  // stops the background thread

  // Each checkpoint's own version (its cut), in the order written.
  CheckpointStoreOptions files;
  files.dir = dir;
  files.keep = 1000;
  auto reader = CheckpointStore::Open(PosixCheckpointFs(), files);
  REQUIRE(reader.ok());
  absl::StatusOr<std::vector<uint64_t>> sequences = (*reader)->List();
  REQUIRE(sequences.ok());
  std::vector<uint64_t> cut;
  for (uint64_t sequence : *sequences) {
    absl::StatusOr<LoadedCheckpoint> loaded = (*reader)->Load(sequence);
    REQUIRE(loaded.ok());
    REQUIRE(loaded->partitions.size() == 1);
    cut.push_back(loaded->partitions[0].snapshot.policy.version);
  }
  INFO("pushed " << version << " versions; " << cut.size() << " checkpoints");
  REQUIRE(cut.size() >= 2);
  REQUIRE(seen_at.size() + 1 >= cut.size());  // the last may be unseen
  // Checkpoint k+1 starts when N updates passed since k began, or when k's
  // write ends if that is later: its cut is at most max(N, the versions
  // applied while k was written) after k's, plus what the thread's wake-up
  // lets by (allowed: 4 N more, for a loaded machine or a sanitizer build;
  // the poll alone lets hundreds by).
  uint64_t worst_gap = 0;
  uint64_t worst_write = 0;
  for (size_t k = 0; k + 1 < cut.size(); ++k) {
    const uint64_t gap = cut[k + 1] - cut[k];
    const uint64_t during_write = seen_at[k] - cut[k];
    worst_gap = std::max(worst_gap, gap);
    worst_write = std::max(worst_write, during_write);
    INFO("checkpoint " << k << " at " << cut[k] << ", next at " << cut[k + 1]
                       << ", written by version " << seen_at[k]);
    CHECK(gap <= std::max(kN, during_write) + 4 * kN);
  }
  WARN("every " << kN << " versions: " << cut.size() << " checkpoints of " << version
                << " versions; largest gap " << worst_gap
                << ", most versions applied during one write " << worst_write);
  // So about every N in all (before the first and after the last: one gap
  // each at most); the poll alone would have written about 5 a second.
  CHECK((cut.size() + 1) * (5 * kN + worst_write) >= version);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace taups
