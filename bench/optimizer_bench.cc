// optimizer_bench: how fast the server's update rules (server/optimizer.h)
// apply a gradient, next to a memcpy of the gradient's bytes and the scalar
// reference loops (tests/optimizer_reference.h, the rules as they were
// before vectorisation), all timed in the same run. A benchmark, not a test.
//
//   optimizer_bench                          # 4M floats (16 MiB), text
//   optimizer_bench --format=markdown --trials=5
//
// Rows per rule: `apply` = Optimizer::Apply over the whole tensor (the dense
// table's path); `check` = Optimizer::StaysFinite with max |g| known (what
// the shard runs before every apply; SGD and Adagrad prove it from max |g|
// alone, so their check is the MaxAbs scan); `rows` = ApplyRows over
// 65,536 scattered rows of dim 16 (the sparse table's path) next to one
// virtual Apply per row. GB/s counts the gradient's bytes (4 n) per
// CPU-second (the bench is single-threaded, so that is one core's rate and
// a loaded machine's waits do not count), so every
// column compares with memcpy of those bytes directly; the rules also read
// and write the parameters and their state (2 + 2 * state floats per
// element), which memcpy does not.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "bench/bench_main.h"
#include "bench/byte_size.h"
#include "bench/machine_info.h"
#include "bench/measure.h"
#include "bench/report_table.h"
#include "common/status_macros.h"
#include "common/vector_math.h"
#include "server/optimizer.h"
#include "tests/optimizer_reference.h"
#include "tests/row_batch_of.h"

ABSL_FLAG(std::string, size, "4M",
          "Dense tensor size in float32 values (K/M/G = powers of 1024).");
ABSL_FLAG(double, min_seconds, 0.3,
          "Each figure repeats its operation for at least this many seconds "
          "(and at least --min_iters times), after one untimed warm-up call.");
ABSL_FLAG(int64_t, min_iters, 3, "Each figure repeats at least this often.");
ABSL_FLAG(int, trials, 3,
          "Timed runs per figure; the median run is reported.");
ABSL_FLAG(std::string, format, "text",
          "text: an aligned plain-text table; markdown: a table for docs/.");

