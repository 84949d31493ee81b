// Parsing byte sizes written for people: "4096", "4KiB", "64K", "1MiB",
// "16M", "1GiB" (K/M/G and KiB/MiB/GiB are all powers of 1024).
#ifndef TAUPS_BENCH_BYTE_SIZE_H_
#define TAUPS_BENCH_BYTE_SIZE_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace taups::bench {

// INVALID_ARGUMENT for anything but a positive whole number with an
// optional unit.
absl::StatusOr<size_t> ParseByteSize(absl::string_view text);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_BYTE_SIZE_H_
