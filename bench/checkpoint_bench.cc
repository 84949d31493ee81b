// checkpoint_bench: how fast a shard's checkpoint is written and loaded,
// next to the disk's own sequential write speed measured in the same run.
//
//   checkpoint_bench --dir=/var/tmp/ckpt-bench --mb=1024 --trials=3
//
// One dense Adam partition of --mb MiB (values + 3 state floats each) is
// built as a real Partition; each trial then
//   1. snapshots it twice: the whole copy under the state lock
//      (CapturePartition, the reference: how partitions were cut before),
//      and as the shard cuts it now (Partition::BeginCut, the pause pushes
//      see, then the block copy while they could go on),
//   2. writes it with CheckpointStore::Write (temp dir, CRC32C per block,
//      fsync per file, manifest, rename, directory fsync),
//   3. writes the same number of bytes with plain POSIX calls (4 MiB
//      write(2)s, fsync, close, directory fsync): the disk's reference,
//   4. loads it back with LoadNewest (every block checked).
// Each timed write starts after sync(2), so no earlier write's dirty pages
// are flushed on its time. The order of 2 and 3 alternates between trials;
// the median of each is reported, and the ratio checkpoint / POSIX write
// throughput.
//
//   checkpoint_bench --sparse_rows=1048576 --dim=32 --pushes=1000 --batch=512
//
// With --sparse_rows, an incremental checkpoint instead: one sparse Adagrad
// partition of that many rows (all created first) gets a full checkpoint,
// then --pushes pushes of --batch Zipf(--zipf) keys; each trial then writes
// the delta of the rows they changed (on the full one) and a full
// checkpoint of the same state, and the POSIX reference of the full one's
// bytes, and reports bytes and seconds of both (snapshot included: it is
// the pause pushes see) and the ratio full / delta.
//
//   checkpoint_bench --step_cut --mb=256 --trials=3 --cut_every=20 --workers=2
//
// With --step_cut, the path of --checkpoint_every_steps instead: one sync
// dense Adam table of --mb MiB (--workers registered workers; each step
// every worker pushes a 64 Ki-float gradient, the first ones' pushes are
// gathered and the last one's closes the step, applying the mean to the
// whole table) in a ParameterStore with a real ShardCheckpointer
// (every_steps = --cut_every) writing in the background; every push is
// timed. The push that closes a cut step holds the cut in its time; while
// the cut is copied and written the pushes go on (the closing ones then
// copy the blocks they change that the copier has not reached), and then
// while the same bytes are written with plain POSIX calls (the disk's speed
// under the same load). Each round runs --trials cuts twice, alternating:
// the reference (ShardCheckpointerOptions::copy_cut_on_apply_path, the
// whole copy under the partition's lock, as cuts were taken before) and the
// block copy; --step_ms of "compute" between steps gives the copier time.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/machine_info.h"
#include "common/clock.h"
#include "common/crc32c.h"
#include "server/checkpoint_store.h"
#include "server/dense_table.h"
#include "bench/key_sampler.h"
#include "server/parameter_store.h"
#include "server/partition.h"
#include "server/shard_checkpointer.h"
#include "server/sparse_table.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, dir, "/var/tmp/taups-checkpoint-bench",
          "Directory to write in (created; emptied at the end). Put it on the "
          "disk a shard would use, not on a tmpfs.");
ABSL_FLAG(uint64_t, mb, 1024, "Checkpoint size in MiB (parameters + Adam state).");
ABSL_FLAG(int, trials, 3, "Timed trials; medians are reported.");
ABSL_FLAG(uint64_t, sparse_rows, 0,
          "Rows of a sparse table for an incremental checkpoint run (0: the "
          "dense run); a power of two spreads the Zipf ranks best.");
