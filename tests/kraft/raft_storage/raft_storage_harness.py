"""One way to open and to crash each RaftLog, so a contract test runs unchanged on both; the disk
crash is a power loss: every segment file goes back to what its last fsync made durable."""

from __future__ import annotations

import os
from pathlib import Path

from kraft.raft.disk import FileRaftLog, metadata_log_dir
from kraft.raft.log import Entry
from kraft.raft.memory import MemoryRaftLog

# Small segments so snapshots can delete whole segments and reads cross segment boundaries.
SEGMENT_BYTES = 400


def entries(start: int, epochs, payload=b"v") -> list[Entry]:
    """One entry per epoch in `epochs`, from offset `start`, payloads naming their offset."""
    return [Entry(start + i, e, payload + str(start + i).encode()) for i, e in enumerate(epochs)]


class MemoryHarness:
    name = "memory"

    def open(self) -> MemoryRaftLog:
        return MemoryRaftLog()

    def crash(self, log: MemoryRaftLog) -> MemoryRaftLog:
        log.crash()
        return log


class DurableSizes(FileRaftLog):
    """FileRaftLog that notes each segment file's size whenever the engine fsyncs, i.e. what a
    power loss would keep (truncations count as durable at once, as in the in-memory twin)."""

    def __init__(self, dir: Path, **kwargs) -> None:
        super().__init__(dir, **kwargs)
        self.durable: dict[str, int] = {}
        self._note()
        engine = self.engine
        flush, truncate_to, truncate_fully = (
            engine.flush,
            engine.truncate_to,
            engine.truncate_fully_and_start_at,
        )

        def flushed(offset=None):
            flush(offset)
            self._note()

        def truncated(offset):
            truncate_to(offset)
            self._note(shrink_only=True)

        def truncated_fully(offset):
            truncate_fully(offset)
            self._note(shrink_only=True)

        engine.flush, engine.truncate_to = flushed, truncated
        engine.truncate_fully_and_start_at = truncated_fully

    def _note(self, shrink_only: bool = False) -> None:
        sizes = {p.name: p.stat().st_size for p in self.dir.glob("*.log")}
        if shrink_only:
            sizes = {
                name: min(size, sizes[name]) for name, size in self.durable.items() if name in sizes
            }
        self.durable = sizes

    def lose_unflushed(self) -> None:
        self.engine.close()
        for path in self.dir.glob("*.log"):
            if path.name in self.durable:
                os.truncate(path, min(path.stat().st_size, self.durable[path.name]))
            else:
                path.unlink()  # created after the last fsync of the directory


class DiskHarness:
    name = "disk"

    def __init__(self, tmp_path: Path) -> None:
        self.dir = metadata_log_dir(tmp_path)

    def open(self) -> DurableSizes:
        return DurableSizes(self.dir, now_ms=0, segment_bytes=SEGMENT_BYTES)

    def crash(self, log: DurableSizes) -> DurableSizes:
        log.lose_unflushed()
        return self.open()
