// CheckpointStore against the real filesystem and a fault-injecting one:
// round trips of a realistic shard through Partition::Restore, crashes at
// every step of a write, byte flips and truncations, a full disk, refused
// permissions, and keep-newest-K.
#include "server/checkpoint_store.h"

#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "server/checkpoint_fault_fs.h"
#include "tests/checkpoint_shard_fixture.h"
#include "tests/test_skip.h"

namespace taups {
namespace {

namespace fs = std::filesystem;
using testing::CheckpointShard;
using testing::SameCheckpoint;

// A fresh directory under $TMPDIR, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "taups-ckpt-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool AnyTemp(const std::string& dir) {
  for (const std::string& n : Names(dir)) {
    if (n.rfind("tmp-", 0) == 0) return true;
  }
  return false;
}

std::unique_ptr<CheckpointStore> OpenStore(CheckpointFs* fs, const std::string& dir,
                                           uint32_t keep = 3) {
  CheckpointStoreOptions options;
  options.dir = dir;
  options.keep = keep;
  absl::StatusOr<std::unique_ptr<CheckpointStore>> store = CheckpointStore::Open(fs, options);
  INFO(store.status());
  REQUIRE(store.ok());
  return std::move(*store);
}

// What the store read back, as a ShardCheckpoint.
ShardCheckpoint AsShard(const LoadedCheckpoint& loaded) {
  ShardCheckpoint out;
  out.header = loaded.manifest.header;
  out.partitions = loaded.partitions;
  return out;
}

// `expected` as written under sequence `sequence`.
ShardCheckpoint Stamped(ShardCheckpoint expected, uint64_t sequence) {
  expected.header.sequence = sequence;
  return expected;
}

TEST_CASE("round trip: a shard's partitions load and restore to equal snapshots") {
  TempDir dir;
  CheckpointShard shard(1);
  shard.Train(30);
  const ShardCheckpoint written = shard.Capture(42);
  // What the fixture promises: rows, a refused and an error answer, a step
  // buffer with a gradient in it.
  REQUIRE(written.partitions[1].snapshot.table.keys.size() > 50);
  REQUIRE(!written.partitions[2].snapshot.policy.step_sum.sums.empty());
  REQUIRE(written.partitions[2].snapshot.policy.arrivals == std::vector<uint32_t>{0});
  bool saw_error = false, saw_refused = false;
  for (const auto& p : written.partitions) {
    for (const auto& inc : p.snapshot.dedup.incarnations) {
      for (const auto& [seq, answer] : inc.answers) {
        saw_error |= !answer.status.ok();
        saw_refused |= answer.status.ok() && !answer.outcome.accepted;
      }
    }
  }
  REQUIRE(saw_error);
  REQUIRE(saw_refused);

  auto store = OpenStore(PosixCheckpointFs(), dir.path());
  absl::StatusOr<CheckpointWriteInfo> info = store->Write(written);
  INFO(info.status());
  REQUIRE(info.ok());
  REQUIRE(info->sequence == 1);
  REQUIRE(Names(dir.path()) == std::vector<std::string>{CheckpointDirName(1)});
  REQUIRE(Names(info->path) ==
          std::vector<std::string>{"MANIFEST", "part-00000", "part-00001", "part-00002"});

  absl::StatusOr<LoadedCheckpoint> loaded = OpenStore(PosixCheckpointFs(), dir.path())->LoadNewest();
  INFO(loaded.status());
  REQUIRE(loaded.ok());
  REQUIRE(loaded->broken.empty());
  REQUIRE(loaded->bytes == info->bytes);
  REQUIRE(loaded->manifest.header.sync_step == written.header.sync_step);
  REQUIRE(loaded->manifest.partitions[2].open_step == written.header.sync_step.value());
  // Exactly what was written, row order included.
  for (size_t i = 0; i < written.partitions.size(); ++i) {
    REQUIRE(loaded->partitions[i].snapshot.table == written.partitions[i].snapshot.table);
  }
  REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(written, 1)));

  // Restored into fresh partitions, each snapshots as the original does.
  std::vector<std::unique_ptr<Partition>> restored_partitions;
  for (size_t i = 0; i < loaded->partitions.size(); ++i) {
    const PartitionCheckpoint& p = loaded->partitions[i];
    restored_partitions.push_back(testing::NewPartition(p.config, p.range));
    Partition* fresh = restored_partitions.back().get();
    const absl::Status restored = fresh->Restore(p.snapshot);
    INFO(p.config.name << ": " << restored);
    REQUIRE(restored.ok());
    const PartitionSnapshot now = fresh->Snapshot();
    const PartitionSnapshot original = shard.partitions()[i]->Snapshot();
    // The restore is itself one step of the apply order, after the
    // restored position.
    REQUIRE(now.applied == original.applied + 1);
    REQUIRE(testing::Canonical(now.table, p.config.dim) ==
            testing::Canonical(original.table, p.config.dim));
    REQUIRE(now.policy == original.policy);
    REQUIRE(testing::SameDedup(now.dedup, original.dedup));
    REQUIRE(fresh->version() == shard.partitions()[i]->version());
    REQUIRE(fresh->open_step() == shard.partitions()[i]->open_step());
  }
  // The sync table's config in force came along.
  REQUIRE(loaded->partitions[2].config.consistency.kind == ConsistencyKind::kSync);

  // Both go on alike. Worker 1 completes the open sync step (worker 0's
  // half is in the restored step buffer; membership is not checkpointed,
  // so the restored shard learns it again).
  Partition& sync_original = *shard.partitions()[2];
  Partition& sync_restored = *restored_partitions[2];
  sync_restored.SetLiveWorkers(MembershipView{{0, 1}, {}, 2});
  const std::vector<float> g(64, 0.25f);
  PushSlice step;
  step.origin = PushOrigin{1, 501, 1000};
  step.header.clock = sync_original.open_step();
  step.header.base_version = sync_original.version();
  step.part.values = g;
  absl::StatusOr<PushOutcome> a1 = sync_original.Push(step);
  absl::StatusOr<PushOutcome> a2 = sync_restored.Push(step);
  REQUIRE(a1.ok());
  REQUIRE(a2.ok());
  REQUIRE(a1->new_version == a2->new_version);
  REQUIRE(sync_restored.open_step() == written.header.sync_step.value() + 1);
  REQUIRE(sync_restored.Snapshot().table == sync_original.Snapshot().table);

  // A push answered before the checkpoint, sent again, is answered from the
  // restored window and not applied again.
  const DedupSnapshot::Incarnation& inc =
      loaded->partitions[0].snapshot.dedup.incarnations.front();
  const auto& [seq, first_answer] = *inc.answers.rbegin();
  const Range range = loaded->partitions[0].range;
  const std::vector<float> zero(range.size(), 0.0f);
  PushSlice again;
  again.origin = PushOrigin{inc.worker_id, inc.worker_incarnation, seq};
  again.part.offset = range.begin;
  again.part.values = zero;
  const TableSnapshot before = restored_partitions[0]->Snapshot().table;
  absl::StatusOr<PushOutcome> repeat = restored_partitions[0]->Push(again);
  REQUIRE(repeat.status() == first_answer.status);
  if (repeat.ok()) {
    REQUIRE(repeat->duplicate);
    REQUIRE(repeat->new_version == first_answer.outcome.new_version);
  }
  REQUIRE(restored_partitions[0]->Snapshot().table == before);
}

