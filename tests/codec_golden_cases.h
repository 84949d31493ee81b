// The pinned codec cases of codec_golden_test: fixed, exactly reproducible
// inputs (awkward lengths, zeros, denormals, +-FLT_MAX, fp16/bf16 ties,
// NaN/Inf), every codec and rounding, stochastic rounding with a fixed seed
// and a non-zero index base, top-k with every value codec, and error
// feedback over two pushes. Each case becomes one line of
// tests/golden/codec_blocks.txt:
//
//   <name> bytes=<block size> fnv1a64=<hash of the block>
//          decoded=<hash of the decoded float32 bytes> [block=<hex>]
//   <name> error=<status code> <message>
//
// (one line each; the whole block in hex when it is at most kFullHexBytes).
// EF cases hash the residual instead of the decode: residual=<hash>.
//
// Thread-safety: pure functions.
#ifndef TAUPS_TESTS_CODEC_GOLDEN_CASES_H_
#define TAUPS_TESTS_CODEC_GOLDEN_CASES_H_

#include <cstddef>
#include <map>
#include <string>

namespace taups::testing {

// Blocks up to this size are written out whole, not only hashed.
inline constexpr size_t kFullHexBytes = 96;

// Every case's name and line (without the name), computed now with the CPU
// codecs, in a fixed order.
std::map<std::string, std::string> ComputeGoldenLines();

// The file text for `lines`: a header saying what it is and how to
// regenerate it, then "<name> <line>" per case.
std::string FormatGoldenFile(const std::map<std::string, std::string>& lines);

// Parses a file FormatGoldenFile wrote ('#' lines and blank lines are
// comments). A malformed line is reported in `error` (and parsing stops).
std::map<std::string, std::string> ParseGoldenFile(const std::string& text,
                                                   std::string* error);

}  // namespace taups::testing

#endif  // TAUPS_TESTS_CODEC_GOLDEN_CASES_H_
