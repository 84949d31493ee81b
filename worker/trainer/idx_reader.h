// Reader for IDX files (the MNIST container format) holding unsigned bytes.
//
// Layout: 4-byte magic 0x00 0x00 0x08 <rank>, then `rank` big-endian uint32
// dimensions, then prod(dims) bytes, row-major. Files may be gzip-compressed
// or plain (zlib's gzread reads both).
//
// Stateless functions; safe from any thread.
#ifndef TAUPS_WORKER_TRAINER_IDX_READER_H_
#define TAUPS_WORKER_TRAINER_IDX_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace taups::trainer {

struct IdxArray {
  std::vector<uint32_t> dims;  // size == rank, each > 0
  std::vector<uint8_t> data;   // prod(dims) bytes, row-major
};

// Largest payload accepted, so a corrupt header cannot demand huge memory.
inline constexpr uint64_t kMaxIdxBytes = uint64_t{1} << 32;

// Reads `path`, which must hold a ubyte IDX array of rank `expected_rank`.
// NOT_FOUND if the file cannot be opened; INVALID_ARGUMENT for a wrong magic
// number, rank, zero or oversized dimensions; DATA_LOSS when the payload is
// truncated, has trailing bytes, or the gzip stream is corrupt.
absl::StatusOr<IdxArray> ReadIdxUbyte(const std::string& path,
                                      int expected_rank);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_IDX_READER_H_