ABSL_FLAG(uint32_t, dim, 32, "Sparse run: floats per row.");
ABSL_FLAG(uint64_t, pushes, 1000, "Sparse run: pushes between the checkpoints.");
ABSL_FLAG(uint64_t, batch, 512, "Sparse run: keys drawn per push (before dedup).");
ABSL_FLAG(double, zipf, 1.1, "Sparse run: Zipf exponent of the key popularity.");
ABSL_FLAG(bool, step_cut, false,
          "Time pushes to a sync table checkpointed at step boundaries "
          "(--checkpoint_every_steps) instead; --trials cuts.");
ABSL_FLAG(uint64_t, cut_every, 20, "Step-cut run: steps between two cuts.");
ABSL_FLAG(uint32_t, workers, 2,
          "Step-cut run: workers pushing each step (the last one closes it; the "
          "others' pushes are gathered until then).");
ABSL_FLAG(int, step_ms, 0, "Step-cut run: milliseconds the workers compute between steps.");
ABSL_FLAG(int, rounds, 2,
          "Step-cut run: rounds of the reference and the block copy, alternating.");

namespace taups::bench {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double MiBps(uint64_t bytes, double seconds) { return bytes / 1048576.0 / seconds; }

// Writes `bytes` bytes of `pattern` to dir/raw with write(2), fsync(2),
// close(2), then fsyncs `dir`; seconds taken.
double PosixWrite(const std::string& dir, uint64_t bytes, const std::string& pattern) {
  const std::string path = dir + "/raw";
  ::sync();  // nothing of an earlier write left to flush
  const absl::Time start = absl::Now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "open %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  uint64_t left = bytes;
  while (left > 0) {
    const size_t n = std::min<uint64_t>(left, pattern.size());
    const ssize_t w = ::write(fd, pattern.data(), n);
    if (w <= 0) {
      std::fprintf(stderr, "write %s: %s\n", path.c_str(), std::strerror(errno));
      std::exit(1);
    }
    left -= static_cast<uint64_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::fprintf(stderr, "fsync %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ::fsync(dfd);
  ::close(dfd);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  ::unlink(path.c_str());
  return seconds;
}

// 4 MiB of bytes for the POSIX reference writes.
std::string Pattern() {
  std::string pattern(size_t{4} << 20, '\0');
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<char>(i * 131);
  return pattern;
}

// Pushes `keys` (deduplicated) with small gradients to `partition`.
void PushKeys(Partition& partition, std::vector<uint64_t> keys, uint32_t dim,
              uint64_t seq) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<float> values(keys.size() * dim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.001f * ((i + seq) % 13) - 0.006f;
  PushSlice slice;
  slice.origin = PushOrigin{0, 1, seq};
  slice.header.slices = 1;
  slice.part.keys = keys;
  slice.part.values = values;
  absl::StatusOr<PushOutcome> pushed = partition.Push(slice);
  if (!pushed.ok()) {
    std::fprintf(stderr, "push: %s\n", pushed.status().ToString().c_str());
    std::exit(1);
  }
}

// Writes `checkpoint`; seconds taken (after a sync(2)), bytes through `bytes`.
double TimedWrite(CheckpointStore& store, const ShardCheckpoint& checkpoint,
                  CheckpointWriteInfo* info) {
  ::sync();
  const absl::Time start = absl::Now();
  absl::StatusOr<CheckpointWriteInfo> written = store.Write(checkpoint);
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", written.status().ToString().c_str());
    std::exit(1);
  }
  *info = *written;
  return absl::ToDoubleSeconds(absl::Now() - start);
}

int RunSparse(const std::string& dir, int trials, const std::string& pattern) {
  const uint64_t rows = absl::GetFlag(FLAGS_sparse_rows);
  const uint32_t dim = absl::GetFlag(FLAGS_dim);
  const uint64_t pushes = absl::GetFlag(FLAGS_pushes);
  const uint64_t batch = absl::GetFlag(FLAGS_batch);
  const double zipf = absl::GetFlag(FLAGS_zipf);
  TableConfig config = TableConfig::Sparse("bench", dim);
  config.optimizer.kind = OptimizerKind::kAdagrad;
  auto table = std::make_unique<SparseTable>(config);
  SparseTable* sparse = table.get();
  Partition partition(std::move(table), RealClock::Get());
  uint64_t seq = 1;
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < rows; ++k) {
    keys.push_back(k);
    if (keys.size() == 65536 || k + 1 == rows) {
      PushKeys(partition, keys, dim, seq++);
      keys.clear();
    }
  }
  for (const std::string& line : DescribeMachine()) std::printf("# %s\n", line.c_str());
  std::printf("# incremental checkpoint of one sparse Adagrad partition: %llu rows of "
              "dim %u; %llu pushes of %llu Zipf(%.2f) keys between checkpoints, in %s\n",
              static_cast<unsigned long long>(rows), dim,
              static_cast<unsigned long long>(pushes), static_cast<unsigned long long>(batch),
              zipf, dir.c_str());

  CheckpointStoreOptions options;
  options.dir = dir + "/store";
  options.keep = 1000;
  absl::StatusOr<std::unique_ptr<CheckpointStore>> store =
      CheckpointStore::Open(PosixCheckpointFs(), options);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  std::vector<double> delta_s, full_s, raw_s, delta_pause_s, full_pause_s;
  uint64_t delta_bytes = 0, full_bytes = 0, changed = 0;
  uint32_t cut = 0;
  for (int t = 0; t < trials; ++t) {
    // The base: a full checkpoint that starts the change tracking.
    ShardCheckpoint base;
    base.partitions.push_back(CheckpointOf(partition, partition.SnapshotWith([&](Table&) {
      return sparse->ExportChanges(0, ++cut).rows;
    })));
    CheckpointWriteInfo base_info;
    TimedWrite(**store, base, &base_info);
    const uint32_t since = cut;
    base = ShardCheckpoint();
    for (uint64_t p = 0; p < pushes; ++p) {
      PushKeys(partition, ZipfKeys(batch, rows, zipf, seq), dim, seq);
      ++seq;
    }
    // The delta on it, then a full checkpoint of the same state.
    absl::Time start = absl::Now();
    SparseTable::Changes changes;
    ShardCheckpoint delta;
    delta.base = CheckpointBase{base_info.sequence, base_info.manifest_digest};
    delta.partitions.push_back(CheckpointOf(partition, partition.SnapshotWith([&](Table&) {
      changes = sparse->ExportChanges(since, ++cut);
      return std::move(changes.rows);
    })));
    delta.partitions.back().delta = true;
    delta.partitions.back().removed = std::move(changes.removed);
    delta_pause_s.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    changed = delta.partitions.back().snapshot.table.keys.size();
    CheckpointWriteInfo info;
    delta_s.push_back(delta_pause_s.back() + TimedWrite(**store, delta, &info));
    delta_bytes = info.bytes;
    delta = ShardCheckpoint();

    start = absl::Now();
    ShardCheckpoint full;
    full.partitions.push_back(CapturePartition(partition));
    full_pause_s.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    full_s.push_back(full_pause_s.back() + TimedWrite(**store, full, &info));
    full_bytes = info.bytes;
    full = ShardCheckpoint();
    raw_s.push_back(PosixWrite(dir, full_bytes, pattern));
    std::printf("trial %d: %llu rows changed; delta %llu B in %.3f s, full %llu B in "
                "%.3f s, POSIX write+fsync of the full bytes %.3f s\n",
                t + 1, static_cast<unsigned long long>(changed),
                static_cast<unsigned long long>(delta_bytes), delta_s.back(),
                static_cast<unsigned long long>(full_bytes), full_s.back(), raw_s.back());
  }
  std::filesystem::remove_all(dir);
  const double delta = Median(delta_s), full = Median(full_s), raw = Median(raw_s);
  std::printf("\nmedians of %d trials (%llu of %llu rows changed, %.1f%%):\n", trials,
              static_cast<unsigned long long>(changed), static_cast<unsigned long long>(rows),
              100.0 * changed / rows);
  std::printf("  delta  %12llu B  %8.3f s  (snapshot %.3f s)  %6.0f MiB/s\n",
              static_cast<unsigned long long>(delta_bytes), delta, Median(delta_pause_s),
              MiBps(delta_bytes, delta));
  std::printf("  full   %12llu B  %8.3f s  (snapshot %.3f s)  %6.0f MiB/s\n",
              static_cast<unsigned long long>(full_bytes), full, Median(full_pause_s),
              MiBps(full_bytes, full));
  std::printf("  POSIX write+fsync of the full bytes      %8.3f s  %6.0f MiB/s\n", raw,
              MiBps(full_bytes, raw));
  std::printf("  full / delta: bytes %.1fx, time %.1fx\n",
              static_cast<double>(full_bytes) / delta_bytes, full / delta);
  return 0;
}

double Max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

// What one --step_cut run measured (seconds).
struct StepCutRun {
  std::vector<double> gathered_s;  // pushes of an open step, away from cuts
  std::vector<double> closing_s;   // pushes that close a step, away from cuts
  std::vector<double> cut_s;       // pushes that close a cut step
  std::vector<double> during_gathered_s, during_closing_s;  // longest while written
  std::vector<double> write_s, raw_s;
  uint64_t bytes = 0;
  double longest_pause = 0.0;  // the checkpointer's own figure
};

StepCutRun RunStepCut(const std::string& dir, uint64_t mb, int cuts,
                      const std::string& pattern, bool whole_copy) {
  const uint64_t every = std::max<uint64_t>(2, absl::GetFlag(FLAGS_cut_every));
  const uint32_t workers = std::max<uint32_t>(1, absl::GetFlag(FLAGS_workers));
  const absl::Duration step_time = absl::Milliseconds(absl::GetFlag(FLAGS_step_ms));
  const uint64_t elements = mb * 1048576 / 16;  // value + Adam's 3 state floats
  ParameterStore store(0, 1);
  for (uint32_t w = 0; w < workers; ++w) store.Register(w, 1, absl::ZeroDuration());
  TableConfig config = TableConfig::Dense("bench", elements);
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = workers;
  config.optimizer.kind = OptimizerKind::kAdam;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.05f;
  bool created = false;
  if (absl::Status made = store.CreateTable(config, true, &created).status(); !made.ok()) {
    std::fprintf(stderr, "%s\n", made.ToString().c_str());
    std::exit(1);
  }
  ShardCheckpointerOptions options;
  options.dir = dir + "/store";
  options.keep = 1;
  options.every_steps = every;
  options.copy_cut_on_apply_path = whole_copy;
  absl::StatusOr<std::unique_ptr<ShardCheckpointer>> checkpointer =
      ShardCheckpointer::Open(&store, PosixCheckpointFs(), options, 1);
  if (!checkpointer.ok()) {
    std::fprintf(stderr, "%s\n", checkpointer.status().ToString().c_str());
    std::exit(1);
  }
  (*checkpointer)->StartBackground();
  absl::SleepFor(absl::Milliseconds(500));  // the table gets its hook

  const std::vector<float> gradient(std::min<uint64_t>(elements, 65536), 0.001f);
  StepCutRun run;
  uint64_t step = 0;
  // One step: every worker pushes once, the last one closes it; then the
  // workers "compute" for --step_ms. Times go to gathered / closing.
  auto push_step = [&](std::vector<double>& gathered, std::vector<double>& closing) {
    for (uint32_t w = 0; w < workers; ++w) {
      PushMeta meta;
      meta.clock = step;
      meta.origin = PushOrigin{w, 1, step + 1};
      meta.base_version = store.GetTable("bench")->version;
      const absl::Time start = absl::Now();
      absl::StatusOr<PushOutcome> pushed = store.PushDense("bench", 0, gradient, meta);
      const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
      if (!pushed.ok()) {
        std::fprintf(stderr, "push: %s\n", pushed.status().ToString().c_str());
        std::exit(1);
      }
      (w + 1 == workers ? closing : gathered).push_back(seconds);
    }
    ++step;
    if (step_time > absl::ZeroDuration()) absl::SleepFor(step_time);
  };
  const char* mode = whole_copy ? "whole copy on the apply path" : "block copy";
  for (int c = 0; c < cuts; ++c) {
    while ((step + 1) % every != 0) push_step(run.gathered_s, run.closing_s);
    const uint64_t written_before = (*checkpointer)->stats().step_cuts;
    std::vector<double> gathered, closing;
    push_step(gathered, run.cut_s);  // closes the cut step: the cut is in its time
    gathered.clear();
    while ((*checkpointer)->stats().step_cuts == written_before) {
      if ((*checkpointer)->stats().failed > 0) {
        std::fprintf(stderr, "checkpoint failed: %s\n",
                     (*checkpointer)->stats().last_error.c_str());
        std::exit(1);
      }
      if ((step + 1) % every == 0) {  // never cut again before it is written
        absl::SleepFor(absl::Milliseconds(1));
        continue;
      }
      push_step(gathered, closing);
    }
    run.during_gathered_s.push_back(gathered.empty() ? 0.0 : Max(gathered));
    run.during_closing_s.push_back(closing.empty() ? 0.0 : Max(closing));
    const CheckpointerStats stats = (*checkpointer)->stats();
    run.bytes = stats.last_bytes;
    run.write_s.push_back(absl::ToDoubleSeconds(stats.last_duration));
    // The disk's speed under the same load: pushes go on while it writes.
    std::atomic<bool> raw_done{false};
    std::thread raw([&] {
      run.raw_s.push_back(PosixWrite(dir, run.bytes, pattern));
      raw_done = true;
    });
    while (!raw_done) {
      if ((step + 1) % every == 0) {
        absl::SleepFor(absl::Milliseconds(1));
        continue;
      }
      push_step(run.gathered_s, run.closing_s);
    }
    raw.join();
    std::printf("%s, cut %d (step %llu): push closing it %.3f s, longest push during "
                "the write %.3f s (open step) / %.3f s (closing one); write %.3f s "
                "(%.0f MiB/s), POSIX write+fsync %.3f s (%.0f MiB/s)\n",
                mode, c + 1, static_cast<unsigned long long>(stats.last_step_cut),
                run.cut_s.back(), run.during_gathered_s.back(), run.during_closing_s.back(),
                run.write_s.back(), MiBps(run.bytes, run.write_s.back()), run.raw_s.back(),
                MiBps(run.bytes, run.raw_s.back()));
  }
  run.longest_pause = absl::ToDoubleSeconds((*checkpointer)->stats().longest_pause);
  checkpointer->reset();
  std::filesystem::remove_all(dir + "/store");
  return run;
}

double P99(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * 99 / 100)];
}

