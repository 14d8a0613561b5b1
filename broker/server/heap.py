"""Bounds what the node's heap keeps of large requests, without paying a fresh mapping for each.

Left alone, glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), so
later requests of tens of megabytes land in the heap, whose free space it seldom returns: the
request fuzzer saw RSS reach 0.9-2.8 GB. Pinned at glibc's initial 128 KiB instead, every block
of a megabyte record (the request, each copy, each fetch answer) is a fresh mmap whose pages the
kernel faults in and zeroes one by one and unmaps on free: most of the CPU of a 1 MB produce at
RF=3 was those faults. So: blocks up to 2 MiB (a batch at the default max.message.bytes, a
follower's 1 MiB partition fetch, with room) come from the heap, which keeps at most 8 MiB free
at its top; larger ones are still mapped and unmapped whole. Free blocks inside the heap (holes
between live ones, which the trim threshold does not reach) are handed back once a second
(malloc_trim): a steady stream of large records faults its few megabytes in again at most once
a second, and a burst of odd-sized requests leaves no more than a second's worth behind.

That holds for glibc's main arena only. Each other thread that allocates (grpcio's poller and
completion threads, the asyncio thread of its server, trio's worker threads) gets an arena of
its own, up to eight per core, and malloc_trim never shrinks the top of those: glibc does only
when a large free leaves more than the trim threshold (8 MiB) there, so each keeps some megabytes
of freed memory resident after a burst, for good. The request fuzzer's node ended with 10 arenas,
five of them holding 6-11 MB free each, 30 MB resident in all (RSS +39 to +46 MB); so the node
keeps every thread in the main arena (share_one_arena), where the release reaches it all: +3 MB
one release after the burst."""

from __future__ import annotations

import ctypes
import logging

import trio

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
MMAP_THRESHOLD_BYTES = 2 * 1024 * 1024  # fixed: no raise after large frees
TRIM_THRESHOLD_BYTES = 8 * 1024 * 1024  # free heap top kept for the next large block
RELEASE_INTERVAL_S = 1.0


def _mallopt():
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return mallopt


def pin_mmap_threshold() -> bool:
    """True when the C library took the setting (glibc); elsewhere nothing changes."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    taken = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
    if not taken:
        log.info(
            "mallopt(M_MMAP_THRESHOLD, M_TRIM_THRESHOLD) refused; large requests may keep "
            "heap memory"
        )
    return taken


def share_one_arena() -> bool:
    """Every thread allocates from glibc's main arena (M_ARENA_MAX 1), whose free pages the
    periodic release hands back; True when the C library took it (glibc). Call it before the
    node starts threads: one that already has an arena of its own keeps it."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    taken = bool(mallopt(M_ARENA_MAX, 1))
    if not taken:
        log.info("mallopt(M_ARENA_MAX) refused; each thread's arena may keep freed memory")
    return taken


def _malloc_trim():
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = (ctypes.c_size_t,)
    return trim


async def release_free_heap_periodically(interval_s: float = RELEASE_INTERVAL_S) -> None:
    """Hand free heap pages back to the system every `interval_s` (glibc's malloc_trim(0));
    returns at once elsewhere. Runs until cancelled."""
    trim = _malloc_trim()
    if trim is None:
        return
    while True:
        await trio.sleep(interval_s)
        trim(0)
