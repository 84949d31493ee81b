// The CPU codecs still write the bytes pinned in tests/golden/codec_blocks.txt.
//
// Why: the CUDA codecs are checked byte for byte against the CPU codecs, but
// only on a machine with a GPU (codec_gpu_test, bench/run_gpu_checks.sh; last
// on an H200). A CPU-only CI cannot run that comparison, so without pinned
// bytes a change to the CPU codecs would silently part them from the bytes
// the GPU kernels were verified to produce (and from blocks other workers
// still send). The pinned file was checked against the CPU codecs of commit
// 7f9c61c, the one whose CUDA twins were verified on the H200: identical.
// Any difference here fails the test; a format change must be
// deliberate: regenerate the file, say why in the commit, and rerun the GPU
// checks on a device:
//
//   <build>/bin/codec_golden_test --write-golden tests/golden/codec_blocks.txt
//
// --golden=<file> compares against another file (the default is the source
// tree's, compiled in).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tests/codec_golden_cases.h"

namespace taups::testing {
namespace {

std::string& GoldenPath() {
  static std::string path = TAUPS_CODEC_GOLDEN_FILE;
  return path;
}

TEST_CASE("CPU codec blocks are the pinned bytes") {
  std::ifstream in(GoldenPath());
  INFO("golden file " << GoldenPath());
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  const std::map<std::string, std::string> pinned =
      ParseGoldenFile(text.str(), &error);
  INFO(error);
  REQUIRE(error.empty());
  const std::map<std::string, std::string> now = ComputeGoldenLines();
  INFO("a CPU codec changed its bytes: if that is deliberate, regenerate "
       "with --write-golden and rerun the GPU checks (see this file's top)");
  REQUIRE(now.size() > 400);
  for (const auto& [name, line] : now) {
    INFO("case " << name);
    auto it = pinned.find(name);
    REQUIRE(it != pinned.end());  // a case the file does not pin
    CHECK(line == it->second);
  }
  for (const auto& [name, line] : pinned) {
    INFO("pinned case " << name << " is no longer computed");
    CHECK(now.count(name) == 1);
  }
}

TEST_CASE("the golden file parser refuses what it cannot read") {
  std::string error;
  ParseGoldenFile("# comment\n\nname value\nname other\n", &error);
  CHECK(error == "line 4: case 'name' twice");
  error.clear();
  ParseGoldenFile("lonely\n", &error);
  CHECK(error == "line 1: no '<name> <value>'");
  error.clear();
  const auto lines = ParseGoldenFile("a b c\n# x\nd e\n", &error);
  CHECK(error.empty());
  CHECK(lines == std::map<std::string, std::string>{{"a", "b c"}, {"d", "e"}});
}

}  // namespace
}  // namespace taups::testing

int main(int argc, char* argv[]) {
  Catch::Session session;
  std::string write_path;
  using Catch::clara::Opt;
  session.cli(session.cli() |
              Opt(write_path, "file")["--write-golden"](
                  "write the pinned blocks the CPU codecs produce now to "
                  "<file> and exit (a deliberate format change only)") |
              Opt(taups::testing::GoldenPath(), "file")["--golden"](
                  "compare against <file> instead of the source tree's"));
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  if (!write_path.empty()) {
    std::ofstream out(write_path);
    out << taups::testing::FormatGoldenFile(
        taups::testing::ComputeGoldenLines());
    if (!out.good()) {
      std::fprintf(stderr, "cannot write %s\n", write_path.c_str());
      return 1;
    }
    std::printf("wrote %s\n", write_path.c_str());
    return 0;
  }
  return session.run();
}
