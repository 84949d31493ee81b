// ps_worker --metrics_port: a real worker training against a real shard is
// scraped twice over HTTP while it runs; the real promtool accepts both
// scrapes and the counters move between them (issue 13 part 1).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "tests/process_harness.h"
#include "tests/prometheus_text.h"
#include "tests/test_skip.h"

namespace taups::testing {
namespace {

// The port ps_worker wrote to `path`, waiting up to 60 s for the file.
int WaitForPortFile(const std::string& path, const Process& worker) {
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!std::filesystem::exists(path) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  INFO(worker.Output());
  REQUIRE(std::filesystem::exists(path));
  int port = 0;
  std::ifstream(path) >> port;
  REQUIRE(port > 0);
  return port;
}

// One /metrics scrape, checked by promtool; its samples.
std::map<std::string, double> Scrape(httplib::Client& http) {
  auto res = http.Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  auto [code, problems] = PromtoolCheckMetrics(res->body);
  INFO(res->body);
  INFO(problems);
  REQUIRE(code == 0);
  REQUIRE(problems.empty());
  return PrometheusSamples(res->body);
}

double SampleOr0(const std::map<std::string, double>& samples,
                 const std::string& key) {
  auto it = samples.find(key);
  return it == samples.end() ? 0 : it->second;
}

TEST_CASE("a training ps_worker's /metrics passes promtool and moves",
          "[promtool]") {
  if (!HavePromtool()) TAUPS_SKIP("promtool not installed (Debian package prometheus)");
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 2);
  const std::string port_file = dir.path() + "/worker.metrics_port";
  // ctr trains on synthetic data (no data set needed); enough steps that it
  // is still training at both scrapes, stopped by the test.
  auto workers = StartWorkers(
      dir, shards, 1,
      {"--model=ctr", "--steps=1000000", "--log_every=0", "--ctr_examples=4096",
       "--eval_examples=256", "--batch_size=32", "--consistency=ssp",
       "--ssp_bound=4", "--metrics_port=0",
       "--metrics_port_file=" + port_file});
  Process& worker = *workers[0];
  httplib::Client http("127.0.0.1", WaitForPortFile(port_file, worker));
  REQUIRE(http.Get("/healthz")->status == 200);
  REQUIRE(http.Get("/readyz")->status == 200);

  // Wait for the first steps, then for more.
  std::map<std::string, double> first;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  do {
    first = Scrape(http);
  } while (SampleOr0(first, "taups_worker_steps_total") < 5 && absl::Now() < deadline);
  absl::SleepFor(absl::Seconds(2));
  const std::map<std::string, double> second = Scrape(http);
  INFO(worker.Output());
  REQUIRE(worker.Wait(absl::ZeroDuration()) == std::nullopt);  // still training

  REQUIRE(first.at("taups_worker_info{worker=\"0\"}") == 1);
  bool build_info = false;
  for (const auto& [key, value] : second) {
    build_info |= key.rfind("taups_build_info{version=", 0) == 0 && value == 1;
  }
  REQUIRE(build_info);
  for (const char* key :
       {"taups_worker_steps_total", "taups_worker_examples_total",
        "taups_worker_push_answers_total{result=\"accepted\"}",
        "taups_worker_staleness_count", "taups_worker_pull_wait_seconds_count",
        "taups_worker_pulls_total{table=\"ctr_mlp\"}",
        "taups_worker_pushes_total{table=\"ctr_mlp\",result=\"sent\"}",
        "taups_worker_push_bytes_total{table=\"ctr_mlp\",form=\"raw\"}",
        "taups_worker_push_bytes_total{table=\"ctr_mlp\",form=\"wire\"}",
        "taups_worker_pull_bytes_total{table=\"ctr_embeddings\",form=\"wire\"}"}) {
    INFO(key);
    REQUIRE(first.count(key) == 1);
    REQUIRE(second.at(key) > first.at(key));
  }
  // Two shards answer every dense push: answers outnumber steps.
  REQUIRE(second.at("taups_worker_push_answers_total{result=\"accepted\"}") >=
          second.at("taups_worker_steps_total"));
  // 32 examples per step.
  REQUIRE(second.at("taups_worker_examples_total") ==
          32 * second.at("taups_worker_steps_total"));
  // Nothing restarted and no call had to be sent again (the restart case is
  // in shard_restart_test).
  REQUIRE(second.at("taups_worker_shard_restarts_total{shard=\"0\"}") == 0);
  REQUIRE(second.at("taups_worker_shard_restarts_total{shard=\"1\"}") == 0);
  REQUIRE(second.at("taups_worker_rpc_retries_total{method=\"PullSparse\","
                    "reason=\"unavailable\"}") == 0);
  worker.Stop();
}

TEST_CASE("ps_worker refuses a --metrics_port out of range, naming it") {
  TempDir dir;
  Process worker(BinDir() + "/ps_worker",
                 {"--servers=127.0.0.1:1", "--metrics_port=65536"},
                 dir.path() + "/worker.log");
  const std::optional<int> code = worker.Wait(absl::Seconds(30));
  INFO(worker.Output());
  REQUIRE(code == 2);
  REQUIRE(worker.Output().find("--metrics_port") != std::string::npos);
}

}  // namespace
}  // namespace taups::testing
