// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78, initial
// value and final xor 0xFFFFFFFF): the checksum of iSCSI (RFC 3720), ext4
// and leveldb. Debian 12 packages no C library for it, so it is computed
// here: with the SSE4.2 crc32 instruction where the CPU has it (checked
// once at run time), else by a slicing-by-8 table (eight 256-entry tables
// derived from the polynomial at start-up; 8 bytes per step). Both give
// the same values; tests/checkpoint_format_test.cc checks them against
// RFC 3720's vectors (appendix B.4) and each other.
//
// Pure functions; thread-safe.
#ifndef TAUPS_COMMON_CRC32C_H_
#define TAUPS_COMMON_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace taups::crc32c {

// The CRC of `data` appended to a stream whose CRC so far is `crc` (0 for an
// empty stream): Extend(Value(a), b) == Value(a + b).
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// The two implementations, for tests and the benchmark; Extend picks one.
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
// Falls back to ExtendPortable when the CPU lacks SSE4.2.
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n);
bool HardwareAvailable();

}  // namespace taups::crc32c

#endif  // TAUPS_COMMON_CRC32C_H_
