"""share_one_arena keeps every thread's allocations in glibc's main arena, the one the node's
periodic malloc_trim empties: the free top of a thread arena is never returned by it. Counted
by malloc_info in a fresh process, whose threads would each get an arena of their own without
the call (glibc only)."""

from __future__ import annotations

import ctypes
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

CHILD = r"""
import ctypes, sys, tempfile, threading
from broker.server import heap

if sys.argv[1] == "shared":
    assert heap.share_one_arena()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = (ctypes.c_void_p,)
barrier = threading.Barrier(4)

def allocate():
    barrier.wait()        # all alive at once: none inherits an arena another left free
    blocks = [libc.malloc(4096) for _ in range(100)]
    barrier.wait()
    for b in blocks:
        libc.free(b)

threads = [threading.Thread(target=allocate) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
libc.fclose.argtypes = (ctypes.c_void_p,)
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    f = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, f)
    libc.fclose(f)
    print(open(out.name).read().count("<heap nr="))
"""


def arenas(mode: str) -> int:
    # No MALLOC_ARENA_MAX from this environment: the child's arenas are the code's alone.
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "malloc_info"), reason="glibc only")
def test_threads_share_the_main_arena():
    assert arenas("own") > 1  # the check can see thread arenas
    assert arenas("shared") == 1