namespace taups::bench {
namespace {

constexpr uint32_t kRows = 65536;
constexpr uint32_t kDim = 16;

const OptimizerKind kKinds[] = {OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                OptimizerKind::kMomentum, OptimizerKind::kAdam,
                                OptimizerKind::kFtrl};

std::vector<float> Normal(size_t n, float stddev, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

OptimizerConfig ConfigOf(OptimizerKind kind) {
  OptimizerConfig config;
  config.kind = kind;
  config.learning_rate = 1e-3f;
  return config;
}

struct Row {
  std::string rule, path;
  double gbps = 0, reference_gbps = 0;  // reference 0: no column
};

// Dense: apply, reference, check.
absl::Status MeasureDense(OptimizerKind kind, size_t n,
                          const MeasureOptions& measure,
                          std::vector<Row>& rows) {
  const OptimizerConfig config = ConfigOf(kind);
  auto opt = MakeOptimizer(config);
  const std::vector<float> g = Normal(n, 1e-3f, 1);
  std::vector<float> w = Normal(n, 1.0f, 2);
  std::vector<float> state(n * opt->state_width());
  opt->InitState(state.data(), n);
  const double bytes = 4.0 * static_cast<double>(n);
  ASSIGN_OR_RETURN(Measurement apply, Measure(measure, [&]() {
    opt->Apply(w.data(), state.data(), g.data(), n, 1.0f);
    KeepMemory(w.data());
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(Measurement reference, Measure(measure, [&]() {
    ReferenceApply(config, w.data(), state.data(), g.data(), n, 1.0f);
    KeepMemory(w.data());
    return absl::OkStatus();
  }));
  bool finite = true;
  ASSIGN_OR_RETURN(Measurement check, Measure(measure, [&]() {
    const float max_abs = MaxAbs(g);
    finite &= opt->StaysFinite(w.data(), state.data(), g.data(), n, 1.0f,
                               max_abs);
    return absl::OkStatus();
  }));
  if (!finite) return absl::InternalError("a finite step was refused");
  const std::string name = OptimizerKindName(kind);
  rows.push_back({name, "apply", apply.GigabytesPerCpuSecond(bytes),
                  reference.GigabytesPerCpuSecond(bytes)});
  rows.push_back({name, "check", check.GigabytesPerCpuSecond(bytes), 0});
  return absl::OkStatus();
}

// Sparse: ApplyRows over scattered rows, next to one virtual Apply per row.
absl::Status MeasureRows(OptimizerKind kind, const MeasureOptions& measure,
                         std::vector<Row>& rows) {
  auto opt = MakeOptimizer(ConfigOf(kind));
  const size_t stride = size_t{kDim} * (1 + opt->state_width());
  std::vector<float> arena = Normal(size_t{kRows} * stride, 1.0f, 3);
  for (uint32_t r = 0; r < kRows; ++r) {
    opt->InitState(arena.data() + r * stride + kDim, kDim);
  }
  const std::vector<float> grads = Normal(size_t{kRows} * kDim, 1e-3f, 4);
  std::vector<uint32_t> slots(kRows), grad_rows(kRows);
  for (uint32_t r = 0; r < kRows; ++r) slots[r] = grad_rows[r] = r;
  std::shuffle(slots.begin(), slots.end(), std::mt19937(5));
  const RowBatch batch = BatchOf(arena, stride, slots, grads, grad_rows, kDim);
  const double bytes = 4.0 * kRows * kDim;
  ASSIGN_OR_RETURN(Measurement batched, Measure(measure, [&]() {
    opt->ApplyRows(batch, 1.0f);
    KeepMemory(arena.data());
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(Measurement per_row, Measure(measure, [&]() {
    for (uint32_t k = 0; k < kRows; ++k) {
      float* row = arena.data() + size_t{slots[k]} * stride;
      opt->Apply(row, row + kDim, grads.data() + size_t{k} * kDim, kDim, 1.0f);
    }
    KeepMemory(arena.data());
    return absl::OkStatus();
  }));
  rows.push_back({OptimizerKindName(kind), "rows", batched.GigabytesPerCpuSecond(bytes),
                  per_row.GigabytesPerCpuSecond(bytes)});
  return absl::OkStatus();
}

absl::StatusOr<double> MemcpyGbps(size_t n, const MeasureOptions& measure) {
  const std::vector<float> src = Normal(n, 1.0f, 6);
  std::vector<float> dst(n);
  ASSIGN_OR_RETURN(Measurement copy, Measure(measure, [&]() {
    std::memcpy(dst.data(), src.data(), n * sizeof(float));
    KeepMemory(dst.data());
    return absl::OkStatus();
  }));
  return copy.GigabytesPerCpuSecond(4.0 * static_cast<double>(n));
}

absl::Status Run() {
  ASSIGN_OR_RETURN(const TableFormat format,
                   ParseTableFormat(absl::GetFlag(FLAGS_format)));
  const MeasureOptions measure = MeasureOptionsFrom(
      absl::GetFlag(FLAGS_min_seconds), absl::GetFlag(FLAGS_min_iters),
      absl::GetFlag(FLAGS_trials));
  ASSIGN_OR_RETURN(const size_t n, ParseByteSize(absl::GetFlag(FLAGS_size)));
  std::vector<std::string> lines = DescribeMachine();
  lines.push_back(absl::StrCat(
      "flags: --size=", absl::GetFlag(FLAGS_size), " --min_seconds=",
      absl::GetFlag(FLAGS_min_seconds), " --min_iters=",
      absl::GetFlag(FLAGS_min_iters), " --trials=", absl::GetFlag(FLAGS_trials)));
  lines.push_back(
      "GB/s = gradient bytes (4 per element) per CPU-second of this "
      "single-threaded process (steadier than wall time on a shared machine), "
      "1 GB = 1e9 B; "
      "apply/check: one dense run; rows: 65,536 shuffled rows of dim 16; "
      "before = the scalar reference loops (apply) or one virtual Apply per "
      "row (rows); memcpy copies the same gradient bytes, in the same run");
  PrintReportHeader(format, "tauPS optimizer benchmark (one core)", lines);
  ASSIGN_OR_RETURN(const double dense_memcpy, MemcpyGbps(n, measure));
  ASSIGN_OR_RETURN(const double rows_memcpy,
                   MemcpyGbps(size_t{kRows} * kDim, measure));
  std::vector<Row> rows;
  for (OptimizerKind kind : kKinds) {
    std::fprintf(stderr, "  %s\n", OptimizerKindName(kind));
    RETURN_IF_ERROR(MeasureDense(kind, n, measure, rows));
    RETURN_IF_ERROR(MeasureRows(kind, measure, rows));
  }
  ReportTable table({"rule", "path", "GB/s", "before GB/s", "÷ before",
                     "memcpy GB/s", "÷ memcpy"},
                    /*left_columns=*/2);
  for (const Row& row : rows) {
    const double copy = row.path == "rows" ? rows_memcpy : dense_memcpy;
    const bool before = row.reference_gbps > 0;
    table.AddRow({row.rule, row.path, FormatNumber(row.gbps),
                  before ? FormatNumber(row.reference_gbps) : "–",
                  before ? absl::StrFormat("%.2f×", row.gbps / row.reference_gbps)
                         : "–",
                  FormatNumber(copy), absl::StrFormat("%.3f×", row.gbps / copy)});
  }
  table.Print(format, stdout);
  return absl::OkStatus();
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  return taups::bench::BenchMain(
      argc, argv, "optimizer_bench",
      "Measures the server's optimizer rules next to memcpy of the gradient's "
      "bytes and the scalar reference loops.\n"
      "  optimizer_bench --format=markdown --trials=5",
      taups::bench::Run);
}
