// The input format of checkpoint_fuzzer, shared with the seed writer.
//
// Checkpoint files carry a CRC32C over every block header and payload
// (server/checkpoint_blocks.h), so a mutated file would almost always stop
// at the first checksum and the decoders behind it would never see the
// mutation. The fuzzer therefore takes the *contents* of the blocks and
// writes the checksums itself:
//
//   records: u8 block type (an index into kFuzzBlockTypes, modulo its size;
//            anything past it an unknown type) | u8 flags | u16 length (LE) |
//            length payload bytes
//
// FrameBlocks turns records into a file with a valid preamble and valid
// checksums; RecordsOf does the reverse for a real file (the seeds).
#ifndef TAUPS_TESTS_FUZZ_CHECKPOINT_FRAMING_H_
#define TAUPS_TESTS_FUZZ_CHECKPOINT_FRAMING_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace taups::fuzz {

// A checkpoint file with the records' types, flags and payloads, and every
// checksum right. A truncated last record is taken as far as it goes.
std::string FrameBlocks(absl::string_view records);

// The records of a checkpoint file written by BlockWriter (whose payloads
// are each at most 65,535 bytes); INVALID_ARGUMENT when it is not one.
absl::StatusOr<std::string> RecordsOf(absl::string_view file);

}  // namespace taups::fuzz

#endif  // TAUPS_TESTS_FUZZ_CHECKPOINT_FRAMING_H_
