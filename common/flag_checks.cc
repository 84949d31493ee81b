#include "common/flag_checks.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/usage.h"

namespace taups {
namespace {

bool IsIntegerFlag(const absl::CommandLineFlag& flag) {
  return flag.IsOfType<int16_t>() || flag.IsOfType<uint16_t>() ||
         flag.IsOfType<int32_t>() || flag.IsOfType<uint32_t>() ||
         flag.IsOfType<int64_t>() || flag.IsOfType<uint64_t>() ||
         flag.IsOfType<long>() || flag.IsOfType<unsigned long>() ||
         flag.IsOfType<long long>() || flag.IsOfType<unsigned long long>();
}

bool IsFloatFlag(const absl::CommandLineFlag& flag) {
  return flag.IsOfType<double>() || flag.IsOfType<float>();
}

// The flag's current value as a long double; nullopt if it does not parse
// (cannot happen for a value absl accepted).
std::optional<long double> NumericValue(const absl::CommandLineFlag& flag) {
  const std::string text = flag.CurrentValue();
  if (IsIntegerFlag(flag)) {
    int64_t as_signed = 0;
    if (absl::SimpleAtoi(text, &as_signed)) return as_signed;
    uint64_t as_unsigned = 0;
    if (absl::SimpleAtoi(text, &as_unsigned)) return as_unsigned;
    return std::nullopt;
  }
  double value = 0.0;
  if (absl::SimpleAtod(text, &value)) return value;
  return std::nullopt;
}

bool InRange(long double value, const FlagRange& range) {
  const bool above_min =
      range.min_open ? value > range.min : value >= range.min;
  return above_min && value <= range.max;  // false for NaN
}

}  // namespace

std::string FormatFlagBound(long double bound) {
  if (std::isfinite(bound) && std::trunc(bound) == bound) {
    if (bound >= 0 && bound <= static_cast<long double>(
                                    std::numeric_limits<uint64_t>::max())) {
      return absl::StrCat(static_cast<uint64_t>(bound));
    }
    if (bound < 0 && bound >= static_cast<long double>(
                                   std::numeric_limits<int64_t>::min())) {
      return absl::StrCat(static_cast<int64_t>(bound));
    }
  }
  return absl::StrFormat("%g", static_cast<double>(bound));
}

std::string FormatFlagRange(const FlagRange& range) {
  return absl::StrCat(range.min_open ? "(" : "[", FormatFlagBound(range.min),
                      ", ", FormatFlagBound(range.max), "]");
}

absl::Status CheckNumericFlags(absl::Span<const FlagRange> ranges) {
  absl::flat_hash_set<absl::string_view> covered;
  for (const FlagRange& range : ranges) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(range.flag);
    if (flag == nullptr) {
      return absl::InternalError(absl::StrCat(
          "range given for --", range.flag, ", which is not a flag"));
    }
    if (!IsIntegerFlag(*flag) && !IsFloatFlag(*flag)) {
      return absl::InternalError(absl::StrCat(
          "range given for --", range.flag, ", which is not numeric"));
    }
    covered.insert(range.flag);
    const std::optional<long double> value = NumericValue(*flag);
    if (!value.has_value() || !InRange(*value, range)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", range.flag, "=", flag->CurrentValue(),
                       " is out of range: allowed ", FormatFlagRange(range)));
    }
  }
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (flag->IsRetired() || DefinedByAbseil(flag->Filename())) {
      continue;
    }
    if ((IsIntegerFlag(*flag) || IsFloatFlag(*flag)) &&
        !covered.contains(name)) {
      return absl::InternalError(absl::StrCat(
          "numeric flag --", name, " has no allowed range; add one to the "
          "program's FlagRange list"));
    }
  }
  return absl::OkStatus();
}

void AppendFlagRanges(std::vector<FlagRange>& ranges,
                      absl::Span<const FlagRange> more) {
  ranges.insert(ranges.end(), more.begin(), more.end());
}

bool FlagOffDefault(const char* name) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  return flag != nullptr && flag->CurrentValue() != flag->DefaultValue();
}

}  // namespace taups
