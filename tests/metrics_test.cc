// The Prometheus exposition: the writer's format, and a shard's /metrics
// scraped over HTTP, checked by the real promtool and seen to move as the
// shard works.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "httplib.h"
#include "server/parameter_store.h"
#include "server/shard_metrics.h"
#include "server/wire_traffic.h"
#include "worker/trainer/worker_metrics.h"
#include "tests/prometheus_text.h"
#include "tests/test_skip.h"

namespace taups {
namespace {

using testing::HavePromtool;
using testing::PrometheusSamples;
using testing::PromtoolCheckMetrics;

TEST_CASE("the writer groups families, escapes labels and drops bad names") {
  MetricsWriter w;
  w.Counter("taups_a_total", "A.", {{"table", "x"}}, 3);
  w.Gauge("taups_b", "B.", {}, 1.5);
  w.Counter("taups_a_total", "A.", {{"table", "y\"\\\n"}}, 4);
  w.Counter("9bad", "Bad name.", {}, 1);
  w.Counter("taups_c_total", "Bad label.", {{"le", "1"}}, 1);
  const std::string text = w.Render();
  // One HELP/TYPE per family, its samples right after.
  REQUIRE(text.find("# TYPE taups_a_total counter\n"
                    "taups_a_total{table=\"x\"} 3\n"
                    "taups_a_total{table=\"y\\\"\\\\\\n\"} 4\n") !=
          std::string::npos);
  REQUIRE(text.find("taups_b 1.5\n") != std::string::npos);
  REQUIRE(text.find("9bad") == std::string::npos);
  REQUIRE(text.find("taups_c_total") == std::string::npos);
  REQUIRE(PrometheusSamples(text).at("taups_metrics_dropped_total") == 2);
}

TEST_CASE("histograms are cumulative over a subset of the bounds, counts exact") {
  Histogram tau(Histogram::IntegerBounds(1024));
  std::vector<double> values = {0, 0, 1, 3, 3, 7, 100, 2000};
  for (double v : values) tau.Add(v);
  MetricsWriter w;
  w.Histogram("taups_staleness", "tau", {{"table", "t"}}, tau);
  const auto samples = PrometheusSamples(w.Render());
  // Expected cumulative counts, counted here from the values themselves.
  for (double le : {0.0, 1.0, 2.0, 4.0, 8.0, 128.0, 1024.0}) {
    double expected = 0;
    for (double v : values) expected += v <= le ? 1 : 0;
    const std::string key =
        absl::StrCat("taups_staleness_bucket{table=\"t\",le=\"", le, "\"}");
    INFO(key);
    REQUIRE(samples.count(key) == 1);
    REQUIRE(samples.at(key) == expected);
  }
  REQUIRE(samples.at("taups_staleness_bucket{table=\"t\",le=\"+Inf\"}") == 8);
  REQUIRE(samples.at("taups_staleness_count{table=\"t\"}") == 8);
  REQUIRE(samples.at("taups_staleness_sum{table=\"t\"}") == 2114);
  size_t buckets = 0;
  for (const auto& [key, value] : samples) buckets += key.find("_bucket") != std::string::npos;
  REQUIRE(buckets <= 17);
}

TEST_CASE("a shard's /metrics passes promtool and moves as the shard works",
          "[promtool]") {
  if (!HavePromtool()) TAUPS_SKIP("promtool not installed (Debian package prometheus)");
  ParameterStore store(0, 1);
  WireTraffic traffic;
  bool created = false;
  TableConfig dense = TableConfig::Dense("w", 8);
  REQUIRE(store.CreateTable(dense, true, &created).ok());
  TableConfig sparse = TableConfig::Sparse("emb", 4);
  sparse.sparse_max_rows = 1024;
  REQUIRE(store.CreateTable(sparse, true, &created).ok());
  MetricsRegistry registry;
  registry.Add(ShardMetricsCollector(&store, &traffic, {"9.9.9", "abc", "Test"}));
  registry.Add([](MetricsWriter& out) {  // as ps_server adds it
    PullAnswerMemory memory;
    memory.buffers_in_flight = uint64_t{1} << 20;
    memory.buffers_kept = uint64_t{3} << 20;
    memory.displaced_lent = uint64_t{5} << 18;
    memory.admitted = uint64_t{7} << 20;
    memory.admitted_limit = uint64_t{4} << 30;
    memory.refused = 2;
    WritePullAnswerMetrics(memory, out);
  });
  bool ready = false;
  auto server = MetricsHttpServer::Start({}, &registry, [&] { return ready; });
  REQUIRE(server.ok());
  httplib::Client http("127.0.0.1", (*server)->port());

  auto scrape = [&] {
    auto res = http.Get("/metrics");
    REQUIRE(res);
    REQUIRE(res->status == 200);
    REQUIRE(res->get_header_value("Content-Type").find("text/plain") == 0);
    return res->body;
  };
  REQUIRE(http.Get("/readyz")->status == 503);
  ready = true;
  REQUIRE(http.Get("/readyz")->status == 200);
  REQUIRE(http.Get("/healthz")->status == 200);

  const std::string before = scrape();
  auto [code, problems] = PromtoolCheckMetrics(before);
  INFO(problems);
  REQUIRE(code == 0);
  REQUIRE(problems.empty());
  auto s0 = PrometheusSamples(before);
  REQUIRE(s0.at("taups_pushes_total{table=\"w\"}") == 0);
  REQUIRE(s0.at("taups_dense_block_copies_total{table=\"w\"}") == 0);
  REQUIRE(s0.at("taups_pull_answer_bytes{state=\"in_flight\"}") == 1 << 20);
  REQUIRE(s0.at("taups_pull_answer_bytes{state=\"kept\"}") == 3 << 20);
  REQUIRE(s0.at("taups_pull_answer_bytes{state=\"lent\"}") == 5 << 18);
  REQUIRE(s0.at("taups_pull_answers_in_flight_bytes") == 7 << 20);
  REQUIRE(s0.at("taups_pull_answers_in_flight_limit_bytes") ==
          static_cast<double>(uint64_t{4} << 30));
  REQUIRE(s0.at("taups_pull_answers_refused_total") == 2);
  REQUIRE(s0.at("taups_build_info{version=\"9.9.9\",commit=\"abc\",build_type=\"Test\"}") == 1);

  store.Register(1, 5, absl::ZeroDuration());
  // An answer still sending the table's one block while the pushes land:
  // the first of them copies the block, the rest write the copy.
  LentValues sending;
  REQUIRE(store.LendDense("w", 0, 8, PullContext{}, &sending).ok());
  const std::vector<float> g(8, 1.0f);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    PushMeta meta;
    meta.origin = PushOrigin{1, 5, seq};
    meta.base_version = seq - 1;
    REQUIRE(store.PushDense("w", 0, g, meta).ok());
  }
  PushMeta stale;  // tau = 3
  stale.origin = PushOrigin{1, 5, 4};
  REQUIRE(store.PushDense("w", 0, g, stale).ok());
  REQUIRE(store.PushDense("w", 0, g, stale)->duplicate);
  traffic.CountPush("w", 32, 32, false);
  std::vector<float> rows(8);
  REQUIRE(store.PullSparse("emb", std::vector<uint64_t>{1, 2}, absl::MakeSpan(rows)).ok());

