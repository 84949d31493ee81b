// The log lines of a real ps_server: the process tag on every line; under
// systemd (JOURNAL_STREAM naming its stderr) no timestamp and a syslog
// priority per line; a stats line only when a table changed.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "taups/client.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

int CountOf(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// Starts a one-shard ps_server logging to `log`, with JOURNAL_STREAM set to
// `journal_stream` (when not empty) in its environment.
std::unique_ptr<Process> StartShard(const std::string& log,
                                    const std::string& port_file,
                                    const std::string& journal_stream) {
  if (!journal_stream.empty()) setenv("JOURNAL_STREAM", journal_stream.c_str(), 1);
  auto process = std::make_unique<Process>(
      BinDir() + "/ps_server",
      std::vector<std::string>{"--host=127.0.0.1", "--port=0",
                               "--port_file=" + port_file, "--log_level=debug",
                               "--stats_interval_s=0"},
      log);
  unsetenv("JOURNAL_STREAM");
  return process;
}

// A second client under a live worker's id with another incarnation: the
// shard warns that the first one is gone. (Both stay connected until the
// second has registered; a client that is destroyed first leaves cleanly.)
void ProvokeWarning(int port) {
  std::vector<std::unique_ptr<Client>> clients;
  for (uint64_t incarnation : {1, 2}) {
    ClientOptions options;
    options.servers = {absl::StrCat("127.0.0.1:", port)};
    options.worker_id = 7;
    options.worker_incarnation = incarnation;
    auto client = Client::Connect(options);
    REQUIRE(client.ok());
    clients.push_back(std::move(*client));
  }
}

TEST_CASE("under the journal: no timestamps, a syslog priority per line") {
  TempDir dir;
  const std::string log = dir.path() + "/shard.log";
  std::ofstream(log).close();  // the file the shard's stderr will be
  struct stat st {};
  REQUIRE(stat(log.c_str(), &st) == 0);
  const std::string stream = absl::StrCat(st.st_dev, ":", st.st_ino);
  auto shard = StartShard(log, dir.path() + "/port", stream);
  ProvokeWarning(ReadPortFile(dir.path() + "/port"));
  REQUIRE(shard->Stop() == 0);
  const std::string output = shard->Output();
  INFO(output);
  const std::regex line_format(R"(<[2-7]>ps_server\[shard 0\] \[[a-z]+\] .+)");
  for (const std::string& line : Lines(output)) {
    INFO(line);
    CHECK(std::regex_match(line, line_format));
  }
  CHECK(absl::StrContains(output, "<6>ps_server[shard 0] [info] shard 0/1 serving on port"));
  CHECK(absl::StrContains(output, "<4>ps_server[shard 0] [warning] "));
  CHECK(absl::StrContains(output, "<6>ps_server[shard 0] [info] shard 0 stopped"));
}

TEST_CASE("not under the journal: a timestamp and the tag on every line") {
  TempDir dir;
  // JOURNAL_STREAM inherited from a parent whose output was the journal,
  // while this process writes to a file: not the journal.
  auto shard = StartShard(dir.path() + "/shard.log", dir.path() + "/port", "1:1");
  ProvokeWarning(ReadPortFile(dir.path() + "/port"));
  REQUIRE(shard->Stop() == 0);
  const std::string output = shard->Output();
  INFO(output);
  const std::regex line_format(
      R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] ps_server\[shard 0\] \[[a-z]+\] .+)");
  for (const std::string& line : Lines(output)) {
    INFO(line);
    CHECK(std::regex_match(line, line_format));
  }
  CHECK(absl::StrContains(output, "ps_server[shard 0] [warning] "));
}

TEST_CASE("a table's stats line is logged again only once it changed") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 1, {"--stats_interval_s=1"});
  ClientOptions options;
  options.servers = {shards[0].address()};
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  REQUIRE((*client)->CreateTable(TableConfig::Dense("w", 10)).ok());
  // About three stats periods with nothing happening: one line, the first.
  absl::SleepFor(absl::Milliseconds(3500));
  const std::string idle = shards[0].process->Output();
  INFO(idle);
  CHECK(CountOf(idle, "stats shard=0 table=w ") == 1);
  CHECK(absl::StrContains(idle, "table=w async version=0 pushes=0"));
  // One push changes the table: one more line within a period or two.
  std::vector<float> params(10), grad(10, 0.5f);
  auto pulled = (*client)->PullDense("w", absl::MakeSpan(params));
  REQUIRE(pulled.ok());
  REQUIRE((*client)->PushDense("w", grad, &*pulled).ok());
  absl::SleepFor(absl::Milliseconds(2500));
  const std::string pushed = shards[0].process->Output();
  CHECK(CountOf(pushed, "stats shard=0 table=w ") == 2);
  CHECK(absl::StrContains(pushed, "table=w async version=1 pushes=1"));
  // At shutdown every table is logged once more, changed or not. (The
  // client leaving changes workers_live, which may be logged first: count
  // once that period has passed.)
  client->reset();
  absl::SleepFor(absl::Milliseconds(1500));
  const int before_stop =
      CountOf(shards[0].process->Output(), "stats shard=0 table=w ");
  CHECK(before_stop <= 3);
  REQUIRE(shards[0].process->Stop() == 0);
  CHECK(CountOf(shards[0].process->Output(), "stats shard=0 table=w ") ==
        before_stop + 1);
}

}  // namespace
}  // namespace taups::testing
