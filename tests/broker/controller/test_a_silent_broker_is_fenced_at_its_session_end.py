"""The active controller fences a broker silent for broker.session.timeout.ms at the end of its
session, not up to a polling interval (FENCE_CHECK_MS) later: on a short session that wait was a
large share of a partition's failover. A broker that keeps heartbeating is never fenced."""

from __future__ import annotations

import trio
from active_controller_driver import CommittingDriver
from controller_helpers import Harness

from broker.controller.active import FENCE_CHECK_MS, ActiveController
from kraft.controller.controller_config import ControllerConfig

SESSION_MS = 1000


async def test_a_silent_broker_is_fenced_when_its_session_ends(autojump_clock):
    h = Harness(
        ControllerConfig(broker_session_timeout_ms=SESSION_MS, auto_leader_rebalance_enable=False)
    )
    h.add_brokers([1, 2])
    driver = CommittingDriver()
    driver.committed_end = len(h.log)
    clock = lambda: int(trio.current_time() * 1000)  # noqa: E731
    active = ActiveController(h.controller, driver, clock_ms=clock)
    driver.active = active
    fenced_at: dict[int, int] = {}

    async def watch() -> None:
        while not fenced_at:
            await trio.sleep(0.001)
            for b in (1, 2):
                if b not in fenced_at and h.image.broker(b).fenced:
                    fenced_at[b] = clock()

    async def heartbeat_broker_2() -> None:
        while True:
            await trio.sleep(0.3)
            assert h.heartbeat(2, clock()).is_fenced is False

    async with trio.open_nursery() as nursery:
        nursery.start_soon(active.run)
        nursery.start_soon(heartbeat_broker_2)
        # Broker 1's last heartbeat, between two FENCE_CHECK_MS ticks of the controller.
        await trio.sleep((FENCE_CHECK_MS + 137) / 1000)
        last = clock()
        assert h.heartbeat(1, last).is_fenced is False
        await watch()
        await trio.sleep(3 * SESSION_MS / 1000)
        nursery.cancel_scope.cancel()
    assert list(fenced_at) == [1], fenced_at  # 2 heartbeats: never fenced
    assert last + SESSION_MS <= fenced_at[1] <= last + SESSION_MS + 5, (last, fenced_at)


async def test_a_stall_of_the_controller_itself_fences_nobody(autojump_clock):
    """The controller's process stalls for longer than a session (SIGSTOP, a starved CPU): on
    waking, its brokers' heartbeats of that time are still queued. The stall counts against no
    session, so they arrive before anyone is fenced; a broker silent after it still is."""
    h = Harness(
        ControllerConfig(broker_session_timeout_ms=SESSION_MS, auto_leader_rebalance_enable=False)
    )
    h.add_brokers([1, 2])
    driver = CommittingDriver()
    driver.committed_end = len(h.log)
    stalled_ms = 0  # how far the controller's clock ran while its loop did not
    clock = lambda: int(trio.current_time() * 1000) + stalled_ms  # noqa: E731
    active = ActiveController(h.controller, driver, clock_ms=clock)
    driver.active = active
    async with trio.open_nursery() as nursery:
        nursery.start_soon(active.run)
        await trio.sleep(0.5)  # active, sessions running
        assert h.heartbeat(1, clock()).is_fenced is False
        assert h.heartbeat(2, clock()).is_fenced is False
        stalled_ms = 3 * SESSION_MS  # the stall: 3 s pass for the controller
        await trio.sleep(0.001 + FENCE_CHECK_MS / 1000)  # its loop wakes first
        assert not h.image.broker(1).fenced and not h.image.broker(2).fenced
        assert h.heartbeat(2, clock()).is_fenced is False  # 2's queued heartbeat; 1 is dead
        for _ in range(2):
            await trio.sleep(SESSION_MS / 2000 + 0.01)
            assert h.heartbeat(2, clock()).is_fenced is False
        assert h.image.broker(1).fenced and not h.image.broker(2).fenced
        nursery.cancel_scope.cancel()