void ReportStepCut(const char* mode, const StepCutRun& r) {
  std::printf("\n%s: bytes %llu, %zu cuts\n", mode, static_cast<unsigned long long>(r.bytes),
              r.cut_s.size());
  if (!r.gathered_s.empty()) {
    std::printf("  push of an open step: median %.4f s, p99 %.4f s\n", Median(r.gathered_s),
                P99(r.gathered_s));
  }
  std::printf("  push closing a step: median %.4f s, p99 %.4f s\n", Median(r.closing_s),
              P99(r.closing_s));
  std::printf("  push closing a cut step: median %.4f s, longest %.4f s\n", Median(r.cut_s),
              Max(r.cut_s));
  std::printf("  longest push while a cut was copied and written: %.4f s (open step), "
              "%.4f s (closing one)\n",
              Max(r.during_gathered_s), Max(r.during_closing_s));
  std::printf("  longest hold of the partition's lock for a cut (checkpointer): %.4f s\n",
              r.longest_pause);
  std::printf("  checkpoint write (background) %8.0f MiB/s\n", MiBps(r.bytes, Median(r.write_s)));
  std::printf("  POSIX write+fsync, same bytes %8.0f MiB/s\n", MiBps(r.bytes, Median(r.raw_s)));
  std::printf("  ratio checkpoint / POSIX      %8.2f\n", Median(r.raw_s) / Median(r.write_s));
}

