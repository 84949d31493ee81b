// Range checks for the numeric command-line flags of the tauPS programs.
//
// Each program lists the allowed range of every numeric flag it defines (and
// of those it links from shared flag files, which export their own lists) and
// calls CheckNumericFlags() once after parsing, before acting on any value.
// A value outside its range is refused with an error naming the flag, the
// value and the range, e.g.
//   --port=99999 is out of range: allowed [0, 65535]
// A numeric flag defined outside Abseil that no range covers is a
// programming error and is reported too, so a flag added later cannot slip
// through unchecked.
//
// Reads the flags through absl's reflection API; call after
// absl::ParseCommandLine and while no other thread sets flags.
#ifndef TAUPS_COMMON_FLAG_CHECKS_H_
#define TAUPS_COMMON_FLAG_CHECKS_H_

#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace taups {

// Allowed values of one numeric flag: [min, max], or (min, max] when
// min_open. Bounds are long double, which holds every int64/uint64 exactly.
struct FlagRange {
  absl::string_view flag;  // name without the leading "--"
  long double min;
  long double max;
  bool min_open = false;
};

// The largest value of T, as a bound: {"seed", 0, MaxOf<uint64_t>()}.
template <typename T>
constexpr long double MaxOf() {
  return static_cast<long double>(std::numeric_limits<T>::max());
}

// A bound as written in messages: integers without a fraction, others in
// the shortest %g form.
std::string FormatFlagBound(long double bound);
// "[0, 65535]" or "(0, 1]".
std::string FormatFlagRange(const FlagRange& range);

// OK when every flag in `ranges` holds a value inside its range.
// INVALID_ARGUMENT naming the first flag out of range (NaN is out of every
// range). INTERNAL when a range names a flag that is not defined or not
// numeric, or when a numeric flag defined outside Abseil has no range.
absl::Status CheckNumericFlags(absl::Span<const FlagRange> ranges);

// Appends `more` to `ranges` (for programs combining the lists of several
// flag files).
void AppendFlagRanges(std::vector<FlagRange>& ranges,
                      absl::Span<const FlagRange> more);

// Whether the flag `name` holds a value other than its default (so was
// set, to something else than the default); false for a name no flag has.
// (This Abseil cannot tell "given its default value" from "not given".)
bool FlagOffDefault(const char* name);

}  // namespace taups

#endif  // TAUPS_COMMON_FLAG_CHECKS_H_