TEST_CASE("an empty directory has no checkpoint: NOT_FOUND") {
  TempDir dir;
  auto store = OpenStore(PosixCheckpointFs(), dir.Sub("fresh"));
  REQUIRE(store->LoadNewest().status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("torn writes: a crash at every step never loads a partial checkpoint") {
  CheckpointShard shard(2);
  shard.Train(5);
  const ShardCheckpoint a = shard.Capture(1);
  shard.Train(5);
  const ShardCheckpoint b = shard.Capture(2);

  // The steps of a clean second write, to crash at each of them.
  std::vector<FaultInjectingFs::Step> steps;
  {
    TempDir dir;
    FaultInjectingFs faulty(PosixCheckpointFs());
    auto store = OpenStore(&faulty, dir.path());
    REQUIRE(store->Write(a).ok());
    faulty.Reset();
    REQUIRE(store->Write(b).ok());
    steps = faulty.log();
  }
  // mkdir, 4 files x (create, 5 sections + end written, fsync, close),
  // fsync tmp, rename, fsync dir.
  REQUIRE(steps.size() >= 30);
  size_t manifest_written = 0, rename_step = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].op == FaultInjectingFs::Op::kAppend &&
        steps[i].path.find("MANIFEST") != std::string::npos) {
      manifest_written = i + 1;  // the last MANIFEST write
    }
    if (steps[i].op == FaultInjectingFs::Op::kRename && rename_step == 0) rename_step = i + 1;
  }
  REQUIRE(manifest_written > 0);
  REQUIRE(rename_step > manifest_written);

  // Writes `a`, then crashes while writing `b`.
  auto crash_second_write = [&](const std::string& dir, size_t step, size_t partial) {
    FaultInjectingFs faulty(PosixCheckpointFs());
    auto store = OpenStore(&faulty, dir);
    REQUIRE(store->Write(a).ok());
    faulty.Reset();
    faulty.CrashAt(step, partial);
    REQUIRE(!store->Write(b).ok());
    REQUIRE(faulty.crashed());
  };
  int checked = 0;
  for (size_t step = 1; step <= steps.size(); ++step) {
    for (size_t partial : {size_t{0}, size_t{9}, size_t{300}}) {
      if (partial > 0 && steps[step - 1].op != FaultInjectingFs::Op::kAppend) continue;
      INFO("crash at step " << step << " (" << FaultInjectingFs::OpName(steps[step - 1].op)
                            << " " << steps[step - 1].path << "), " << partial
                            << " bytes of it written");
      TempDir dir;
      crash_second_write(dir.path(), step, partial);

      // Restarted: the new process sees what the crash left.
      auto restarted = OpenStore(PosixCheckpointFs(), dir.path());
      REQUIRE(!AnyTemp(dir.path()));
      absl::StatusOr<LoadedCheckpoint> loaded = restarted->LoadNewest();
      REQUIRE(loaded.ok());
      REQUIRE(loaded->broken.empty());
      if (step <= rename_step) {
        REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(a, 1)));
      } else {
        REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(b, 2)));
      }
      ++checked;

      // The same leftovers under the final name (as if a power cut kept the
      // rename but lost data): loaded only if they are complete.
      if (step < rename_step) {
        TempDir again;
        crash_second_write(again.path(), step, partial);
        const std::string tmp = again.Sub("tmp-" + CheckpointDirName(2).substr(5));
        if (!fs::exists(tmp)) continue;  // the crash came before mkdir
        fs::rename(tmp, again.Sub(CheckpointDirName(2)));
        absl::StatusOr<LoadedCheckpoint> l2 =
            OpenStore(PosixCheckpointFs(), again.path())->LoadNewest();
        REQUIRE(l2.ok());
        const bool manifest_torn =
            step < manifest_written ||
            (step == manifest_written && partial < steps[step - 1].bytes);
        if (manifest_torn) {
          REQUIRE(l2->broken.size() == 1);
          REQUIRE(fs::exists(again.Sub(CheckpointDirName(2) + ".broken")));
          REQUIRE(SameCheckpoint(AsShard(*l2), Stamped(a, 1)));
        } else {
          REQUIRE((SameCheckpoint(AsShard(*l2), Stamped(b, 2)) ||
                   SameCheckpoint(AsShard(*l2), Stamped(a, 1))));
        }
      }
    }
  }
  REQUIRE(checked > static_cast<int>(steps.size()));
}