int RunStepCuts(const std::string& dir, uint64_t mb, int cuts, const std::string& pattern) {
  for (const std::string& line : DescribeMachine()) std::printf("# %s\n", line.c_str());
  std::printf("# step-cut checkpoints of one sync dense Adam table: %llu MiB, %u workers, "
              "a cut every %llu steps, %d ms between steps, in %s; the reference (whole "
              "copy on the apply path) and the block copy alternate, %d rounds\n",
              static_cast<unsigned long long>(mb), absl::GetFlag(FLAGS_workers),
              static_cast<unsigned long long>(absl::GetFlag(FLAGS_cut_every)),
              absl::GetFlag(FLAGS_step_ms), dir.c_str(), absl::GetFlag(FLAGS_rounds));
  StepCutRun whole, block;
  auto add = [](StepCutRun& to, StepCutRun from) {
    for (auto [a, b] : {std::pair{&to.gathered_s, &from.gathered_s},
                        {&to.closing_s, &from.closing_s}, {&to.cut_s, &from.cut_s},
                        {&to.during_gathered_s, &from.during_gathered_s},
                        {&to.during_closing_s, &from.during_closing_s},
                        {&to.write_s, &from.write_s}, {&to.raw_s, &from.raw_s}}) {
      a->insert(a->end(), b->begin(), b->end());
    }
    to.bytes = from.bytes;
    to.longest_pause = std::max(to.longest_pause, from.longest_pause);
  };
  for (int round = 0; round < std::max(1, absl::GetFlag(FLAGS_rounds)); ++round) {
    add(whole, RunStepCut(dir, mb, cuts, pattern, true));
    add(block, RunStepCut(dir, mb, cuts, pattern, false));
  }
  ReportStepCut("reference, whole copy on the apply path", whole);
  ReportStepCut("block copy (copy on write)", block);
  std::printf("\n  longest cut-step push, reference / block copy: %.1fx\n",
              Max(whole.cut_s) / Max(block.cut_s));
  std::filesystem::remove_all(dir);
  return 0;
}

