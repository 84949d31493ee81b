#include "tests/prometheus_text.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace taups::testing {

std::map<std::string, double> PrometheusSamples(const std::string& text) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    REQUIRE(space != absl::string_view::npos);
    double value = 0;
    const absl::string_view number = line.substr(space + 1);
    if (number == "+Inf") {
      value = HUGE_VAL;
    } else {
      REQUIRE(absl::SimpleAtod(number, &value));
    }
    samples[std::string(line.substr(0, space))] = value;
  }
  return samples;
}

std::pair<int, std::string> PromtoolCheckMetrics(const std::string& text) {
  static int files = 0;
  const std::string path =
      absl::StrCat("/tmp/taups_metrics_", getpid(), "_", files++, ".txt");
  std::ofstream(path) << text;
  const std::string command =
      absl::StrCat("promtool check metrics < ", path, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  const int status = pclose(pipe);
  std::remove(path.c_str());
  return {WEXITSTATUS(status), output};
}

bool HavePromtool() {
  return std::system("promtool --version >/dev/null 2>&1") == 0;
}

}  // namespace taups::testing
