// The C library's allocation statistics, for `blue bench connections` (bytes the stack allocates per link).
// glibc's mallinfo2 is not reachable from Swift's Glibc module (malloc.h is not part of it).
#ifndef OCB_MALLOC_STATISTICS_H
#define OCB_MALLOC_STATISTICS_H

#include <stddef.h>

/// Bytes allocated with malloc and not yet freed (glibc: mallinfo2().uordblks + hblkhd), 0 where unknown.
size_t ocb_heap_bytes_in_use(void);

#endif