// Copies every file of a checkpoint directory into memory, and back.
using DirBytes = std::map<std::string, std::string>;
DirBytes ReadDir(const std::string& dir) {
  DirBytes out;
  for (const std::string& name : Names(dir)) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    out[name].assign(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}
void WriteDir(const std::string& dir, const DirBytes& files) {
  fs::remove_all(dir);
  fs::create_directory(dir);
  for (const auto& [name, bytes] : files) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
}

TEST_CASE("corrupt checkpoints: flips and truncations are caught, the older one used") {
  TempDir dir;
  CheckpointShard shard(3);
  shard.Train(20);
  const ShardCheckpoint a = shard.Capture(1);
  shard.Train(5);
  const ShardCheckpoint b = shard.Capture(2);
  {
    auto store = OpenStore(PosixCheckpointFs(), dir.path());
    REQUIRE(store->Write(a).ok());
    REQUIRE(store->Write(b).ok());
  }
  const std::string newest = dir.Sub(CheckpointDirName(2));
  const std::string broken = newest + ".broken";
  const DirBytes pristine = ReadDir(newest);
  uint64_t total = 0;
  for (const auto& [name, bytes] : pristine) total += bytes.size();

  std::mt19937_64 rng(2024);
  constexpr int kFlips = 300, kTruncations = 100, kGrowths = 20;
  for (int i = 0; i < kFlips + kTruncations + kGrowths; ++i) {
    // A byte of the directory, uniformly; its file.
    uint64_t at = std::uniform_int_distribution<uint64_t>(0, total - 1)(rng);
    auto it = pristine.begin();
    while (at >= it->second.size()) at -= (it++)->second.size();
    DirBytes damaged = pristine;
    std::string& bytes = damaged[it->first];
    std::string what;
    if (i < kFlips) {
      const int bit = std::uniform_int_distribution<int>(0, 7)(rng);
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
      what = "flip bit " + std::to_string(bit);
    } else if (i < kFlips + kTruncations) {
      bytes.resize(at);
      what = "truncate";
    } else {
      bytes += std::string(1 + at % 40, '\0');
      what = "grow";
    }
    INFO(what << " " << it->first << " at " << at << " of " << it->second.size());
    fs::remove_all(broken);
    WriteDir(newest, damaged);
    absl::StatusOr<LoadedCheckpoint> loaded =
        OpenStore(PosixCheckpointFs(), dir.path())->LoadNewest();
    REQUIRE(loaded.ok());
    REQUIRE(loaded->broken == std::vector<std::string>{broken});
    REQUIRE(fs::exists(broken));
    REQUIRE(!fs::exists(newest));
    REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(a, 1)));
  }
  // A missing partition file, and a missing manifest.
  for (const std::string& victim : {std::string("part-00001"), std::string("MANIFEST")}) {
    fs::remove_all(broken);
    DirBytes damaged = pristine;
    damaged.erase(victim);
    WriteDir(newest, damaged);
    absl::StatusOr<LoadedCheckpoint> loaded =
        OpenStore(PosixCheckpointFs(), dir.path())->LoadNewest();
    REQUIRE(loaded.ok());
    REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(a, 1)));
  }
  // Both damaged: none valid.
  fs::remove_all(broken);
  DirBytes damaged = pristine;
  damaged["MANIFEST"].resize(10);
  WriteDir(newest, damaged);
  std::ofstream(dir.Sub(CheckpointDirName(1)) + "/part-00000", std::ios::app) << "x";
  absl::StatusOr<LoadedCheckpoint> none = OpenStore(PosixCheckpointFs(), dir.path())->LoadNewest();
  REQUIRE(none.status().code() == absl::StatusCode::kNotFound);
  REQUIRE_THAT(std::string(none.status().message()), Catch::Contains("2 broken"));
  REQUIRE(fs::exists(dir.Sub(CheckpointDirName(1) + ".broken")));
}