  const std::string after = scrape();
  auto [code_after, problems_after] = PromtoolCheckMetrics(after);
  INFO(problems_after);
  REQUIRE(code_after == 0);
  auto s1 = PrometheusSamples(after);
  REQUIRE(s1.at("taups_pushes_total{table=\"w\"}") == 4);
  REQUIRE(s1.at("taups_push_duplicates_total{table=\"w\"}") == 1);
  REQUIRE(s1.at("taups_dense_block_copies_total{table=\"w\"}") == 1);
  REQUIRE(sending.floats() == 8);
  REQUIRE(s1.at("taups_table_version{table=\"w\"}") == 4);
  REQUIRE(s1.at("taups_staleness_count{table=\"w\"}") == 4);
  REQUIRE(s1.at("taups_staleness_sum{table=\"w\"}") == 3);
  REQUIRE(s1.at("taups_workers{state=\"live\"}") == 1);
  REQUIRE(s1.at("taups_push_bytes_total{table=\"w\",form=\"raw\"}") == 32);
  REQUIRE(s1.at("taups_sparse_rows{table=\"emb\"}") == 2);
  REQUIRE(s1.at("taups_sparse_row_limit{table=\"emb\"}") == 1024);
}

// Every taups_* series a dashboard panel or an alert rule queries is one a
// shard or a worker exports: a typo or a renamed series fails here, not on a dark panel.
TEST_CASE("the dashboard and the alert rules query only exported series") {
  ParameterStore store(0, 1);
  WireTraffic traffic;
  bool created = false;
  TableConfig sync = TableConfig::Dense("w", 8);
  sync.consistency.kind = ConsistencyKind::kSync;
  sync.consistency.num_workers = 1;
  REQUIRE(store.CreateTable(sync, true, &created).ok());
  REQUIRE(store.CreateTable(TableConfig::Sparse("emb", 4), true, &created).ok());
  store.Register(1, 5, absl::ZeroDuration());
  PushMeta meta;
  meta.origin = PushOrigin{1, 5, 1};
  REQUIRE(store.PushDense("w", 0, std::vector<float>(8, 1.0f), meta).ok());
  MetricsWriter writer;
  WriteShardMetrics(store.Stats(), &traffic, {"v", "c", "t"}, writer);
  WritePullAnswerMetrics(PullAnswerMemory{}, writer);  // ps_server adds these too
  // Worker panels query what ps_worker --metrics_port exports.
  trainer::WorkerMetrics(0, nullptr).Write(writer);
  std::set<std::string> exported;
  for (absl::string_view line : absl::StrSplit(writer.Render(), '\n')) {
    if (absl::StartsWith(line, "# TYPE ")) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ');
      REQUIRE(parts.size() == 4);
      exported.insert(parts[2]);
      if (parts[3] == "histogram") {
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
          exported.insert(parts[2] + suffix);
        }
      }
    }
  }
  const std::regex series("taups_[a-z0-9_]+");
  for (const char* file : {"deploy/prometheus/taups-dashboard.json",
                           "deploy/prometheus/taups-alerts.yml"}) {
    std::ifstream in(absl::StrCat(TAUPS_SOURCE_DIR, "/", file));
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    const std::string contents = text.str();
    size_t queried = 0;
    for (auto it = std::sregex_iterator(contents.begin(), contents.end(), series);
         it != std::sregex_iterator(); ++it) {
      const std::string name = it->str();
      INFO(file << " queries " << name);
      REQUIRE(exported.count(name) == 1);
      ++queried;
    }
    INFO(file);
    REQUIRE(queried >= 10);
  }
}

}  // namespace
}  // namespace taups
