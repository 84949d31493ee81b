// Process-wide allocator settings for tauPS daemons.
//
// glibc returns large freed blocks to the kernel at once (munmap / trim), so
// a server that allocates a few MiB per request pays page faults and TLB
// shootdowns on every call. KeepLargeBuffersMapped() raises the mmap and trim
// thresholds so such buffers are reused; memory then stays with the process
// (bounded by its peak use). Call once at the start of main().
#ifndef TAUPS_COMMON_MALLOC_TUNING_H_
#define TAUPS_COMMON_MALLOC_TUNING_H_

#include <malloc.h>

namespace taups {

inline void KeepLargeBuffersMapped() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace taups

#endif  // TAUPS_COMMON_MALLOC_TUNING_H_