// The status of a second write that `fault` makes fail; checks that it left
// no temporary files and the first checkpoint still loads.
absl::Status FailSecondWrite(const FaultInjectingFs::Fault& fault) {
  TempDir dir;
  CheckpointShard shard(4);
  shard.Train(5);
  const ShardCheckpoint a = shard.Capture(1);
  shard.Train(5);
  FaultInjectingFs faulty(PosixCheckpointFs());
  auto store = OpenStore(&faulty, dir.path());
  REQUIRE(store->Write(a).ok());
  faulty.AddFault(fault);
  absl::StatusOr<CheckpointWriteInfo> info = store->Write(shard.Capture(2));
  REQUIRE(!info.ok());
  REQUIRE(!AnyTemp(dir.path()));
  REQUIRE(Names(dir.path()) == std::vector<std::string>{CheckpointDirName(1)});
  absl::StatusOr<LoadedCheckpoint> loaded = store->LoadNewest();
  REQUIRE(loaded.ok());
  REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(a, 1)));
  // The store goes on: the next write succeeds.
  faulty.Reset();
  absl::StatusOr<CheckpointWriteInfo> next = store->Write(shard.Capture(3));
  REQUIRE(next.ok());
  return info.status();
}

TEST_CASE("disk full and refused permissions: a precise status, nothing left over") {
  using Op = FaultInjectingFs::Op;
  struct Case {
    std::optional<Op> op;
    std::string path;
    uint64_t nth;
    int error_number;
    absl::StatusCode code;
  };
  const std::vector<Case> cases = {
      {Op::kAppend, "part-00001", 2, ENOSPC, absl::StatusCode::kResourceExhausted},
      {Op::kAppend, "MANIFEST", 1, ENOSPC, absl::StatusCode::kResourceExhausted},
      {Op::kSync, "part-00000", 1, ENOSPC, absl::StatusCode::kResourceExhausted},
      {Op::kCreateDir, "", 1, ENOSPC, absl::StatusCode::kResourceExhausted},
      {Op::kCreateDir, "", 1, EACCES, absl::StatusCode::kPermissionDenied},
      {Op::kNewFile, "part-00002", 1, EACCES, absl::StatusCode::kPermissionDenied},
      {Op::kNewFile, "MANIFEST", 1, EROFS, absl::StatusCode::kUnknown},
      {Op::kSyncDir, "tmp-", 1, EIO, absl::StatusCode::kUnknown},
      {Op::kRename, "", 1, EACCES, absl::StatusCode::kPermissionDenied},
      {Op::kSyncDir, "", 2, EIO, absl::StatusCode::kUnknown},  // after the rename
      {Op::kClose, "part-00000", 1, EIO, absl::StatusCode::kUnknown},
  };
  for (const Case& c : cases) {
    FaultInjectingFs::Fault fault;
    fault.op = c.op;
    fault.path_part = c.path;
    fault.nth = c.nth;
    fault.error_number = c.error_number;
    INFO(FaultInjectingFs::OpName(*c.op) << " " << c.path << " #" << c.nth << " errno "
                                         << c.error_number);
    const absl::Status status = FailSecondWrite(fault);
    INFO(status);
    REQUIRE(ErrnoOf(status) == c.error_number);
    REQUIRE_THAT(std::string(status.message()),
                 Catch::Contains("errno " + std::to_string(c.error_number)));
    REQUIRE_THAT(std::string(status.message()), Catch::Contains("checkpoint 2 not written"));
    if (c.code != absl::StatusCode::kUnknown) REQUIRE(status.code() == c.code);
  }
}

