// Which step cuts a shard keeps when its writes fall behind its steps: at
// most 4 steps' copies wait, and the ones that give way follow from the
// step numbers alone (multiples of 4 N outlast the others), so shards
// that fall behind by different amounts still share recent steps.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/checkpoint_fs.h"
#include "server/shard_checkpointer.h"

namespace taups {
namespace {

// The POSIX file system, except that the first rename waits until Open()
// (so the shard's first checkpoint write stalls there).
class GatedFs final : public CheckpointFs {
 public:
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  bool Waiting() {
    absl::MutexLock lock(&mu_);
    return waiting_;
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    {
      absl::MutexLock lock(&mu_);
      waiting_ = true;
      mu_.Await(absl::Condition(&open_));
    }
    return base_->Rename(from, to);
  }
  absl::Status CreateDir(const std::string& path) override { return base_->CreateDir(path); }
  absl::StatusOr<std::unique_ptr<CheckpointWritableFile>> NewFile(
      const std::string& path) override {
    return base_->NewFile(path);
  }
  absl::StatusOr<std::unique_ptr<CheckpointReadableFile>> OpenFile(
      const std::string& path) override {
    return base_->OpenFile(path);
  }
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    return base_->FileSize(path);
  }
  absl::Status SyncDir(const std::string& path) override { return base_->SyncDir(path); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    return base_->ListDir(path);
  }
  absl::Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  absl::Status RemoveDir(const std::string& path) override { return base_->RemoveDir(path); }
  bool IsDir(const std::string& path) override { return base_->IsDir(path); }

 private:
  CheckpointFs* const base_ = PosixCheckpointFs();
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;
};

void PushStep(ParameterStore& store, uint64_t step) {
  PushMeta meta;
  meta.clock = step;
  meta.origin = PushOrigin{0, 10, step + 1};
  meta.base_version = store.GetTable("s")->version;
  const std::vector<float> g(64, 1.0f);
  auto pushed = store.PushDense("s", 0, g, meta);
  INFO(pushed.status().ToString());
  REQUIRE(pushed.ok());
}

void MakeTable(ParameterStore& store) {
  store.Register(0, 10, absl::ZeroDuration());
  TableConfig sync = TableConfig::Dense("s", 64);
  sync.consistency.kind = ConsistencyKind::kSync;
  sync.consistency.num_workers = 1;  // every push closes a step
  bool created = false;
  REQUIRE(store.CreateTable(sync, true, &created).ok());
}

TEST_CASE("a shard whose write stalls keeps the cuts of multiples of 4 N") {
  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                       "/taups_step_queue_", getpid());
  std::filesystem::remove_all(dir);
  GatedFs fs;
  {
    ParameterStore store(0, 1);
    MakeTable(store);
    ShardCheckpointerOptions options;
    options.dir = dir;
    options.keep = 10;
    options.every_steps = 1;  // a cut at every step: multiples of 4 outlast
    auto checkpointer = ShardCheckpointer::Open(&store, &fs, options, 1);
    REQUIRE(checkpointer.ok());
    (*checkpointer)->StartBackground();
    absl::SleepFor(absl::Milliseconds(400));  // the table gets its hook
    PushStep(store, 0);  // step 1 closes: its write stalls at the rename
    absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!fs.Waiting() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
    REQUIRE(fs.Waiting());
    // Steps 2..20 close while it stalls; every cut is copied (and filed)
    // before the next step, as a shard whose steps outrun its disk would.
    for (uint64_t step = 1; step < 20; ++step) {
      PushStep(store, step);
      absl::SleepFor(absl::Milliseconds(30));
    }
    fs.Open();
    deadline = absl::Now() + absl::Seconds(20);
    while ((*checkpointer)->stats().step_cuts < 5 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    absl::SleepFor(absl::Milliseconds(300));  // nothing more comes
    const CheckpointerStats stats = (*checkpointer)->stats();
    CHECK(stats.step_cuts == 5);  // 1, then the 4 kept
    CHECK(stats.last_step_cut == 20);
  }
  // The kept ones are 8, 12, 16 and 20 (giving way oldest first would have
  // kept 17-20, each shard its own four when they stall for different times).
  for (uint64_t step : {1, 8, 12, 16, 20, 4, 17, 19}) {
    const bool kept = step == 1 || step % 4 == 0;
    const bool expected = kept && step != 4;
    ParameterStore restored(0, 1);
    ShardCheckpointerOptions options;
    options.dir = dir;
    options.restore_step = step;
    auto reader = ShardCheckpointer::Open(&restored, PosixCheckpointFs(), options, 2);
    REQUIRE(reader.ok());
    auto report = (*reader)->Restore();
    INFO("step " << step << ": " << report.status().ToString());
    CHECK(report.ok() == expected);
    if (expected && report.ok()) CHECK(report->tables.at(0).open_step == step);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace taups
