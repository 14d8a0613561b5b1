"""Differential check: seeded random appends, truncations, flushes, snapshots, installs, crashes
applied to the in-memory twin and to FileRaftLog leave both showing the same log after each step."""

import random

import pytest
from raft_storage_harness import DiskHarness, MemoryHarness, entries

from kraft.raft.log import OffsetAndEpoch

SEEDS = range(25)
STEPS = 40


def observe(log) -> dict:
    start, end = log.log_start_offset, log.log_end_offset
    snap = log.latest_snapshot_id
    top = log.last_fetched_epoch + 2
    return {
        "start": start,
        "end": end,
        "flushed": log.flushed_offset,
        "last_epoch": log.last_fetched_epoch,
        "snapshot": snap,
        "snapshot_data": log.read_snapshot(snap) if snap else None,
        "entries": log.read(start, 10_000),
        "epochs": [log.epoch_at(o) for o in range(start - (1 if snap else 0), end)],
        "kip101": [log.end_offset_for_epoch(e) for e in range(top)],
    }


def step(rng: random.Random, log, harness):
    start, end, epoch = log.log_start_offset, log.log_end_offset, log.last_fetched_epoch
    op = rng.choice(
        ["append", "append", "append", "truncate", "flush", "snapshot", "install", "crash"]
    )
    if op == "append":
        epochs = sorted(epoch + rng.choice([0, 0, 1]) for _ in range(rng.randint(1, 6)))
        log.append(entries(end, epochs))
    elif op == "truncate":
        log.truncate_to(rng.randint(start, end))
    elif op == "flush":
        log.flush()
    elif op == "snapshot" and end > 0:
        offset = rng.randint(max(start, 1), end)
        if offset > start or log.latest_snapshot_id is not None:
            log.create_snapshot(OffsetAndEpoch(offset, log.epoch_at(offset - 1)), b"s%d" % offset)
    elif op == "install" and rng.random() < 0.3:
        log.install_snapshot(
            OffsetAndEpoch(end + rng.randint(0, 5), epoch + rng.randint(0, 1)), b"installed"
        )
    elif op == "crash":
        return harness.crash(log), op
    return log, op


@pytest.mark.parametrize("seed", SEEDS)
def test_file_raft_log_behaves_as_the_memory_twin(tmp_path, seed):
    rng_memory, rng_disk = random.Random(seed), random.Random(seed)
    memory, disk = MemoryHarness(), DiskHarness(tmp_path)
    mlog, dlog = memory.open(), disk.open()
    history = []
    for _ in range(STEPS):
        mlog, op = step(rng_memory, mlog, memory)
        dlog, _ = step(rng_disk, dlog, disk)
        history.append(op)
        assert observe(dlog) == observe(mlog), f"seed {seed}, after {history}"
