// ps_admin status against real shards after a real ps_worker run: a row
// per shard and one per table and shard, in text and in JSON, with the
// versions the training left (issue 13 part 6).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

TEST_CASE("ps_admin status shows every table on every shard, as text and JSON") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 2);
  std::vector<WorkerRun> runs = RunWorkers(
      dir, shards, 1,
      {"--model=ctr", "--steps=20", "--log_every=0", "--ctr_examples=2048",
       "--eval_examples=256", "--batch_size=32"});
  INFO(runs[0].output);
  REQUIRE(runs[0].exit_code == 0);

  const std::string text =
      RunAdmin(dir, shards, {"--tables=ctr_mlp,ctr_embeddings", "status"});
  INFO(text);
  // The shard rows, a blank line, the table rows.
  std::vector<std::string> parts = absl::StrSplit(text, "\n\n");
  REQUIRE(parts.size() == 2);
  std::vector<std::string> shard_lines = absl::StrSplit(parts[0], '\n', absl::SkipEmpty());
  REQUIRE(shard_lines.size() == 3);  // header + 2 shards
  for (size_t i = 1; i < shard_lines.size(); ++i) {
    std::vector<std::string> cells = absl::StrSplit(shard_lines[i], ' ', absl::SkipEmpty());
    REQUIRE(cells.size() == 16);
    REQUIRE(cells[0] == absl::StrCat(i - 1));
    REQUIRE(cells[6] == "0");  // live: the worker has left
    REQUIRE(cells[7] == "1");  // dead: ... so it holds no lease
    REQUIRE(cells[8] == "1");  // ... because it left
  }
  std::vector<std::string> lines = absl::StrSplit(parts[1], '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 5);  // header + 2 tables x 2 shards
  REQUIRE(absl::StartsWith(lines[0], "TABLE"));
  REQUIRE(absl::StrContains(lines[0], "TAU_P99"));
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> cells = absl::StrSplit(lines[i], ' ', absl::SkipEmpty());
    REQUIRE(cells.size() == 12);
    REQUIRE((cells[0] == "ctr_mlp" || cells[0] == "ctr_embeddings"));
    REQUIRE(cells[3] == "async");
    REQUIRE(std::stoull(cells[2]) > 0);  // trained on every shard
    REQUIRE(cells[9] == "0");            // async: no steps ...
    REQUIRE(cells[11] == "-");           // ... and no straggler
    // ctr_mlp is dense: every one of the 20 pushes reached both shards.
    if (cells[0] == "ctr_mlp") REQUIRE(cells[7] == "20");
  }

  const std::string json =
      RunAdmin(dir, shards, {"--tables=ctr_mlp", "--json", "status"});
  INFO(json);
  REQUIRE(absl::StartsWith(json, "{\"shards\":[{\"shard\":0,"));
  REQUIRE(absl::StrContains(json, "{\"name\":\"ctr_mlp\",\"policy\":\"async\","
                                  "\"version\":20,\"pushes\":20,"));
  REQUIRE(!absl::StrContains(json, "ctr_embeddings"));

  // A table no shard has: an error naming it, exit 1.
  Process missing(BinDir() + "/ps_admin",
                  {"--servers=" + JoinAddresses(shards), "--tables=nope", "status"},
                  dir.path() + "/missing.log");
  REQUIRE(missing.Wait(absl::Seconds(30)) == 1);
  REQUIRE(absl::StrContains(missing.Output(), "nope"));
}

}  // namespace
}  // namespace taups::testing
