// CheckNumericFlags and the --help text, on flags defined here.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "common/command_line.h"
#include "common/flag_checks.h"

ABSL_FLAG(int, test_port, 7000, "A port.");
ABSL_FLAG(double, test_ratio, 0.5,
          "A ratio in (0, 1]. This help text is long enough to be wrapped "
          "over more than one line of the help output, at a space.");
ABSL_FLAG(uint64_t, test_seed, 1, "Any seed.");
ABSL_FLAG(std::string, test_name, "", "Not numeric.");

namespace taups {
namespace {

// The ranges of every numeric flag above.
constexpr FlagRange kRanges[] = {
    {"test_port", 0, 65535},
    {"test_ratio", 0, 1, /*min_open=*/true},
    {"test_seed", 0, MaxOf<uint64_t>()},
};

// Restores the defaults when a case ends.
struct DefaultFlags {
  ~DefaultFlags() {
    absl::SetFlag(&FLAGS_test_port, 7000);
    absl::SetFlag(&FLAGS_test_ratio, 0.5);
    absl::SetFlag(&FLAGS_test_seed, 1);
  }
};

TEST_CASE("bounds and ranges are written as a user would") {
  CHECK(FormatFlagBound(65535) == "65535");
  CHECK(FormatFlagBound(-1) == "-1");
  CHECK(FormatFlagBound(0.25) == "0.25");
  CHECK(FormatFlagBound(1e6) == "1000000");
  CHECK(FormatFlagBound(MaxOf<uint64_t>()) == "18446744073709551615");
  CHECK(FormatFlagBound(MaxOf<int64_t>()) == "9223372036854775807");
  CHECK(FormatFlagRange({"x", 0, 65535}) == "[0, 65535]");
  CHECK(FormatFlagRange({"x", 0, 1, true}) == "(0, 1]");
}

TEST_CASE("values inside every range pass, including the bounds") {
  DefaultFlags restore;
  CHECK(CheckNumericFlags(kRanges).ok());
  absl::SetFlag(&FLAGS_test_port, 65535);
  absl::SetFlag(&FLAGS_test_ratio, 1.0);
  absl::SetFlag(&FLAGS_test_seed, std::numeric_limits<uint64_t>::max());
  CHECK(CheckNumericFlags(kRanges).ok());
  absl::SetFlag(&FLAGS_test_port, 0);
  absl::SetFlag(&FLAGS_test_ratio, 1e-9);
  CHECK(CheckNumericFlags(kRanges).ok());
}

TEST_CASE("a value outside its range is refused with flag, value and range") {
  DefaultFlags restore;
  absl::SetFlag(&FLAGS_test_port, 99999);
  absl::Status status = CheckNumericFlags(kRanges);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(status.message()) ==
        "--test_port=99999 is out of range: allowed [0, 65535]");
  absl::SetFlag(&FLAGS_test_port, -1);
  CHECK(std::string(CheckNumericFlags(kRanges).message()) ==
        "--test_port=-1 is out of range: allowed [0, 65535]");
  absl::SetFlag(&FLAGS_test_port, 7000);
  absl::SetFlag(&FLAGS_test_ratio, 0.0);  // the open end
  CHECK(std::string(CheckNumericFlags(kRanges).message()) ==
        "--test_ratio=0 is out of range: allowed (0, 1]");
  absl::SetFlag(&FLAGS_test_ratio, std::nan(""));
  status = CheckNumericFlags(kRanges);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StartsWith(status.message(), "--test_ratio=nan is out of range"));
  absl::SetFlag(&FLAGS_test_ratio, std::numeric_limits<double>::infinity());
  CHECK(CheckNumericFlags(kRanges).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a numeric flag without a range, or a range of no flag, is a bug") {
  const FlagRange missing_seed[] = {{"test_port", 0, 65535},
                                    {"test_ratio", 0, 1, true}};
  absl::Status status = CheckNumericFlags(missing_seed);
  CHECK(status.code() == absl::StatusCode::kInternal);
  CHECK(absl::StrContains(status.message(), "--test_seed has no allowed range"));
  const FlagRange typo[] = {{"test_prot", 0, 65535}};
  CHECK(absl::StrContains(CheckNumericFlags(typo).message(),
                          "range given for --test_prot, which is not a flag"));
  const FlagRange not_numeric[] = {{"test_name", 0, 1}};
  CHECK(absl::StrContains(CheckNumericFlags(not_numeric).message(),
                          "--test_name, which is not numeric"));
}

TEST_CASE("--help lists flags by name with default and wrapped help") {
  const std::string help = FlagHelpText("usage line");
  INFO(help);
  CHECK(absl::StartsWith(help, "usage line\n\nFlags:\n"));
  CHECK(absl::StrContains(help, "  --test_port  (default: 7000)\n      A port.\n"));
  // With the program's ranges, each flag's allowed values too.
  const std::string ranged = FlagHelpText("usage line", kRanges);
  CHECK(absl::StrContains(
      ranged, "  --test_port  (default: 7000; allowed [0, 65535])\n"));
  CHECK(absl::StrContains(
      ranged, "  --test_ratio  (default: 0.5; allowed (0, 1])\n"));
  CHECK(absl::StrContains(ranged, "  --test_name  (default: \"\")\n"));
  CHECK(absl::StrContains(help, "  --test_name  (default: \"\")\n"));
  // Sorted by name.
  CHECK(help.find("--test_name") < help.find("--test_port"));
  CHECK(help.find("--test_port") < help.find("--test_ratio"));
  // Wrapped: no line longer than 80 columns.
  size_t start = 0;
  while (start < help.size()) {
    size_t end = help.find('\n', start);
    if (end == std::string::npos) end = help.size();
    CHECK(end - start <= 80);
    start = end + 1;
  }
  CHECK_FALSE(absl::StrContains(help, "flag_checks_test.cc"));
  CHECK_FALSE(absl::StrContains(help, "flagfile"));  // Abseil's own
}

}  // namespace
}  // namespace taups
