"""A snapshot fetched from the leader is installed by the driver, not the core: the core hands it
out in its Ready (snapshot_to_install, with nothing of the old log applied), sends no fetch from
the old log end meanwhile, and fetches on from the snapshot's end once the Ready is advanced."""

import random
from dataclasses import replace

from simulation import SIM_CONFIG

from kraft.raft import ElectionState, Entry, MemoryElectionStore, MemoryRaftLog, RaftCore
from kraft.raft.log import OffsetAndEpoch
from kraft.raft.messages import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
)
from kraft.raft.ready import SnapshotInstall

SNAPSHOT = OffsetAndEpoch(50, 1)
DATA = b"state machine at offset 50" * 3


class UntouchableLog(MemoryRaftLog):
    """The core may read and append, never install: that is the driver's disk work."""

    installs_allowed = False

    def install_snapshot(self, snapshot_id, data):
        assert self.installs_allowed, "the core installed a snapshot itself"
        super().install_snapshot(snapshot_id, data)


def _follower():
    log = UntouchableLog()
    log.append([Entry(0, 1, b"old")])
    log.flush()
    config = replace(SIM_CONFIG, snapshot_chunk_bytes=32)
    core = RaftCore(
        2,
        frozenset({1, 2, 3}),
        log,
        MemoryElectionStore(ElectionState(1, None, 1)),
        random.Random(0),
        config,
        0,
    )
    return core, log


def _only(core, kind):
    ready = core.ready()
    core.advance(ready)
    return [m for m in ready.messages if isinstance(m, kind)]


def test_the_snapshot_is_installed_as_an_effect_of_the_ready():
    core, log = _follower()
    core.tick(1)
    [fetch] = _only(core, FetchRequest)
    core.step(
        FetchResponse(
            1,
            2,
            1,
            1,
            fetch.request_id,
            high_watermark=60,
            log_start_offset=50,
            snapshot_id=SNAPSHOT,
        ),
        2,
    )
    position = 0
    while True:
        [ask] = _only(core, FetchSnapshotRequest)
        assert ask.position == position
        chunk = DATA[position : position + ask.max_bytes]
        core.step(
            FetchSnapshotResponse(
                1, 2, 1, 1, ask.request_id, SNAPSHOT, position=position, size=len(DATA), chunk=chunk
            ),
            3 + position,
        )
        position += len(chunk)
        if position == len(DATA):
            break
    # The core has the whole snapshot; the log is untouched until the driver persists the Ready.
    assert log.log_end_offset == 1 and log.latest_snapshot_id is None
    core.tick(150)  # even a due fetch waits for the install
    ready = core.ready()
    assert ready.snapshot_to_install == SnapshotInstall(SNAPSHOT, DATA)
    assert ready.snapshot_to_load == SNAPSHOT
    assert ready.committed == () and ready.snapshot_to_take is None
    assert not [m for m in ready.messages if isinstance(m, (FetchRequest, FetchSnapshotRequest))]
    assert not core.has_ready()
    # What the driver does in its persist step, then advance: fetching goes on after it.
    log.installs_allowed = True
    log.install_snapshot(*ready.snapshot_to_install)
    core.advance(ready)
    [resumed] = _only(core, FetchRequest)
    assert resumed.fetch_offset == SNAPSHOT.offset and resumed.last_fetched_epoch == SNAPSHOT.epoch
