#include "bench/sparse_bench.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/key_sampler.h"
#include "common/status_macros.h"

namespace taups::bench {
namespace {

struct KeySet {
  const char* name;
  std::vector<uint64_t> keys;
  size_t unique = 0;
};

// What raw gRPC and memcpy achieve on one call's bytes.
struct References {
  Measurement pull_raw;  // keys up, then values down: two unary calls
  Measurement push_raw;  // keys + gradients up: one unary call
  double memcpy_gbps = 0;
};

TableConfig SparseConfig(const std::string& name, uint32_t dim) {
  TableConfig config = TableConfig::Sparse(name, dim);
  // Random rows, as embeddings start: lazy creation does real work.
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.01f;
  config.initializer.seed = 1;
  return config;
}

absl::StatusOr<References> MeasureReferences(const SparseBenchConfig& config,
                                             RawTransferClient* raw) {
  const size_t key_bytes = config.rows * sizeof(uint64_t);
  const size_t value_bytes = config.rows * config.dim * sizeof(float);
  const size_t payload = key_bytes + value_bytes;
  std::vector<char> src(payload, 'k');
  std::vector<char> dst(payload, 0);
  References refs;
  ASSIGN_OR_RETURN(
      Measurement pull, Measure(config.measure, [&]() -> absl::Status {
        RETURN_IF_ERROR(
            raw->Upload(absl::string_view(src.data(), key_bytes), 0));
        return raw->Download(absl::MakeSpan(dst.data(), value_bytes), 0);
      }));
  refs.pull_raw = pull;
  ASSIGN_OR_RETURN(
      Measurement push, Measure(config.measure, [&]() -> absl::Status {
        return raw->Upload(absl::string_view(src.data(), payload), 0);
      }));
  refs.push_raw = push;
  ASSIGN_OR_RETURN(Measurement copy,
                   Measure(config.measure, [&]() -> absl::Status {
                     std::memcpy(dst.data(), src.data(), payload);
                     KeepMemory(dst.data());
                     return absl::OkStatus();
                   }));
  refs.memcpy_gbps = copy.GigabytesPerSecond(payload);
  std::fprintf(stderr,
               "  sparse references: raw pull %.3f GB/s, raw push %.3f GB/s, "
               "memcpy %.3f GB/s\n",
               pull.GigabytesPerSecond(payload),
               push.GigabytesPerSecond(payload), refs.memcpy_gbps);
  return refs;
}

}  // namespace

absl::StatusOr<ReportTable> RunSparseBench(
    const SparseBenchConfig& config, absl::Span<BenchCluster* const> clusters,
    RawTransferClient* raw) {
  const size_t payload =
      config.rows * (sizeof(uint64_t) + config.dim * sizeof(float));
  ASSIGN_OR_RETURN(References refs, MeasureReferences(config, raw));

  std::vector<KeySet> key_sets;
  key_sets.push_back(
      {"uniform", UniformKeys(config.rows, config.key_space, config.seed)});
  key_sets.push_back({"zipf", ZipfKeys(config.rows, config.key_space,
                                       config.zipf_exponent, config.seed)});
  for (KeySet& set : key_sets) set.unique = CountUnique(set.keys);

  ReportTable table(
      {"op", "keys", "cluster", "unique keys", "ms/call", "Mrows/s", "GB/s",
       "GB/cpu-s", "raw GB/s", "raw GB/cpu-s", "÷ raw", "memcpy GB/s"},
      /*left_columns=*/3);
  std::vector<float> rows(config.rows * config.dim, 0.0f);
  const std::vector<float> gradients(config.rows * config.dim, 1e-4f);

  for (const KeySet& set : key_sets) {
    for (BenchCluster* c : clusters) {
      Client* client = c->client.get();
      const auto add_row = [&](const char* op, const Measurement& m,
                               const Measurement& raw_m) {
        const double gbps = m.GigabytesPerSecond(payload);
        const double raw_gbps = raw_m.GigabytesPerSecond(payload);
        std::fprintf(stderr, "  sparse %-9s %-7s %-16s %8.3f GB/s\n", op,
                     set.name, c->label.c_str(), gbps);
        table.AddRow({op, set.name, c->label, absl::StrCat(set.unique),
                      FormatNumber(m.MillisecondsPerIteration()),
                      FormatNumber(m.IterationsPerSecond() * config.rows / 1e6),
                      FormatNumber(gbps),
                      FormatNumber(m.GigabytesPerCpuSecond(payload)),
                      FormatNumber(raw_gbps),
                      FormatNumber(raw_m.GigabytesPerCpuSecond(payload)),
                      absl::StrCat(FormatNumber(gbps / raw_gbps), "×"),
                      FormatNumber(refs.memcpy_gbps)});
      };
      const auto pull = [&](const std::string& name) {
        return [&, name]() -> absl::Status {
          return client->PullSparse(name, set.keys, absl::MakeSpan(rows))
              .status();
        };
      };

      std::string name;
      Measurement cold;
      for (int r = 0; r < config.cold_repeats; ++r) {
        name = absl::StrCat(config.table_prefix, "sparse_", set.name, "_",
                            c->num_shards, "_", r);
        RETURN_IF_ERROR(client->CreateTable(SparseConfig(name, config.dim)));
        ASSIGN_OR_RETURN(Measurement once, MeasureOnce(pull(name)));
        cold = Combine(cold, once);
      }
      add_row("pull cold", cold, refs.pull_raw);

      ASSIGN_OR_RETURN(Measurement warm, Measure(config.measure, pull(name)));
      add_row("pull warm", warm, refs.pull_raw);

      ASSIGN_OR_RETURN(
          Measurement push, Measure(config.measure, [&]() -> absl::Status {
            absl::StatusOr<PushResult> result =
                client->PushSparse(name, set.keys, gradients);
            if (!result.ok()) return result.status();
            if (!result->all_accepted()) {
              return absl::InternalError("a benchmark push was not accepted");
            }
            return absl::OkStatus();
          }));
      add_row("push", push, refs.push_raw);
    }
  }
  return table;
}

}  // namespace taups::bench