TEST_CASE("keep newest K; sequences never reused") {
  TempDir dir;
  CheckpointShard shard(5);
  auto store = OpenStore(PosixCheckpointFs(), dir.path(), 2);
  std::vector<ShardCheckpoint> written;
  for (uint64_t i = 1; i <= 5; ++i) {
    shard.Train(2);
    written.push_back(shard.Capture(i));
    absl::StatusOr<CheckpointWriteInfo> info = store->Write(written.back());
    REQUIRE(info.ok());
    REQUIRE(info->sequence == i);
    if (i > 2) REQUIRE(info->deleted == std::vector<uint64_t>{i - 2});
  }
  REQUIRE(*store->List() == std::vector<uint64_t>{4, 5});
  REQUIRE(Names(dir.path()) ==
          std::vector<std::string>{CheckpointDirName(4), CheckpointDirName(5)});
  // The newest damaged: the one before it, and the next write is 6.
  fs::resize_file(dir.Sub(CheckpointDirName(5)) + "/part-00000", 100);
  absl::StatusOr<LoadedCheckpoint> loaded = store->LoadNewest();
  REQUIRE(loaded.ok());
  REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(written[3], 4)));
  absl::StatusOr<CheckpointWriteInfo> next = store->Write(written.back());
  REQUIRE(next.ok());
  REQUIRE(next->sequence == 6);
  // Broken ones are kept and not counted against K.
  REQUIRE(Names(dir.path()) == std::vector<std::string>{CheckpointDirName(4),
                                                        CheckpointDirName(5) + ".broken",
                                                        CheckpointDirName(6)});
}

