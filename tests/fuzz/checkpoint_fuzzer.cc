// Fuzz target: loading a shard's checkpoint files (server/checkpoint_*).
//
// The first input byte chooses what the rest is:
//   bit 0   0: a partition file (part-N), 1: the MANIFEST
//   bit 1   0: block records that checkpoint_framing.h turns into a file
//              with valid checksums (reaching the record decoders),
//           1: the file's raw bytes (reaching the block layer's checks)
// A partition file that decodes is then loaded as ps_server loads one
// (ShardCheckpointer::Restore): its table is created in a fresh shard under
// small ServerLimits and its partition restored from the snapshot. A delta
// (an incremental checkpoint's sparse table) is first folded onto a base
// holding the table with no rows, as the loader folds a chain; a fold it
// refuses must be DATA_LOSS too.
// Properties beyond "no crash, no sanitizer report":
//   - every refusal of the decoders is DATA_LOSS (a corrupt file, never a
//     crash or another code);
//   - a restored partition can be captured, written and read again, and
//     its summary (version, step, rows, values) is unchanged (applied is
//     one more: the restore is an entry of the apply order);
//   - a manifest that decodes writes and reads back equal.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "server/checkpoint_delta.h"
#include "server/checkpoint_format.h"
#include "server/limits.h"
#include "server/parameter_store.h"
#include "tests/fuzz/checkpoint_framing.h"
#include "tests/fuzz/fuzz_check.h"

namespace taups::fuzz {
namespace {

// Files in memory, written and read from their start.
class MemoryFile final : public CheckpointReadableFile,
                         public CheckpointWritableFile {
 public:
  explicit MemoryFile(std::string data = "") : data_(std::move(data)) {}
  absl::StatusOr<size_t> Read(char* buffer, size_t n) override {
    const size_t take = std::min(n, data_.size() - read_at_);
    std::memcpy(buffer, data_.data() + read_at_, take);
    read_at_ += take;
    return take;
  }
  absl::Status Append(absl::string_view data) override {
    data_.append(data.data(), data.size());
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Close() override { return absl::OkStatus(); }
  uint64_t size() const { return data_.size(); }

 private:
  std::string data_;
  size_t read_at_ = 0;
};

void CheckRefusal(const absl::Status& status, const char* what) {
  if (!status.ok() && !absl::IsDataLoss(status)) {
    std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
    TAUPS_FUZZ_CHECK(absl::IsDataLoss(status), what);
  }
}

ServerLimits SmallLimits() {
  ServerLimits limits;
  limits.max_table_bytes = uint64_t{16} << 20;
  limits.default_sparse_rows = 4096;
  return limits;
}

absl::StatusOr<PartitionCheckpoint> ReadPartition(const std::string& bytes) {
  MemoryFile file(bytes);
  uint32_t digest = 0;
  return ReadPartitionFile(&file, "part-00000", bytes.size(), &digest);
}

// As ShardCheckpointer::Restore does for each partition of a checkpoint.
void Restore(const PartitionCheckpoint& part) {
  ParameterStore store(/*shard_index=*/0, /*num_shards=*/1, RealClock::Get(),
                       absl::Seconds(10), SmallLimits());
  bool created = false;
  absl::StatusOr<TableInfo> info = store.CreateTable(part.config, false, &created);
  if (!info.ok()) return;  // over a limit, or a config the store refuses
  if (info->range.begin != part.range.begin || info->range.end != part.range.end) {
    return;  // the loader refuses a range this shard does not own
  }
  absl::StatusOr<std::shared_ptr<Partition>> partition =
      store.PartitionOf(part.config.name);
  TAUPS_FUZZ_CHECK(partition.ok(), "a created table has no partition");
  if (!(*partition)->Restore(part.snapshot).ok()) return;

  const PartitionCheckpoint again = CapturePartition(**partition);
  MemoryFile written;
  absl::StatusOr<ManifestFile> wrote = WritePartitionFile(&written, again);
  TAUPS_FUZZ_CHECK(wrote.ok(), "writing a restored partition");
  std::string bytes(written.size(), '\0');
  TAUPS_FUZZ_CHECK(written.Read(bytes.data(), bytes.size()).ok(), "read back");
  absl::StatusOr<PartitionCheckpoint> reread = ReadPartition(bytes);
  if (!reread.ok()) {
    std::fprintf(stderr, "%s\n", reread.status().ToString().c_str());
  }
  TAUPS_FUZZ_CHECK(reread.ok(), "a restored partition's file reads back");
  // The restore is itself one entry of the apply order (Partition::Restore).
  PartitionSummary before = SummaryOf(part, 0);
  before.applied += 1;
  const PartitionSummary after = SummaryOf(*reread, 0);
  if (!(before == after)) {
    std::fprintf(stderr,
                 "loaded: version %lu step %lu applied %lu rows %lu values %lu\n"
                 "again:  version %lu step %lu applied %lu rows %lu values %lu\n",
                 before.version, before.open_step, before.applied, before.rows,
                 before.values, after.version, after.open_step, after.applied,
                 after.rows, after.values);
  }
  TAUPS_FUZZ_CHECK(before == after, "restore changed the partition's summary");
}

void FuzzPartition(const std::string& bytes) {
  absl::StatusOr<PartitionCheckpoint> part = ReadPartition(bytes);
  CheckRefusal(part.status(), "ReadPartitionFile");
  if (!part.ok()) return;
  if (!part->delta) {
    Restore(*part);
    return;
  }
  PartitionCheckpoint base = *part;
  base.delta = false;
  base.removed.clear();
  base.snapshot.table = TableSnapshot{};
  absl::StatusOr<std::vector<PartitionCheckpoint>> folded =
      FoldDelta({std::move(base)}, {*std::move(part)}, "part-00000");
  CheckRefusal(folded.status(), "FoldDelta");
  if (!folded.ok()) return;
  TAUPS_FUZZ_CHECK(folded->size() == 1 && !folded->front().delta, "a fold holds no delta");
  Restore(folded->front());
}

void FuzzManifest(const std::string& bytes) {
  MemoryFile file(bytes);
  absl::StatusOr<CheckpointManifest> manifest =
      ReadManifestFile(&file, kManifestName, bytes.size());
  CheckRefusal(manifest.status(), "ReadManifestFile");
  if (!manifest.ok()) return;
  MemoryFile written;
  TAUPS_FUZZ_CHECK(WriteManifestFile(&written, *manifest).ok(), "write manifest");
  std::string again(written.size(), '\0');
  TAUPS_FUZZ_CHECK(written.Read(again.data(), again.size()).ok(), "read back");
  MemoryFile source(again);
  absl::StatusOr<CheckpointManifest> reread =
      ReadManifestFile(&source, kManifestName, again.size());
  TAUPS_FUZZ_CHECK(reread.ok(), "a written manifest reads back");
  TAUPS_FUZZ_CHECK(reread->header == manifest->header &&
                       reread->base == manifest->base &&
                       reread->partitions == manifest->partitions &&
                       reread->files == manifest->files,
                   "manifest round trip");
}

}  // namespace
}  // namespace taups::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string file =
      (mode & 2) ? std::string(rest) : taups::fuzz::FrameBlocks(rest);
  if (mode & 1) {
    taups::fuzz::FuzzManifest(file);
  } else {
    taups::fuzz::FuzzPartition(file);
  }
  return 0;
}
