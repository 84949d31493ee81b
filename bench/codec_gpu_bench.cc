// codec_gpu_bench: how fast the CUDA codecs (cuda/codec_kernels.h) encode
// and decode, next to a device-to-device cudaMemcpy of the same fp32 bytes
// timed in the same run. A benchmark, not a test: it reports (the bytes are
// checked against the CPU codecs by tests/codec_gpu_test.cc).
//
//   codec_gpu_bench                       # 1M, 16M and 64M floats, markdown
//   codec_gpu_bench --sizes=16M --trials=5 --format=text
//
// Per codec (the same variants as codec_bench) and size:
//   encode → device   EncodeToDeviceBlock: device floats to a device block
//   encode → host     Encode: the payload copied back once into a std::string
//   EF encode → host  EncodeWithFeedback: the fused error-feedback update
//   decode device     DecodeDeviceBlock: device block to device floats
//   decode host       Decode: host block copied in, validated, decoded
// GB/s counts the fp32 bytes of the tensor (4 n) for every column, so each
// compares directly with the memcpy column (4 n bytes copied). Every call is
// synchronous, so each figure includes its launch and synchronization costs.
//
// Without a usable CUDA device it prints a message and exits 0.
#include <cuda_runtime.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/byte_size.h"
#include "bench/codec_variants.h"
#include "bench/machine_info.h"
#include "bench/measure.h"
#include "bench/report_table.h"
#include "common/codec.h"
#include "common/codec_format.h"
#include "common/status_macros.h"
#include "common/usage.h"
#include "cuda/codec_kernels.h"
#include "cuda/cuda_status.h"
#include "cuda/device_bytes.h"
#include "cuda/cuda_device.h"

ABSL_FLAG(std::vector<std::string>, sizes,
          std::vector<std::string>({"1M", "16M", "64M"}),
          "Tensor sizes in float32 values (K/M/G = powers of 1024).");
ABSL_FLAG(double, min_seconds, 0.1,
          "Each figure repeats its operation for at least this many seconds "
          "(and at least --min_iters times), after one untimed warm-up call.");
ABSL_FLAG(int64_t, min_iters, 3, "Each figure repeats at least this often.");
ABSL_FLAG(int, trials, 3, "Timed runs per figure; the median is reported.");
ABSL_FLAG(uint32_t, bucket_size, taups::kDefaultBucketSize,
          "Values per scale for int8/int4/int2/sign (and top-k int8 values).");
ABSL_FLAG(uint64_t, seed, 1,
          "Seed of the test gradient and of stochastic rounding.");
ABSL_FLAG(int, device, 0, "CUDA device to measure.");
ABSL_FLAG(std::string, format, "markdown",
          "markdown: a table for docs/; text: an aligned plain-text table.");

