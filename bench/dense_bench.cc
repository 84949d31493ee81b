#include "bench/dense_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/lockstep_runner.h"
#include "common/status_macros.h"

namespace taups::bench {
namespace {

enum class Op { kPush, kPull };

const char* OpName(Op op) { return op == Op::kPush ? "push" : "pull"; }

// Buffers for one size, shared by all series of that size: one gradient
// that every client pushes, and a landing array per client.
struct Buffers {
  std::vector<float> gradient;
  std::vector<std::vector<float>> values;
  std::vector<char> memcpy_src;
  std::vector<char> memcpy_dst;
};

Buffers MakeBuffers(size_t bytes, int clients) {
  Buffers b;
  // Small and finite: pushes are applied, and must stay valid gradients.
  b.gradient.assign(bytes / sizeof(float), 1e-6f);
  b.values.assign(clients, std::vector<float>(bytes / sizeof(float), 0.0f));
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

// One row: `op` of `bytes` by `n` clients at once against each cluster,
// then by `n` raw clients, then a memcpy.
absl::Status AddRow(const DenseBenchConfig& config, Op op, size_t bytes, int n,
                    absl::Span<BenchCluster* const> clusters,
                    const std::vector<std::vector<Client*>>& clients,
                    absl::Span<RawTransferClient* const> raw,
                    ReportTable& table) {
  const std::string name = absl::StrCat(config.table_prefix, "dense_", bytes);
  const std::string size =
      n == 1 ? FormatBytes(bytes) : absl::StrCat(FormatBytes(bytes), " ×", n);
  // What one run moves, all clients together.
  const double moved = static_cast<double>(bytes) * n;
  Buffers buf = MakeBuffers(bytes, n);
  LockstepRunner lanes(n);
  std::vector<std::string> row = {OpName(op), size};
  std::vector<Measurement> series;
  for (size_t i = 0; i < clusters.size(); ++i) {
    auto call = [&](int lane) -> absl::Status {
      Client* client = clients[i][lane];
      if (op == Op::kPush) {
        return CheckAccepted(client->PushDense(name, buf.gradient));
      }
      return client->PullDense(name, absl::MakeSpan(buf.values[lane])).status();
    };
    ASSIGN_OR_RETURN(
        Measurement m,
        Measure(WithServerCpu(config.measure, clusters[i]->ServerCpu()),
                [&] { return lanes.Run(call); }));
    Progress(absl::StrCat(OpName(op), " ", size, " tauPS ", clusters[i]->label),
             m.GigabytesPerSecond(moved));
    series.push_back(m);
  }
  // Raw gRPC: the same bytes, from / into the same buffers. One call;
  // slices over the channels; the same slices through the generic API
  // without copies of our own (RawTransferClient).
  const absl::string_view up(reinterpret_cast<const char*>(buf.gradient.data()),
                             bytes);
  double raw_gbps[3];
  Measurement raw_best;
  const size_t slicing[3] = {0, config.slice_bytes, config.slice_bytes};
  const char* raw_names[3] = {" raw 1 call", " raw sliced", " raw zero-copy"};
  for (int k = 0; k < 3; ++k) {
    auto call = [&](int lane) -> absl::Status {
      const absl::Span<char> down(
          reinterpret_cast<char*>(buf.values[lane].data()), bytes);
      RawTransferClient* r = raw[lane];
      if (k == 2) {
        return op == Op::kPush ? r->UploadZeroCopy(up, slicing[k])
                               : r->DownloadZeroCopy(down, slicing[k]);
      }
      return op == Op::kPush ? r->Upload(up, slicing[k])
                             : r->Download(down, slicing[k]);
    };
    ASSIGN_OR_RETURN(
        Measurement m,
        Measure(WithServerCpu(config.measure, config.raw_server_cpu),
                [&] { return lanes.Run(call); }));
    raw_gbps[k] = m.GigabytesPerSecond(moved);
    if (k == 0 || raw_gbps[k] > raw_best.GigabytesPerSecond(moved)) {
      raw_best = m;
    }
    Progress(absl::StrCat(OpName(op), " ", size, raw_names[k]), raw_gbps[k]);
  }
  auto copy = [&]() -> absl::Status {
    std::memcpy(buf.memcpy_dst.data(), buf.memcpy_src.data(), bytes);
    KeepMemory(buf.memcpy_dst.data());
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(Measurement mc, Measure(config.measure, copy));

  const double best_raw = raw_best.GigabytesPerSecond(moved);
  for (const Measurement& m : series) {
    const double gbps = m.GigabytesPerSecond(moved);
    row.push_back(FormatNumber(gbps));
    row.push_back(FormatNumber(m.IterationsPerSecond() * n));
    row.push_back(FormatCpuPerGigabyte(m, moved, /*server=*/false));
    row.push_back(FormatCpuPerGigabyte(m, moved, /*server=*/true));
    row.push_back(absl::StrCat(FormatNumber(gbps / best_raw), "×"));
  }
  row.push_back(FormatNumber(raw_gbps[0]));
  row.push_back(FormatNumber(raw_gbps[1]));
  row.push_back(FormatNumber(raw_gbps[2]));
  row.push_back(FormatCpuPerGigabyte(raw_best, moved, /*server=*/false));
  row.push_back(FormatCpuPerGigabyte(raw_best, moved, /*server=*/true));
  row.push_back(FormatNumber(mc.GigabytesPerSecond(bytes)));
  table.AddRow(std::move(row));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReportTable> RunDenseBench(
    const DenseBenchConfig& config, absl::Span<BenchCluster* const> clusters,
    absl::Span<RawTransferClient* const> raw) {
  int most_clients = 1;
  for (int n : config.clients) {
    if (n < 1) return absl::InvalidArgumentError("a client count below 1");
    most_clients = std::max(most_clients, n);
  }
  if (raw.size() < static_cast<size_t>(most_clients)) {
    return absl::InvalidArgumentError(absl::StrCat(
        most_clients, " clients need as many raw clients; got ", raw.size()));
  }
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
  // Client k of a cluster is its own client for k = 0, else a new one with
  // worker id (the first's + k) and channels of its own.
  std::vector<std::vector<Client*>> clients(clusters.size());
  std::vector<std::unique_ptr<Client>> more_clients;
  for (size_t i = 0; i < clusters.size(); ++i) {
    clients[i].push_back(clusters[i]->client.get());
    for (int k = 1; k < most_clients; ++k) {
      ClientOptions options = clusters[i]->client_options;
      options.worker_id += static_cast<uint32_t>(k);
      ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(options));
      clients[i].push_back(client.get());
      more_clients.push_back(std::move(client));
    }
  }

  for (Op op : {Op::kPush, Op::kPull}) {
    for (size_t bytes : config.sizes_bytes) {
      for (int n : config.clients) {
        RETURN_IF_ERROR(AddRow(config, op, bytes, n, clusters, clients, raw,
                               table));
      }
    }
  }
  return table;
}

}  // namespace taups::bench
