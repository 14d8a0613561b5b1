"""Bounds what the node's heap keeps of large requests, without paying a fresh mapping for each.

Left alone, glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), so
later requests of tens of megabytes land in the heap, whose free space it seldom returns: the
request fuzzer saw RSS reach 0.9-2.8 GB. Pinned at glibc's initial 128 KiB instead, every block
of a megabyte record (the request, each copy, each fetch answer) is a fresh mmap whose pages the
kernel faults in and zeroes one by one and unmaps on free: most of the CPU of a 1 MB produce at
RF=3 was those faults. So: blocks up to 2 MiB (a batch at the default max.message.bytes, a
follower's 1 MiB partition fetch, with room) come from the heap, which keeps at most 8 MiB free
at its top; larger ones are still mapped and unmapped whole."""
from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1               # glibc's mallopt parameters
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 2 * 1024 * 1024    # fixed: no raise after large frees
TRIM_THRESHOLD_BYTES = 8 * 1024 * 1024    # free heap top kept for the next large block


def pin_mmap_threshold() -> bool:
    """True when the C library took the setting (glibc); elsewhere nothing changes."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    taken = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) \
        and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
    if not taken:
        log.info("mallopt(M_MMAP_THRESHOLD, M_TRIM_THRESHOLD) refused; large requests may keep "
                 "heap memory")
    return taken
