"""A broker that another broker reports unreachable is fenced at once when nothing listens at its
address (its process is gone), leadership moving to the next ISR member, instead of at the end of
its session; one that still accepts connections, the reporter itself, or a registration that
changed since the report, is left to its session."""

from __future__ import annotations

import trio
from active_controller_driver import CommittingDriver
from controller_helpers import Harness

from broker.controller.active import ActiveController
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import BrokerHeartbeatRequest

SESSION_MS = 60_000  # long: only the report can fence anyone within these tests


def _cluster(dead: set[tuple[str, int]]):
    h = Harness(
        ControllerConfig(broker_session_timeout_ms=SESSION_MS, auto_leader_rebalance_enable=False)
    )
    h.add_brokers([1, 2, 3])
    h.create_topic("t", partitions=1, rf=3)
    driver = CommittingDriver()
    driver.committed_end = len(h.log)
    probed: list[tuple[str, int]] = []

    async def probe(host: str, port: int) -> bool:
        probed.append((host, port))
        return (host, port) in dead

    active = ActiveController(
        h.controller, driver, clock_ms=lambda: int(trio.current_time() * 1000), probe=probe
    )
    driver.active = active
    return h, active, probed, driver


async def _report(h: Harness, active: ActiveController, reporter: int, *unreachable: int):
    request = BrokerHeartbeatRequest(
        reporter, h.broker_epochs[reporter], len(h.log) - 1, unreachable_brokers=unreachable
    )
    response, _ = await active.handle(request)
    assert response.error_code == 0


async def test_a_reported_broker_that_refuses_connections_is_fenced_at_once(autojump_clock):
    dead: set[tuple[str, int]] = set()
    h, active, probed, _ = _cluster(dead)
    leader = h.partition("t").leader
    address = ("localhost", 9092 + leader)
    dead.add(address)  # killed
    reporter = next(b for b in (1, 2, 3) if b != leader)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(active.run)
        await trio.sleep(0.01)
        start = trio.current_time()
        await _report(h, active, reporter, leader)
        while not h.image.broker(leader).fenced:
            await trio.sleep(0.001)
        took = trio.current_time() - start
        nursery.cancel_scope.cancel()
    assert took < 0.05, took  # not a session (60 s), not a tick
    assert probed == [address]
    part = h.partition("t")
    assert part.leader not in (leader, -1) and leader not in part.isr


async def test_a_reported_broker_still_listening_is_left_to_its_session(autojump_clock):
    h, active, probed, driver = _cluster(dead=set())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(active.run)
        await trio.sleep(0.01)
        stale = BrokerHeartbeatRequest(
            3, h.broker_epochs[3] + 100, len(h.log) - 1, unreachable_brokers=(2,)
        )
        response, _ = await active.handle(stale)  # not a registered broker: ignored
        assert response.error_code != 0
        await trio.sleep(1)
        await _report(h, active, 1, 2)
        await _report(h, active, 1, 1)  # itself: never probed
        await trio.sleep(1)
        await _report(h, active, 3, 2)  # again, later: probed again
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert probed == [("localhost", 9094), ("localhost", 9094)]
    assert not any(h.image.broker(b).fenced for b in (1, 2, 3)) and driver.proposals == []


async def test_a_broker_registered_again_since_the_report_is_not_fenced(autojump_clock):
    h, active, probed, driver = _cluster(dead={("localhost", 9094)})
    gate = trio.Event()
    real_probe = active.probe

    async def slow_probe(host, port):
        await gate.wait()
        return await real_probe(host, port)

    active.probe = slow_probe
    async with trio.open_nursery() as nursery:
        nursery.start_soon(active.run)
        await trio.sleep(0.01)
        await _report(h, active, 1, 2)
        await trio.sleep(0.01)
        old_epoch = h.broker_epochs[2]
        assert h.register(2, incarnation="a new process").error_code == 0  # restarted meanwhile
        assert h.broker_epochs[2] != old_epoch
        assert h.heartbeat(2).is_fenced is False
        gate.set()
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert probed == [("localhost", 9094)]  # (a stale answer: the report was about the old one)
    assert driver.proposals == [] and not h.image.broker(2).fenced
