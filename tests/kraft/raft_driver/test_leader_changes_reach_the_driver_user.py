"""The driver tells its user who leads: `on_leader_change(leader_id, epoch)` at start and on every
change, a read-only view (`leader_id`, `epoch`, `is_leader`), `wait_leader_change()` for an active
controller to notice it lost the lead, and `leader_epoch_start_offset()` for it to know when it has
replayed every entry of older epochs. A sole voter leads at once, with no election timeout."""

from __future__ import annotations

import random

import trio
from driver_cluster import CONFIG, Node, commit, free_port

from kraft.raft import MemoryElectionStore, MemoryRaftLog, RaftConfig, RaftCore
from kraft.raft.driver import RaftDriver, monotonic_ms

VOTERS = frozenset({1, 2, 3})


async def test_a_sole_voter_leads_at_once_then_reports_losing_and_regaining_the_lead():
    # Kafka's default election timeout: before the change, leading took 1 to 2 seconds.
    config = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=300, fetch_max_wait_ms=100)
    log = MemoryRaftLog()
    core = RaftCore(
        1, frozenset({1}), log, MemoryElectionStore(), random.Random(1), config, monotonic_ms()
    )
    changes = []
    driver = RaftDriver(
        core, log, MemoryElectionStore(), {}, on_leader_change=lambda *view: changes.append(view)
    )
    assert driver.leader_id is None and not driver.is_leader  # nothing published yet
    async with trio.open_nursery() as nursery:
        await nursery.start(driver.run)
        with trio.fail_after(0.5):
            assert await driver.wait_leader_change() == (1, 1)
        assert driver.is_leader and driver.leader_id == 1 and driver.epoch == 1
        start = driver.leader_epoch_start_offset()
        assert start == 0
        await driver.wait_committed(start)  # caught up with every older epoch: may serve
        assert driver.committed_end == 1

        lost = trio.Event()
        seen = []

        async def active_controller():
            while driver.is_leader:
                seen.append(await driver.wait_leader_change())
            lost.set()

        nursery.start_soon(active_controller)
        await trio.sleep(0)
        # It resigns (as on a graceful shutdown): nobody leads until it elects itself again.
        # (No other node can take the lead: only voters may announce themselves.)
        await driver.resign()
        with trio.fail_after(1):
            await lost.wait()
        assert seen == [(None, 1)]
        assert not driver.is_leader and driver.leader_epoch_start_offset() is None

        # After an election timeout (1 to 2 s here) the sole voter elects itself again.
        with trio.fail_after(3):
            while not driver.is_leader:
                await driver.wait_leader_change()
        assert driver.epoch == 2 and driver.leader_epoch_start_offset() == 1
        assert changes == [(1, 1), (None, 1), (1, 2)]
        nursery.cancel_scope.cancel()


def _leader_change_offset(node: Node, epoch: int) -> int:
    return next(o for o, e, _, control in node.applied if control and e == epoch)


async def test_three_voters_agree_on_the_leader_and_the_old_one_notices_it_lost(tmp_path):
    addresses = {i: f"127.0.0.1:{free_port()}" for i in sorted(VOTERS)}
    nodes = [
        Node(i, VOTERS, tmp_path / f"node-{i}", addresses, seed=i, config=CONFIG)
        for i in sorted(VOTERS)
    ]
    try:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                for n in nodes:
                    await n.start(nursery)
                    await nursery.start(n.driver.run)
                old = await commit(nodes, b"a")
                epoch = old.driver.epoch
                while any(n.driver.leader_and_epoch != (old.node_id, epoch) for n in nodes):
                    await trio.sleep(0.02)
                assert [n.driver.is_leader for n in nodes].count(True) == 1
                start = old.driver.leader_epoch_start_offset()
                assert start == _leader_change_offset(old, epoch)
                assert all(
                    n.driver.leader_epoch_start_offset() is None for n in nodes if n is not old
                )

                # The active controller's watch: it returns once the node no longer leads.
                lost = trio.Event()

                async def watch():
                    while old.driver.is_leader:
                        await old.driver.wait_leader_change()
                    lost.set()

                nursery.start_soon(watch)
                await old.stop()  # nobody can reach it any more
                old.server = None
                await lost.wait()  # check-quorum made it resign
                survivors = [n for n in nodes if n is not old]
                new = await commit(survivors, b"b", above_epoch=epoch)
                view = (new.node_id, new.driver.epoch)
                while any(n.driver.leader_and_epoch != view for n in nodes):
                    await trio.sleep(0.02)
                for n in nodes:
                    assert n.leader_changes[-1] == view
                    epochs = [e for _, e in n.leader_changes]
                    assert epochs == sorted(epochs), f"node {n.node_id}: epoch went back"
                assert (old.node_id, epoch) in old.leader_changes
                assert (None, epoch) in old.leader_changes  # resigned: no known leader
                assert new.driver.leader_epoch_start_offset() == _leader_change_offset(new, view[1])
                nursery.cancel_scope.cancel()
    finally:
        for n in nodes:
            await n.stop()
            n.log.close()
