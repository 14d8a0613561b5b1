"""Snapshots through the real driver and gRPC: voters that take snapshots drop the log below them
(segment files included), so a voter that joins late with an empty log and an observer both get
the leader's snapshot over FetchSnapshot in small chunks, load it, go on with log entries, and end
with exactly the leader's state."""

from __future__ import annotations

from dataclasses import replace

import trio
from driver_cluster import CONFIG, Node, commit, free_port, wait_applied

from kraft.raft.messages import FetchRequest, FetchSnapshotRequest

VOTERS = frozenset({1, 2, 3})
SNAPSHOT_CONFIG = replace(CONFIG, snapshot_interval_entries=10, snapshot_chunk_bytes=64)
SEGMENT_BYTES = 512


def _requests_from(nodes: list[Node], src: int, kind: type) -> list:
    return [m for n in nodes for m in n.served if isinstance(m, kind) and m.src == src]


async def test_a_late_voter_and_an_observer_catch_up_from_a_chunked_snapshot(tmp_path):
    addresses = {i: f"127.0.0.1:{free_port()}" for i in (1, 2, 3, 4)}

    def node(i: int) -> Node:
        return Node(
            i,
            VOTERS,
            tmp_path / f"node-{i}",
            addresses,
            seed=i,
            config=SNAPSHOT_CONFIG,
            segment_bytes=SEGMENT_BYTES,
        )

    nodes = [node(1), node(2)]
    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for n in nodes:
                    await n.start(nursery)
                    await nursery.start(n.driver.run)
                # 1. Two of three voters commit enough for several snapshots.
                for i in range(60):
                    leader = await commit(nodes, b"early-%d" % i)
                await wait_applied(nodes, 60)
                log = leader.log
                snapshot = log.latest_snapshot_id
                assert snapshot is not None and snapshot.offset >= 50
                assert leader.taken[snapshot.offset] == log.read_snapshot(snapshot)
                # Nothing below the snapshot is kept: not the entries, not their segment files.
                assert log.log_start_offset == snapshot.offset
                assert log.engine.segments[0].base_offset > 0
                assert not (log.dir / "00000000000000000000.log").exists()
                assert all(n.log.log_start_offset > 0 for n in nodes)

                # 2. The third voter and an observer join with empty logs.
                late = [node(3), node(4)]
                for n in late:
                    await n.start(nursery)
                    await nursery.start(n.driver.run)
                nodes += late
                for i in range(5):
                    leader = await commit(nodes, b"late-%d" % i)
                await wait_applied(nodes, 65)
                for n in late:
                    [(loaded_id, data)] = n.loaded
                    assert loaded_id.offset >= snapshot.offset
                    source = next(
                        s for s in nodes if loaded_id.offset in s.taken and s.node_id in VOTERS
                    )
                    assert data == source.taken[loaded_id.offset]
                    assert n.log.log_start_offset >= loaded_id.offset
                    chunks = _requests_from(nodes, n.node_id, FetchSnapshotRequest)
                    positions = [m.position for m in chunks if m.snapshot_id == loaded_id]
                    assert positions[0] == 0 and len(positions) >= 2, "not fetched in chunks"
                    assert len(data) > SNAPSHOT_CONFIG.snapshot_chunk_bytes
                    fetched = [
                        m.fetch_offset for m in _requests_from(nodes, n.node_id, FetchRequest)
                    ]
                    # Fetching resumed right at the snapshot's end, and entries came after it.
                    assert loaded_id.offset in fetched
                    assert n.log.log_end_offset > loaded_id.offset
                    assert n.driver.committed_end == leader.driver.committed_end
                # 3. Every node holds the very same state: the snapshot carries all history.
                assert all(n.applied == leader.applied for n in nodes)
                assert nodes[0].payloads() == (
                    [b"early-%d" % i for i in range(60)] + [b"late-%d" % i for i in range(5)]
                )
                nursery.cancel_scope.cancel()
    finally:
        for n in nodes:
            await n.stop()
            n.log.close()
