#include "bench/dense_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace taups::bench {
namespace {

enum class Op { kPush, kPull };

const char* OpName(Op op) { return op == Op::kPush ? "push" : "pull"; }

// Buffers for one size, shared by all series of that size.
struct Buffers {
  std::vector<float> gradient;  // what pushes send
  std::vector<float> values;    // where pulls land
  std::vector<char> memcpy_src;
  std::vector<char> memcpy_dst;
};

Buffers MakeBuffers(size_t bytes) {
  Buffers b;
  // Small and finite: pushes are applied, and must stay valid gradients.
  b.gradient.assign(bytes / sizeof(float), 1e-6f);
  b.values.assign(bytes / sizeof(float), 0.0f);
  b.memcpy_src.assign(bytes, 'x');
  b.memcpy_dst.assign(bytes, 0);
  return b;
}

absl::Status CheckAccepted(const absl::StatusOr<PushResult>& result) {
  if (!result.ok()) return result.status();
  if (!result->all_accepted()) {
    return absl::InternalError("a benchmark push was not accepted");
  }
  return absl::OkStatus();
}

void Progress(const std::string& what, double gbps) {
  std::fprintf(stderr, "  %-44s %8.3f GB/s\n", what.c_str(), gbps);
}

}  // namespace

absl::StatusOr<ReportTable> RunDenseBench(
    const DenseBenchConfig& config, absl::Span<BenchCluster* const> clusters,
    RawTransferClient* raw) {
  std::vector<std::string> header = {"op", "size"};
  for (const BenchCluster* c : clusters) {
    header.push_back(absl::StrCat(c->label, " GB/s"));
    header.push_back("calls/s");
    header.push_back("client cpu-s/GB");
    header.push_back("server cpu-s/GB");
    header.push_back("÷ raw");
  }
  const std::string sliced_label =
      absl::StrCat("raw ", FormatBytes(config.slice_bytes), "×",
                   config.raw_channels, "ch GB/s");
  header.push_back("raw 1 call GB/s");
  header.push_back(sliced_label);
  header.push_back("zero-copy GB/s");
  header.push_back("raw client cpu-s/GB");
  header.push_back("raw server cpu-s/GB");
  header.push_back("memcpy GB/s");
  ReportTable table(std::move(header), /*left_columns=*/2);

  for (size_t bytes : config.sizes_bytes) {
    const std::string name = absl::StrCat(config.table_prefix, "dense_", bytes);
    for (BenchCluster* c : clusters) {
      RETURN_IF_ERROR(c->client->CreateTable(
          TableConfig::Dense(name, bytes / sizeof(float))));
    }
  }

  for (Op op : {Op::kPush, Op::kPull}) {
    for (size_t bytes : config.sizes_bytes) {
      const std::string name =
          absl::StrCat(config.table_prefix, "dense_", bytes);
      const std::string size = FormatBytes(bytes);
      Buffers buf = MakeBuffers(bytes);
      std::vector<std::string> row = {OpName(op), size};
      std::vector<Measurement> series;
      for (BenchCluster* c : clusters) {
        Client* client = c->client.get();
        auto run = [&]() -> absl::Status {
          if (op == Op::kPush)
            return CheckAccepted(client->PushDense(name, buf.gradient));
          return client->PullDense(name, absl::MakeSpan(buf.values)).status();
        };
        ASSIGN_OR_RETURN(Measurement m,
                         Measure(WithServerCpu(config.measure, c->ServerCpu()),
                                 run));
        Progress(absl::StrCat(OpName(op), " ", size, " tauPS ", c->label),
                 m.GigabytesPerSecond(bytes));
        series.push_back(m);
      }
      // Raw gRPC: the same bytes, from / into the same buffers.
      const absl::string_view up(
          reinterpret_cast<const char*>(buf.gradient.data()), bytes);
      const absl::Span<char> down(reinterpret_cast<char*>(buf.values.data()),
                                  bytes);
      // One call; slices over the channels; the same slices through the
      // generic API without copies of our own (RawTransferClient).
      double raw_gbps[3];
      Measurement raw_best;
      const size_t slicing[3] = {0, config.slice_bytes, config.slice_bytes};
      const char* raw_names[3] = {" raw 1 call", " raw sliced",
                                  " raw zero-copy"};
      for (int k = 0; k < 3; ++k) {
        auto run = [&]() -> absl::Status {
          if (k == 2) {
            return op == Op::kPush ? raw->UploadZeroCopy(up, slicing[k])
                                   : raw->DownloadZeroCopy(down, slicing[k]);
          }
          return op == Op::kPush ? raw->Upload(up, slicing[k])
                                 : raw->Download(down, slicing[k]);
        };
        ASSIGN_OR_RETURN(
            Measurement m,
            Measure(WithServerCpu(config.measure, config.raw_server_cpu), run));
        raw_gbps[k] = m.GigabytesPerSecond(bytes);
        if (k == 0 || raw_gbps[k] > raw_best.GigabytesPerSecond(bytes)) {
          raw_best = m;
        }
        Progress(absl::StrCat(OpName(op), " ", size, raw_names[k]),
                 raw_gbps[k]);
      }
      auto copy = [&]() -> absl::Status {
        std::memcpy(buf.memcpy_dst.data(), buf.memcpy_src.data(), bytes);
        KeepMemory(buf.memcpy_dst.data());
        return absl::OkStatus();
      };
      ASSIGN_OR_RETURN(Measurement mc, Measure(config.measure, copy));

      const double best_raw = raw_best.GigabytesPerSecond(bytes);
      for (const Measurement& m : series) {
        const double gbps = m.GigabytesPerSecond(bytes);
        row.push_back(FormatNumber(gbps));
        row.push_back(FormatNumber(m.IterationsPerSecond()));
        row.push_back(FormatCpuPerGigabyte(m, bytes, /*server=*/false));
        row.push_back(FormatCpuPerGigabyte(m, bytes, /*server=*/true));
        row.push_back(absl::StrCat(FormatNumber(gbps / best_raw), "×"));
      }
      row.push_back(FormatNumber(raw_gbps[0]));
      row.push_back(FormatNumber(raw_gbps[1]));
      row.push_back(FormatNumber(raw_gbps[2]));
      row.push_back(FormatCpuPerGigabyte(raw_best, bytes, /*server=*/false));
      row.push_back(FormatCpuPerGigabyte(raw_best, bytes, /*server=*/true));
      row.push_back(FormatNumber(mc.GigabytesPerSecond(bytes)));
      table.AddRow(std::move(row));
    }
  }
  return table;
}

}  // namespace taups::bench