// A real full disk: a 1 MiB tmpfs. Needs CAP_SYS_ADMIN (root outside a
// restricted container).
TEST_CASE("a real 1 MiB tmpfs fills up; then goes read-only", "[mount]") {
  TempDir dir;
  const std::string mnt = dir.Sub("mnt");
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) {
    TAUPS_SKIP("cannot mount a tmpfs here: " << std::strerror(errno));
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};

  CheckpointShard small(6);
  small.Train(3);
  const ShardCheckpoint a = small.Capture(1);
  auto store = OpenStore(PosixCheckpointFs(), mnt + "/ckpt");
  REQUIRE(store->Write(a).ok());

  // ~2 MiB of values cannot fit.
  ShardCheckpoint big = a;
  big.partitions[0].snapshot.table.values.assign(big.partitions[0].range.size(), 0.5f);
  big.partitions[1].snapshot.table.keys.resize(60000);
  big.partitions[1].snapshot.table.values.assign(60000 * CheckpointShard::kDim, 0.25f);
  absl::StatusOr<CheckpointWriteInfo> full = store->Write(big);
  INFO(full.status());
  REQUIRE(full.status().code() == absl::StatusCode::kResourceExhausted);
  REQUIRE(ErrnoOf(full.status()) == ENOSPC);
  REQUIRE(!AnyTemp(mnt + "/ckpt"));
  absl::StatusOr<LoadedCheckpoint> loaded = store->LoadNewest();
  REQUIRE(loaded.ok());
  REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(a, 1)));

  // Read-only: EROFS, which no chmod can bypass for root.
  REQUIRE(::mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=1m") == 0);
  absl::StatusOr<CheckpointWriteInfo> ro = store->Write(a);
  REQUIRE(ErrnoOf(ro.status()) == EROFS);
  loaded = store->LoadNewest();
  REQUIRE(loaded.ok());
  REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(a, 1)));
}

// A real EACCES needs a user that permissions apply to.
TEST_CASE("a directory without write permission: PERMISSION_DENIED", "[nonroot]") {
  if (::geteuid() == 0) TAUPS_SKIP("root ignores directory permissions");
  TempDir dir;
  CheckpointShard shard(7);
  const ShardCheckpoint a = shard.Capture(1);
  auto store = OpenStore(PosixCheckpointFs(), dir.path());
  REQUIRE(store->Write(a).ok());
  fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec);
  absl::StatusOr<CheckpointWriteInfo> denied = store->Write(a);
  REQUIRE(denied.status().code() == absl::StatusCode::kPermissionDenied);
  REQUIRE(ErrnoOf(denied.status()) == EACCES);
  absl::StatusOr<LoadedCheckpoint> loaded = store->LoadNewest();
  REQUIRE(loaded.ok());
  REQUIRE(SameCheckpoint(AsShard(*loaded), Stamped(a, 1)));
}

}  // namespace
}  // namespace taups
