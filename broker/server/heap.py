"""Keeps the node's heap from holding on to the memory of large requests: glibc raises its mmap
threshold each time a large block is freed, so later megabyte-sized requests land in the heap,
whose free space it seldom returns; pinning the threshold keeps them in blocks freed at once."""
from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3               # glibc's mallopt parameter
MMAP_THRESHOLD_BYTES = 128 * 1024   # glibc's own starting value, kept instead of raised


def pin_mmap_threshold() -> bool:
    """True when the C library took the setting (glibc); elsewhere nothing changes."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    taken = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    if not taken:
        log.info("mallopt(M_MMAP_THRESHOLD) refused; large requests may keep heap memory")
    return taken
