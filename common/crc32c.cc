#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace taups::crc32c {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78u;

// tables[0] is the classic byte-at-a-time table: tables[0][b] is the CRC
// register after shifting byte b through it. tables[k][b] is that byte's
// contribution when k more zero bytes follow it, so eight bytes fold into
// the register with eight lookups and no dependency between them.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t;
  Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t r = b;
      for (int bit = 0; bit < 8; ++bit) {
        r = (r >> 1) ^ ((r & 1u) ? kReflectedPolynomial : 0u);
      }
      t[0][b] = r;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      for (int k = 1; k < 8; ++k) {
        const uint32_t prev = t[k - 1][b];
        t[k][b] = (prev >> 8) ^ t[0][prev & 0xFFu];
      }
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

uint64_t LoadLittle64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;  // x86-64 and aarch64 Linux are little-endian
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendSse42(
    uint32_t crc, const unsigned char* p, size_t n) {
  uint64_t r = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    r = _mm_crc32_u8(static_cast<uint32_t>(r), *p++);
    --n;
  }
  while (n >= 8) {
    r = _mm_crc32_u64(r, LoadLittle64(p));
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    r = _mm_crc32_u8(static_cast<uint32_t>(r), *p++);
    --n;
  }
  return ~static_cast<uint32_t>(r);
}
#endif

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n) {
  const Tables& tables = GetTables();
  const auto& t = tables.t;
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t r = ~crc;
  while (n >= 8) {
    const uint64_t v = LoadLittle64(p) ^ r;
    r = t[7][v & 0xFF] ^ t[6][(v >> 8) & 0xFF] ^ t[5][(v >> 16) & 0xFF] ^
        t[4][(v >> 24) & 0xFF] ^ t[3][(v >> 32) & 0xFF] ^
        t[2][(v >> 40) & 0xFF] ^ t[1][(v >> 48) & 0xFF] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    r = (r >> 8) ^ t[0][(r ^ *p++) & 0xFFu];
    --n;
  }
  return ~r;
}

bool HardwareAvailable() {
#if defined(__x86_64__)
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
#else
  return false;
#endif
}

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  if (HardwareAvailable()) {
    return ExtendSse42(crc, static_cast<const unsigned char*>(data), n);
  }
#endif
  return ExtendPortable(crc, data, n);
}

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  return ExtendHardware(crc, data, n);
}

}  // namespace taups::crc32c
