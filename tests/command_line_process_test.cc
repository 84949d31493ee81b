// The command lines of the real ps_server, ps_worker and ps_admin binaries:
// --help and --version exit 0 and say what they should, every numeric flag
// out of its range and every unknown log level is refused naming the flag,
// and a second shard on a port already in use refuses to start.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

struct Run {
  std::optional<int> code;
  std::string output;
};

Run RunProgram(const std::string& program, const std::vector<std::string>& args) {
  static int runs = 0;
  TempDir dir;
  Process process(BinDir() + "/" + program, args,
                  absl::StrCat(dir.path(), "/run", runs++, ".log"));
  Run run;
  run.code = process.Wait(absl::Seconds(20));
  run.output = process.Output();
  return run;
}

// What `command` prints on stdout, or "" when it fails.
std::string Capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
  if (pclose(pipe) != 0) return "";
  return std::string(absl::StripAsciiWhitespace(out));
}

const char* const kPrograms[] = {"ps_server", "ps_worker", "ps_admin"};

TEST_CASE("--help exits 0 and lists the flags by name, without source paths") {
  // A flag of each program's own and, for ps_worker and ps_admin, of the
  // shared policy flags.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"ps_server", {"--port", "--max_message_mb", "--log_level"}},
      {"ps_worker", {"--servers", "--log_level", "--quorum", "--push_codec"}},
      {"ps_admin", {"--servers", "--table", "--tau_max"}},
  };
  for (const auto& [program, flags] : cases) {
    for (const char* help : {"--help", "--helpfull"}) {
      const Run run = RunProgram(program, {help});
      INFO(program << " " << help << ":\n" << run.output);
      REQUIRE(run.code == 0);
      CHECK(absl::StartsWith(run.output, program + ":"));
      for (const std::string& flag : flags) {
        CHECK(absl::StrContains(run.output, "\n  " + flag + "  (default: "));
      }
      CHECK(absl::StrContains(run.output, "--version"));
      if (program == "ps_server") {
        CHECK(absl::StrContains(
            run.output, "\n  --port  (default: 7000; allowed [0, 65535])\n"));
      }
      CHECK_FALSE(absl::StrContains(run.output, TAUPS_SOURCE_DIR));
      CHECK_FALSE(absl::StrContains(run.output, ".cc"));
      CHECK_FALSE(absl::StrContains(run.output, "absl"));
    }
  }
}

TEST_CASE("--version prints the project version, the commit and the build type") {
  for (const char* program : kPrograms) {
    const Run run = RunProgram(program, {"--version"});
    INFO(run.output);
    REQUIRE(run.code == 0);
    const std::string prefix = absl::StrCat(program, " (tauPS) ",
                                            TAUPS_EXPECTED_VERSION, ", commit ");
    REQUIRE(absl::StartsWith(run.output, prefix));
    const std::string suffix =
        absl::StrCat(", ", TAUPS_EXPECTED_BUILD_TYPE, " build\n");
    REQUIRE(absl::EndsWith(run.output, suffix));
    std::string commit = run.output.substr(
        prefix.size(), run.output.size() - prefix.size() - suffix.size());
    if (absl::EndsWith(commit, "-dirty")) commit.resize(commit.size() - 6);
    if (commit == "unknown") {
      // Only a build without git may say so.
      CHECK(Capture(absl::StrCat("git -C ", TAUPS_SOURCE_DIR,
                                 " rev-parse HEAD 2>/dev/null")) == "");
      continue;
    }
    REQUIRE(commit.size() == 12);
    CHECK(commit.find_first_not_of("0123456789abcdef") == std::string::npos);
    // A commit of this repository (HEAD may have moved on since the build).
    const std::string full = Capture(absl::StrCat(
        "git -C ", TAUPS_SOURCE_DIR, " rev-parse --verify --quiet ", commit,
        "^{commit} 2>/dev/null"));
    if (!full.empty()) CHECK(absl::StartsWith(full, commit));
  }
}

struct BadFlag {
  std::string program;
  std::string flag;
  std::string message;  // expected in the output
};