int Run() {
  spdlog::set_level(spdlog::level::warn);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const uint64_t mb = absl::GetFlag(FLAGS_mb);
  const int trials = std::max(1, absl::GetFlag(FLAGS_trials));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  if (absl::GetFlag(FLAGS_sparse_rows) > 0) {
    return RunSparse(dir, trials, Pattern());
  }
  if (absl::GetFlag(FLAGS_step_cut)) return RunStepCuts(dir, mb, trials, Pattern());

  // 4 floats per element (value + Adam's 3 state floats).
  const uint64_t elements = mb * 1048576 / 16;
  TableConfig config = TableConfig::Dense("bench", elements);
  config.optimizer.kind = OptimizerKind::kAdam;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.05f;
  Partition partition(std::make_unique<DenseTable>(config, Range{0, elements}),
                      RealClock::Get());

  for (const std::string& line : DescribeMachine()) std::printf("# %s\n", line.c_str());
  std::printf("# checkpoint of one dense Adam partition: %llu elements, %llu MiB, in %s\n",
              static_cast<unsigned long long>(elements),
              static_cast<unsigned long long>(mb), dir.c_str());
  std::printf("# crc32c: %s\n", crc32c::HardwareAvailable() ? "SSE4.2" : "table");

  CheckpointStoreOptions options;
  options.dir = dir + "/store";
  options.keep = 1;
  absl::StatusOr<std::unique_ptr<CheckpointStore>> store =
      CheckpointStore::Open(PosixCheckpointFs(), options);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  const std::string pattern = Pattern();

  std::vector<double> capture_s, ckpt_s, raw_s, load_s;
  uint64_t bytes = 0;
  std::vector<double> cut_pause_s, cut_copy_s;
  for (int t = 0; t < trials; ++t) {
    // The reference: the whole copy under the state lock (shared), as
    // partitions were cut before; freed at once.
    absl::Time start = absl::Now();
    CapturePartition(partition);
    capture_s.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    // The shard's cut (ShardCheckpointer::Take): the apply path is held
    // for BeginCut only; the blocks are copied after it.
    start = absl::Now();
    PendingCut cut = partition.BeginCut();
    cut_pause_s.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    cut.CopyAll();
    ShardCheckpoint checkpoint;
    checkpoint.partitions.push_back(CheckpointOf(partition, cut.Finish()));
    cut_copy_s.push_back(absl::ToDoubleSeconds(absl::Now() - start));

    auto write_checkpoint = [&] {
      ::sync();  // start from a clean page cache, as the POSIX reference does
      absl::Time s = absl::Now();
      absl::StatusOr<CheckpointWriteInfo> info = (*store)->Write(checkpoint);
      if (!info.ok()) {
        std::fprintf(stderr, "%s\n", info.status().ToString().c_str());
        std::exit(1);
      }
      bytes = info->bytes;
      ckpt_s.push_back(absl::ToDoubleSeconds(absl::Now() - s));
    };
    if (t % 2 == 0) {
      write_checkpoint();
      raw_s.push_back(PosixWrite(dir, bytes, pattern));
    } else {
      raw_s.push_back(PosixWrite(dir, bytes, pattern));
      write_checkpoint();
    }
    checkpoint = ShardCheckpoint();  // free before loading

    start = absl::Now();
    absl::StatusOr<LoadedCheckpoint> loaded = (*store)->LoadNewest();
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 1;
    }
    load_s.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    std::printf("trial %d: whole snapshot %.3f s; cut: pause %.4f s, copy %.3f s; "
                "checkpoint write %.3f s (%.0f MiB/s), "
                "POSIX write+fsync %.3f s (%.0f MiB/s), load %.3f s\n",
                t + 1, capture_s.back(), cut_pause_s.back(), cut_copy_s.back(),
                ckpt_s.back(), MiBps(bytes, ckpt_s.back()),
                raw_s.back(), MiBps(bytes, raw_s.back()), load_s.back());
  }
  std::filesystem::remove_all(dir);

  const double ckpt = MiBps(bytes, Median(ckpt_s));
  const double raw = MiBps(bytes, Median(raw_s));
  std::printf("\nbytes %llu; medians of %d trials:\n", static_cast<unsigned long long>(bytes),
              trials);
  std::printf("  whole snapshot (the pause before block cuts) %8.3f s\n", Median(capture_s));
  std::printf("  cut: pause for pushes (BeginCut) %8.4f s, longest %.4f s\n",
              Median(cut_pause_s), Max(cut_pause_s));
  std::printf("  cut: copy, block by block, pushes going on %8.3f s\n", Median(cut_copy_s));
  std::printf("  checkpoint write              %8.0f MiB/s\n", ckpt);
  std::printf("  POSIX write+fsync, same bytes %8.0f MiB/s\n", raw);
  std::printf("  ratio checkpoint / POSIX      %8.2f\n", ckpt / raw);
  std::printf("  load and validate             %8.0f MiB/s\n",
              MiBps(bytes, Median(load_s)));
  return 0;
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return taups::bench::Run();
}
