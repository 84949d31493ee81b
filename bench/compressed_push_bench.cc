#include "bench/compressed_push_bench.h"

#include <cstdio>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace taups::bench {
namespace {

struct Variant {
  std::string label;
  CompressionConfig config;
};

std::vector<Variant> Variants() {
  std::vector<Variant> variants;
  auto add = [&](std::string label, CodecKind codec, auto&& tweak) {
    Variant v{std::move(label), {}};
    v.config.push.codec = codec;
    tweak(v.config);
    variants.push_back(std::move(v));
  };
  auto plain = [](CompressionConfig&) {};
  add("none (fp32)", CodecKind::kNone, plain);
  add("fp16", CodecKind::kFp16, plain);
  add("bf16", CodecKind::kBf16, plain);
  add("int8", CodecKind::kInt8, plain);
  add("int4", CodecKind::kInt4, plain);
  add("int2", CodecKind::kInt2, plain);
  add("int2 + error feedback", CodecKind::kInt2,
      [](CompressionConfig& c) { c.error_feedback = true; });
  add("sign", CodecKind::kSign, plain);
  add("top-1%", CodecKind::kTopK, [](CompressionConfig& c) { c.push.topk_ratio = 0.01; });
  add("top-0.1%", CodecKind::kTopK, [](CompressionConfig& c) { c.push.topk_ratio = 0.001; });
  add("top-1% int8 values", CodecKind::kTopK, [](CompressionConfig& c) {
    c.push.topk_ratio = 0.01;
    c.push.topk_values = CodecKind::kInt8;
  });
  return variants;
}

}  // namespace

absl::StatusOr<ReportTable> RunCompressedPushBench(
    const CompressedPushBenchConfig& config,
    absl::Span<BenchCluster* const> clusters, RawTransferClient* raw) {
  std::vector<std::string> header = {"codec", "wire bytes/push", "÷ fp32"};
  for (const BenchCluster* c : clusters) {
    header.push_back(absl::StrCat(c->label, " ms/push"));
    header.push_back("× fp32 speed");
  }
  header.push_back("raw gRPC same bytes ms");
  ReportTable table(std::move(header));

  const size_t n = config.gradient_bytes / sizeof(float);
  std::vector<float> gradient(n);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, 1e-4f);
  for (float& g : gradient) g = normal(rng);

  std::vector<double> fp32_ms(clusters.size(), 0.0);
  const std::vector<Variant> variants = Variants();
  for (size_t v = 0; v < variants.size(); ++v) {
    const Variant& variant = variants[v];
    std::vector<std::string> row = {variant.label};
    uint64_t wire_per_push = 0;
    std::vector<std::string> cells;
    for (size_t c = 0; c < clusters.size(); ++c) {
      Client* client = clusters[c]->client.get();
      const std::string name =
          absl::StrCat(config.table_prefix, "codec_", v, "_", n);
      RETURN_IF_ERROR(client->CreateTable(TableConfig::Dense(name, n)));
      RETURN_IF_ERROR(client->SetCompression(name, variant.config));
      auto push = [&]() -> absl::Status {
        absl::StatusOr<PushResult> result = client->PushDense(name, gradient);
        if (!result.ok()) return result.status();
        if (!result->all_accepted()) {
          return absl::InternalError("a benchmark push was not accepted");
        }
        return absl::OkStatus();
      };
      ASSIGN_OR_RETURN(Measurement m, Measure(config.measure, push));
      ASSIGN_OR_RETURN(TransferCounters t, client->Transfers(name));
      wire_per_push = t.push_wire_bytes / std::max<uint64_t>(1, t.pushes_sent);
      const double ms = m.MillisecondsPerIteration();
      if (v == 0) fp32_ms[c] = ms;
      cells.push_back(FormatNumber(ms));
      cells.push_back(absl::StrCat(FormatNumber(fp32_ms[c] / ms), "×"));
      std::fprintf(stderr, "  push %-24s %-10s %8.2f ms  %s\n",
                   variant.label.c_str(), clusters[c]->label.c_str(), ms,
                   FormatBytes(static_cast<double>(wire_per_push)).c_str());
    }
    row.push_back(FormatBytes(static_cast<double>(wire_per_push)));
    row.push_back(FormatNumber(static_cast<double>(wire_per_push) /
                               config.gradient_bytes));
    for (std::string& cell : cells) row.push_back(std::move(cell));
    // The transfer alone: raw gRPC uploading as many bytes, sliced the same.
    const std::string bytes(wire_per_push, 'x');
    ASSIGN_OR_RETURN(Measurement rm, Measure(config.measure, [&]() {
                       return raw->Upload(bytes, config.slice_bytes);
                     }));
    row.push_back(FormatNumber(rm.MillisecondsPerIteration()));
    table.AddRow(std::move(row));
  }
  return table;
}

}  // namespace taups::bench
