#include "bench/byte_size.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace taups::bench {

absl::StatusOr<size_t> ParseByteSize(absl::string_view text) {
  const absl::string_view original = text;
  text = absl::StripAsciiWhitespace(text);
  size_t digits = 0;
  while (digits < text.size() && absl::ascii_isdigit(text[digits])) ++digits;
  uint64_t number = 0;
  if (digits == 0 || !absl::SimpleAtoi(text.substr(0, digits), &number) ||
      number == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", original, "' is not a positive byte size"));
  }
  const std::string unit = absl::AsciiStrToLower(text.substr(digits));
  int shift = -1;
  if (unit.empty() || unit == "b") shift = 0;
  if (unit == "k" || unit == "kib") shift = 10;
  if (unit == "m" || unit == "mib") shift = 20;
  if (unit == "g" || unit == "gib") shift = 30;
  if (shift < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", original, "': unknown unit '", unit, "' (use KiB, MiB or GiB)"));
  }
  if (number > (SIZE_MAX >> shift)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", original, "' is too large"));
  }
  return static_cast<size_t>(number << shift);
}

}  // namespace taups::bench
