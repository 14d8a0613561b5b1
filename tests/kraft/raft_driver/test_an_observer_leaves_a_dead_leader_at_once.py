"""An observer whose leader is gone (nothing listens at its address: killed, restarting) asks
another voter after retry.backoff.ms instead of waiting out its fetch timeout, as Kafka's
observers do; brokers then find a new active controller about as soon as the voters elect it."""

from __future__ import annotations

from dataclasses import replace

import trio
from driver_cluster import CONFIG, Node, commit, free_port, wait_applied

from kraft.raft.disk import FileElectionStore, quorum_state_path, write_initial
from kraft.raft.log import ElectionState

VOTERS = frozenset({1, 2, 3})
# A fetch timeout far longer than the test's deadline: only the redirect can make it in time.
SLOW_TO_GIVE_UP = replace(CONFIG, fetch_timeout_ms=20_000, fetch_max_wait_ms=100)


async def test_an_observer_asks_another_voter_when_its_leader_refuses_connections(tmp_path):
    addresses = {i: f"127.0.0.1:{free_port()}" for i in (1, 2, 3, 4)}  # 3 never starts
    observer_dir = tmp_path / "node-4"
    write_initial(quorum_state_path(observer_dir), VOTERS)
    # The observer last knew voter 3 as the leader of epoch 1.
    FileElectionStore(quorum_state_path(observer_dir)).write(ElectionState(1, None, 3))
    voters = [Node(i, VOTERS, tmp_path / f"node-{i}", addresses, seed=i) for i in (1, 2)]
    observer = Node(4, VOTERS, observer_dir, addresses, seed=4, config=SLOW_TO_GIVE_UP)
    assert observer.driver.core.leader_id == 3
    nodes = voters + [observer]
    with trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            for n in nodes:
                await n.start(nursery)
                await nursery.start(n.driver.run)
            for i in range(3):
                await commit(voters, b"entry-%d" % i)
            with trio.fail_after(3):  # far below the observer's 20 s fetch timeout
                await wait_applied([observer], 3)
            assert observer.driver.core.leader_id in (1, 2)
            nursery.cancel_scope.cancel()
    for n in nodes:
        await n.stop()
        n.log.close()