TEST_CASE("a numeric flag out of range is refused, naming the flag and range") {
  const std::vector<BadFlag> cases = {
      {"ps_server", "--port=99999", "--port=99999 is out of range: allowed [0, 65535]"},
      {"ps_server", "--port=-1", "--port=-1 is out of range: allowed [0, 65535]"},
      {"ps_server", "--max_message_mb=2048",
       "--max_message_mb=2048 is out of range: allowed [1, 2047]"},
      {"ps_server", "--max_message_mb=0", "allowed [1, 2047]"},
      {"ps_server", "--lease_s=0", "--lease_s=0 is out of range: allowed (0, 3600]"},
      {"ps_server", "--lease_s=nan", "--lease_s=nan is out of range"},
      {"ps_server", "--stats_interval_s=-5", "--stats_interval_s=-5 is out of range"},
      {"ps_server", "--num_shards=0", "--num_shards=0 is out of range: allowed [1, 4096]"},
      {"ps_server", "--shard_index=5000", "--shard_index=5000 is out of range"},
      {"ps_server", "--max_table_mb=0",
       "--max_table_mb=0 is out of range: allowed [1, 16777216]"},
      {"ps_server", "--max_pull_mb=4096", "allowed [1, 2047]"},
      {"ps_server", "--max_table_name_length=129", "allowed [1, 128]"},
      // Above the default --memory_budget_mb (at most 16384).
      {"ps_server", "--max_table_mb=20000", "is above the shard's"},
      {"ps_worker", "--batch_size=100000",
       "--batch_size=100000 is out of range: allowed [0, 65536]"},
      {"ps_worker", "--slowdown=0.5", "--slowdown=0.5 is out of range: allowed [1, 1000]"},
      {"ps_worker", "--lr=inf", "--lr=inf is out of range"},
      {"ps_worker", "--steps=-3", "--steps=-3 is out of range"},
      {"ps_worker", "--num_workers=0", "--num_workers=0 is out of range"},
      {"ps_worker", "--sparse_admit_probability=0",
       "--sparse_admit_probability=0 is out of range: allowed (0, 1]"},
      {"ps_worker", "--quorum=1.5", "--quorum=1.5 is out of range: allowed (0, 1]"},
      {"ps_worker", "--topk_ratio=0", "--topk_ratio=0 is out of range: allowed (0, 1]"},
      {"ps_worker", "--accumulate_steps=0", "--accumulate_steps=0 is out of range"},
      {"ps_worker", "--warmup_versions=-2", "--warmup_versions=-2 is out of range"},
      {"ps_admin", "--num_workers=70000", "--num_workers=70000 is out of range"},
      {"ps_admin", "--tau_max=-2", "--tau_max=-2 is out of range"},
      {"ps_admin", "--clip_norm=-1", "--clip_norm=-1 is out of range"},
  };
  for (const BadFlag& c : cases) {
    // The flags each program needs, so that nothing but the bad flag is
    // wrong (nothing is reached: the check comes first).
    std::vector<std::string> args = {c.flag};
    if (c.program == "ps_worker") args.push_back("--servers=127.0.0.1:1");
    if (c.program == "ps_admin") {
      args.insert(args.end(), {"--servers=127.0.0.1:1", "--table=t", "stats"});
    }
    const Run run = RunProgram(c.program, args);
    INFO(c.program << " " << c.flag << ":\n" << run.output);
    CHECK(run.code == 2);
    CHECK(absl::StrContains(run.output, c.message));
  }
}

TEST_CASE("an unknown log level is refused with the list; case does not matter") {
  for (const char* program : {"ps_server", "ps_worker"}) {
    const Run run = RunProgram(program, {"--log_level=loud"});
    INFO(program << ":\n" << run.output);
    CHECK(run.code == 2);
    CHECK(absl::StrContains(run.output, "--log_level: unknown level 'loud'"));
    CHECK(absl::StrContains(run.output, "trace, debug, info, warn"));
  }
  // Even with logging off, the error that ends the program is written.
  const Run server = RunProgram("ps_server", {"--log_level=off", "--port=-1"});
  CHECK(server.code == 2);
  CHECK(absl::StrContains(server.output, "--port=-1 is out of range"));
  const Run worker = RunProgram(
      "ps_worker",
      {"--log_level=off", "--batch_size=-1", "--servers=127.0.0.1:1"});
  CHECK(worker.code == 2);
  CHECK(absl::StrContains(worker.output, "--batch_size=-1 is out of range"));
  // Upper case is info: the shard logs that it serves (it used to log
  // nothing at all).
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 1, {"--log_level=INFO"});
  REQUIRE(shards[0].process->Stop() == 0);
  CHECK(absl::StrContains(shards[0].process->Output(), "serving on port"));
  // And WARN hides info lines but still starts.
  TempDir quiet_dir;  // fresh port files
  std::vector<Shard> quiet =
      StartShards(quiet_dir.path(), 1, {"--log_level=WARN"});
  REQUIRE(quiet[0].process->Stop() == 0);
  CHECK_FALSE(absl::StrContains(quiet[0].process->Output(), "serving on port"));
}

TEST_CASE("a second ps_server on a port in use refuses to start") {
  TempDir dir;
  std::vector<Shard> first = StartShards(dir.path(), 1);
  Process second(BinDir() + "/ps_server",
                 {absl::StrCat("--port=", first[0].port), "--host=127.0.0.1"},
                 dir.path() + "/second.log");
  const std::optional<int> code = second.Wait(absl::Seconds(20));
  INFO(second.Output());
  CHECK(code == 1);
  CHECK(absl::StrContains(
      second.Output(),
      absl::StrCat("cannot listen on 127.0.0.1:", first[0].port, ": port ",
                   first[0].port, " is already in use")));
  // gRPC's own report of the failed bind comes through the same logger.
  for (absl::string_view line :
       absl::StrSplit(second.Output(), '\n', absl::SkipEmpty())) {
    CHECK(absl::StrContains(line, "] ps_server[shard 0] ["));
  }
  // The first one is unharmed.
  REQUIRE(first[0].process->Stop() == 0);
}

}  // namespace
}  // namespace taups::testing
