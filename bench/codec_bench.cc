// codec_bench: how fast the CPU codecs (common/codec.h) encode and decode, and
// how small their blocks are, next to a memcpy of the same fp32 bytes timed in
// the same run. A benchmark, not a test: it reports; its exit status is 2
// when a block misses the wire-size target the compression issue sets
// (bench/codec_variants.h), 1 on errors.
//
//   codec_bench                          # 1M and 16M floats, text table
//   codec_bench --format=markdown --trials=3
//
// Encode = EncodeBlock of the whole tensor into a reused string (the worker's
// side). Decode = ParseHeader + DecodeBlock into a reused buffer: the
// validation the server runs on every block. GB/s counts the fp32 bytes of
// the tensor (4 n), for both, so the columns compare with memcpy directly.
// See docs/BENCHMARKS.md.
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "bench/bench_main.h"
#include "bench/byte_size.h"
#include "bench/codec_variants.h"
#include "bench/machine_info.h"
#include "bench/measure.h"
#include "bench/report_table.h"
#include "common/codec.h"
#include "common/codec_format.h"
#include "common/status_macros.h"

ABSL_FLAG(std::vector<std::string>, sizes,
          std::vector<std::string>({"1M", "16M"}),
          "Tensor sizes in float32 values (K/M/G = powers of 1024), e.g. "
          "1M,16M.");
ABSL_FLAG(double, min_seconds, 0.3,
          "Each figure repeats its operation for at least this many seconds "
          "(and at least --min_iters times), after one untimed warm-up call.");
ABSL_FLAG(int64_t, min_iters, 3, "Each figure repeats at least this often.");
ABSL_FLAG(int, trials, 1,
          "Timed runs per figure; the median run is reported. Raise it on a "
          "machine shared with other work.");
ABSL_FLAG(uint32_t, bucket_size, taups::kDefaultBucketSize,
          "Values per scale for int8/int4/int2/sign (and top-k int8 values).");
ABSL_FLAG(uint64_t, seed, 1,
          "Seed of the test gradient and of stochastic rounding.");
ABSL_FLAG(std::string, format, "text",
          "text: an aligned plain-text table; markdown: a table for docs/.");