namespace taups::bench {
namespace {

using cuda::DeviceCodec;

// A stand-in gradient: normal(0, 1e-3) values, as codec_bench uses.
std::vector<float> TestGradient(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

std::string Gbps(const Measurement& m, double bytes) {
  return FormatNumber(m.GigabytesPerSecond(bytes));
}

std::string Micros(const Measurement& m) {
  return FormatNumber(1e3 * m.MillisecondsPerIteration());
}

// Adds one row per variant for a tensor of `n` values.
absl::Status MeasureSize(size_t n, const std::vector<CodecVariant>& variants,
                         const MeasureOptions& measure, DeviceCodec& codec,
                         ReportTable& table) {
  const double fp32_bytes = 4.0 * static_cast<double>(n);
  const std::vector<float> gradient =
      TestGradient(n, absl::GetFlag(FLAGS_seed));
  size_t block_capacity = 0;
  for (const CodecVariant& v : variants) {
    block_capacity = std::max<size_t>(block_capacity, EncodedBytes(v.options, n));
  }
  cuda::DeviceBytes values, copy, out, residual, block;
  RETURN_IF_ERROR(values.Reserve(4 * n));
  RETURN_IF_ERROR(copy.Reserve(4 * n));
  RETURN_IF_ERROR(out.Reserve(4 * n));
  RETURN_IF_ERROR(residual.Reserve(4 * n));
  RETURN_IF_ERROR(block.Reserve(block_capacity));
  RETURN_IF_ERROR(cuda::CudaStatus(cudaMemcpy(values.as<float>(), gradient.data(), 4 * n,
                                  cudaMemcpyHostToDevice),
                       "cudaMemcpy(values)"));
  RETURN_IF_ERROR(
      cuda::CudaStatus(cudaMemset(residual.as<float>(), 0, 4 * n), "cudaMemset(residual)"));

  ASSIGN_OR_RETURN(Measurement memcpy_time, Measure(measure, [&]() {
    RETURN_IF_ERROR(cuda::CudaStatus(cudaMemcpyAsync(copy.as<float>(), values.as<float>(), 4 * n,
                                         cudaMemcpyDeviceToDevice, 0),
                         "cudaMemcpyAsync"));
    return cuda::CudaStatus(cudaStreamSynchronize(0), "cudaStreamSynchronize");
  }));
  const double memcpy_gbps = memcpy_time.GigabytesPerSecond(fp32_bytes);
  std::fprintf(stderr, "  %zu floats: device memcpy %.1f GB/s\n", n,
               memcpy_gbps);

  for (const CodecVariant& variant : variants) {
    const CodecOptions& o = variant.options;
    std::string host_block, feedback_block;
    ASSIGN_OR_RETURN(Measurement encode_device, Measure(measure, [&]() {
      return codec.EncodeToDeviceBlock(values.as<float>(), n, o, 0, block.as<char>());
    }));
    ASSIGN_OR_RETURN(Measurement encode_host, Measure(measure, [&]() {
      return codec.Encode(values.as<float>(), n, o, 0, &host_block);
    }));
    ASSIGN_OR_RETURN(Measurement encode_feedback, Measure(measure, [&]() {
      return codec.EncodeWithFeedback(values.as<float>(), residual.as<float>(), n, 0,
                                      o, &feedback_block);
    }));
    // Both encoders must have made the same block.
    std::string device_copy(host_block.size(), '\0');
    RETURN_IF_ERROR(cuda::CudaStatus(cudaMemcpy(device_copy.data(), block.as<char>(),
                                    device_copy.size(), cudaMemcpyDeviceToHost),
                         "cudaMemcpy(block)"));
    if (device_copy != host_block) {
      return absl::InternalError(absl::StrCat(
          variant.name, ": device and host blocks differ for ", n, " values"));
    }
    ASSIGN_OR_RETURN(const BlockHeader header, ParseHeader(host_block, n));
    ASSIGN_OR_RETURN(Measurement decode_device, Measure(measure, [&]() {
      return codec.DecodeDeviceBlock(block.as<char>(), header, out.as<float>());
    }));
    ASSIGN_OR_RETURN(Measurement decode_host, Measure(measure, [&]() {
      return codec.Decode(host_block, out.as<float>(), n);
    }));

    const bool rounds = LevelsOf(o.codec == CodecKind::kTopK ? o.topk_values
                                                             : o.codec) > 0;
    const std::string rounding = rounds ? RoundingName(o.rounding) : "–";
    const double wire = static_cast<double>(host_block.size()) / fp32_bytes;
    std::fprintf(stderr,
                 "  %-16s %-10s encode %8.1f  decode %8.1f GB/s (device)\n",
                 variant.name.c_str(), rounding.c_str(),
                 encode_device.GigabytesPerSecond(fp32_bytes),
                 decode_device.GigabytesPerSecond(fp32_bytes));
    table.AddRow(
        {variant.name, rounding, FormatBytes(fp32_bytes),
         absl::StrFormat("%.4f", wire), Gbps(encode_device, fp32_bytes),
         Micros(encode_device), Gbps(encode_host, fp32_bytes),
         Gbps(encode_feedback, fp32_bytes), Gbps(decode_device, fp32_bytes),
         Micros(decode_device), Gbps(decode_host, fp32_bytes),
         FormatNumber(memcpy_gbps),
         absl::StrFormat("%.3f×", encode_device.GigabytesPerSecond(fp32_bytes) /
                                      memcpy_gbps),
         absl::StrFormat("%.3f×", decode_device.GigabytesPerSecond(fp32_bytes) /
                                      memcpy_gbps)});
  }
  return absl::OkStatus();
}

std::string FlagLine() {
  return absl::StrCat(
      "--sizes=", absl::StrJoin(absl::GetFlag(FLAGS_sizes), ","),
      " --min_seconds=", absl::GetFlag(FLAGS_min_seconds),
      " --min_iters=", absl::GetFlag(FLAGS_min_iters),
      " --trials=", absl::GetFlag(FLAGS_trials),
      " --bucket_size=", absl::GetFlag(FLAGS_bucket_size),
      " --seed=", absl::GetFlag(FLAGS_seed),
      " --device=", absl::GetFlag(FLAGS_device),
      " --format=", absl::GetFlag(FLAGS_format));
}

absl::Status Run() {
  ASSIGN_OR_RETURN(const TableFormat format,
                   ParseTableFormat(absl::GetFlag(FLAGS_format)));
  MeasureOptions measure = MeasureOptionsFrom(absl::GetFlag(FLAGS_min_seconds),
                                              absl::GetFlag(FLAGS_min_iters),
                                              absl::GetFlag(FLAGS_trials));
  std::vector<size_t> sizes;
  for (const std::string& text : absl::GetFlag(FLAGS_sizes)) {
    ASSIGN_OR_RETURN(size_t n, ParseByteSize(text));
    if (n > cuda::kMaxDeviceElements) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sizes: ", text, " is above the device limit"));
    }
    sizes.push_back(n);
  }
  const std::vector<CodecVariant> variants = BenchCodecVariants(
      absl::GetFlag(FLAGS_bucket_size), absl::GetFlag(FLAGS_seed));
  for (const CodecVariant& variant : variants) {
    RETURN_IF_ERROR(variant.options.Validate());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceCodec> codec,
                   DeviceCodec::Create(absl::GetFlag(FLAGS_device)));

  std::vector<std::string> lines = DescribeMachine();
  lines.push_back(absl::StrCat("GPU: ", codec->device_description()));
  lines.push_back(absl::StrCat("flags: ", FlagLine()));
  lines.push_back(
      "input: normal(0, 1e-3) float32 values in device memory; GB/s = 4 n "
      "bytes (the fp32 tensor) / wall time of a synchronous call, 1 GB = 1e9 "
      "B; memcpy = cudaMemcpy device to device of the same 4 n bytes; host "
      "blocks are pageable std::string memory");
  PrintReportHeader(format, "tauPS codec benchmark (CUDA)", lines);
  ReportTable table({"codec", "rounding", "fp32 size", "wire ÷ fp32",
                     "encode→device GB/s", "µs", "encode→host GB/s",
                     "EF encode→host GB/s", "decode device GB/s", "µs",
                     "decode host GB/s", "memcpy GB/s", "encode ÷ memcpy",
                     "decode ÷ memcpy"},
                    /*left_columns=*/2);
  for (size_t n : sizes) {
    RETURN_IF_ERROR(MeasureSize(n, variants, measure, *codec, table));
  }
  table.Print(format, stdout);
  return absl::OkStatus();
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  taups::SetUsage(
      "Measures the CUDA codecs: encode and decode throughput per codec, "
      "device and host blocks, next to a device-to-device memcpy of the same "
      "fp32 bytes.\n"
      "  codec_gpu_bench                      # 1M, 16M, 64M floats, markdown\n"
      "  codec_gpu_bench --sizes=16M --format=text\n"
      "Table to stdout, progress to stderr. Exits 0 with a message when no "
      "CUDA device is usable.");
  absl::ParseCommandLine(argc, argv);
  if (taups::cuda::UsableDeviceCount() == 0) {
    std::printf(
        "codec_gpu_bench: no usable CUDA device (no GPU, or no driver); "
        "nothing measured.\n");
    return 0;
  }
  const absl::Status status = taups::bench::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "codec_gpu_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
