"""How long a Raft leader takes to serve one metadata snapshot in FetchSnapshot chunks, and how
many bytes it reads doing so: run it against two checkouts (PYTHONPATH) for an A/B pair."""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from kraft.raft.config import RaftConfig
from kraft.raft.core import RaftCore
from kraft.raft.disk import FileRaftLog, metadata_log_dir
from kraft.raft.log import Entry, OffsetAndEpoch
from kraft.raft.memory import MemoryElectionStore
from kraft.raft.messages import FetchSnapshotRequest

CHUNK = 1 << 20


def rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return -1


def serve_once(size_mib: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        log = FileRaftLog(metadata_log_dir(Path(tmp)), now_ms=0)
        log.append([Entry(i, 1, b"e") for i in range(3)])
        snapshot = OffsetAndEpoch(3, 1)
        log.create_snapshot(snapshot, random.Random(1).randbytes(size_mib * CHUNK))
        core = RaftCore(
            1,
            frozenset({1}),
            log,
            MemoryElectionStore(),
            random.Random(1),
            RaftConfig(snapshot_chunk_bytes=CHUNK),
            now_ms=0,
        )
        core.advance(core.ready())
        start, read_before, position, request = time.perf_counter(), rchar(), 0, 0
        while position < size_mib * CHUNK:
            core.step(FetchSnapshotRequest(2, 1, core.epoch, request, snapshot, position, CHUNK), 0)
            ready = core.ready()
            core.advance(ready)
            position += len(ready.messages[0].chunk)
            request += 1
        seconds = time.perf_counter() - start
        log.close()
        return {
            "size_mib": size_mib,
            "seconds": round(seconds, 3),
            "read_x": round((rchar() - read_before) / (size_mib * CHUNK), 1),
        }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mib", type=int, default=64)
    print(json.dumps(serve_once(parser.parse_args().size_mib)))