namespace taups::bench {
namespace {

// A stand-in gradient: normal(0, 1e-3) values, a typical gradient scale.
std::vector<float> TestGradient(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

absl::StatusOr<std::vector<size_t>> Sizes() {
  std::vector<size_t> sizes;
  for (const std::string& text : absl::GetFlag(FLAGS_sizes)) {
    ASSIGN_OR_RETURN(size_t n, ParseByteSize(text));
    sizes.push_back(n);
  }
  return sizes;
}

std::string FlagLine() {
  return absl::StrCat(
      "--sizes=", absl::StrJoin(absl::GetFlag(FLAGS_sizes), ","),
      " --min_seconds=", absl::GetFlag(FLAGS_min_seconds),
      " --min_iters=", absl::GetFlag(FLAGS_min_iters),
      " --trials=", absl::GetFlag(FLAGS_trials),
      " --bucket_size=", absl::GetFlag(FLAGS_bucket_size),
      " --seed=", absl::GetFlag(FLAGS_seed),
      " --format=", absl::GetFlag(FLAGS_format));
}

void PrintHeader(TableFormat format) {
  std::vector<std::string> lines = DescribeMachine();
  lines.push_back(absl::StrCat("flags: ", FlagLine()));
  lines.push_back(
      "input: normal(0, 1e-3) float32 values; GB/s = 4 n bytes (the fp32 "
      "tensor) / wall time, 1 GB = 1e9 B, for encode and decode alike; "
      "decode = ParseHeader + DecodeBlock (the server's validation); wire = "
      "block bytes (32-byte header included) / 4 n; GB/cpu-s = the same bytes "
      "per second of this process's CPU time (every operation is "
      "single-threaded, so it is what one core achieves, which other work on "
      "the machine hardly changes)");
  PrintReportHeader(format, "tauPS codec benchmark (CPU)", lines);
}

struct Totals {
  int missed_targets = 0;
};

// Adds one row per variant for a tensor of `n` values.
absl::Status MeasureSize(size_t n, const std::vector<CodecVariant>& variants,
                         const MeasureOptions& measure, ReportTable& table,
                         Totals& totals) {
  const std::vector<float> gradient = TestGradient(n, absl::GetFlag(FLAGS_seed));
  const double fp32_bytes = 4.0 * static_cast<double>(n);
  std::vector<float> decoded(n);

  std::vector<char> copy_dst(static_cast<size_t>(fp32_bytes));
  ASSIGN_OR_RETURN(Measurement copy, Measure(measure, [&]() {
    std::memcpy(copy_dst.data(), gradient.data(), copy_dst.size());
    KeepMemory(copy_dst.data());
    return absl::OkStatus();
  }));
  const double memcpy_gbps = copy.GigabytesPerSecond(fp32_bytes);
  const double memcpy_cpu = copy.GigabytesPerCpuSecond(fp32_bytes);
  std::fprintf(stderr, "  %zu floats: memcpy %.2f GB/s\n", n, memcpy_gbps);

  for (const CodecVariant& variant : variants) {
    std::string block;
    ASSIGN_OR_RETURN(Measurement encode, Measure(measure, [&]() {
      return EncodeBlock(gradient, variant.options, 0, &block);
    }));
    ASSIGN_OR_RETURN(Measurement decode, Measure(measure, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(BlockHeader header, ParseHeader(block, n));
      RETURN_IF_ERROR(DecodeBlock(block, header, absl::MakeSpan(decoded)));
      KeepMemory(decoded.data());
      return absl::OkStatus();
    }));
    const double encode_gbps = encode.GigabytesPerSecond(fp32_bytes);
    const double decode_gbps = decode.GigabytesPerSecond(fp32_bytes);
    const double wire = static_cast<double>(block.size()) / fp32_bytes;
    const std::optional<double> target = MaxWireFraction(variant, n);
    std::string verdict = "–";
    std::string target_text = "–";
    if (target) {
      target_text = absl::StrFormat("≤ %.4g", *target);
      verdict = wire <= *target ? "pass" : "FAIL";
      if (wire > *target) ++totals.missed_targets;
    }
    const bool rounds = LevelsOf(variant.options.codec == CodecKind::kTopK
                                     ? variant.options.topk_values
                                     : variant.options.codec) > 0;
    std::fprintf(stderr, "  %-16s %-10s encode %7.3f  decode %7.3f GB/s\n",
                 variant.name.c_str(),
                 rounds ? RoundingName(variant.options.rounding) : "",
                 encode_gbps, decode_gbps);
    table.AddRow({variant.name,
                  rounds ? RoundingName(variant.options.rounding) : "–",
                  FormatBytes(fp32_bytes), FormatBytes(block.size()),
                  absl::StrFormat("%.4f", wire), target_text, verdict,
                  FormatNumber(encode_gbps), FormatNumber(decode_gbps),
                  FormatNumber(memcpy_gbps),
                  absl::StrFormat("%.3f×", encode_gbps / memcpy_gbps),
                  absl::StrFormat("%.3f×", decode_gbps / memcpy_gbps),
                  FormatNumber(encode.GigabytesPerCpuSecond(fp32_bytes)),
                  FormatNumber(decode.GigabytesPerCpuSecond(fp32_bytes)),
                  FormatNumber(memcpy_cpu)});
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Run() {
  ASSIGN_OR_RETURN(const TableFormat format,
                   ParseTableFormat(absl::GetFlag(FLAGS_format)));
  MeasureOptions measure = MeasureOptionsFrom(absl::GetFlag(FLAGS_min_seconds),
                                              absl::GetFlag(FLAGS_min_iters),
                                              absl::GetFlag(FLAGS_trials));
  ASSIGN_OR_RETURN(std::vector<size_t> sizes, Sizes());
  std::vector<CodecVariant> variants = BenchCodecVariants(
      absl::GetFlag(FLAGS_bucket_size), absl::GetFlag(FLAGS_seed));
  for (const CodecVariant& variant : variants) {
    RETURN_IF_ERROR(variant.options.Validate());
  }

  PrintHeader(format);
  ReportTable table({"codec", "rounding", "fp32 size", "wire size", "wire ÷ fp32",
                     "target", "ok", "encode GB/s", "decode GB/s",
                     "memcpy GB/s", "encode ÷ memcpy", "decode ÷ memcpy",
                     "encode GB/cpu-s", "decode GB/cpu-s", "memcpy GB/cpu-s"},
                    /*left_columns=*/2);
  Totals totals;
  for (size_t n : sizes) {
    RETURN_IF_ERROR(MeasureSize(n, variants, measure, table, totals));
  }
  if (format == TableFormat::kMarkdown) {
    std::printf("#### Encode / decode throughput and wire size per codec\n\n");
  } else {
    std::printf("Encode / decode throughput and wire size per codec\n");
  }
  table.Print(format, stdout);
  std::printf("\n%s\n", totals.missed_targets == 0
                            ? "every wire-size target met"
                            : absl::StrCat(totals.missed_targets,
                                           " wire-size target(s) missed")
                                  .c_str());
  return totals.missed_targets == 0 ? 0 : 2;
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  return taups::bench::BenchMainWithExitCode(
      argc, argv, "codec_bench",
      "Measures the CPU codecs: encode and decode throughput per codec next "
      "to memcpy of the same fp32 bytes, and the encoded size against the "
      "issue's targets.\n"
      "  codec_bench                              # 1M and 16M floats\n"
      "  codec_bench --format=markdown --trials=3 # table for "
      "docs/BENCHMARKS.md\n"
      "Table to stdout, progress to stderr. Exit 2 when a size target is "
      "missed.",
      taups::bench::Run);
}
