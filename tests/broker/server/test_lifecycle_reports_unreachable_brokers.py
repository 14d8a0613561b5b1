"""A broker that sees a connection to another broker refused heartbeats at once, naming it (the
controller then checks whether that broker is dead), instead of at its next heartbeat interval;
the same broker is named at most every REPORT_INTERVAL_S."""

from __future__ import annotations

from types import SimpleNamespace

import trio

from broker.server.lifecycle import REPORT_INTERVAL_S, BrokerEpoch, BrokerLifecycle
from kraft.controller.messages import BrokerHeartbeatResponse

INTERVAL_MS = 2000


class RecordingChannel:
    def __init__(self) -> None:
        self.sent: list[tuple[float, object]] = []

    async def send(self, request, timeout_s):
        self.sent.append((trio.current_time(), request))
        return BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False)


async def test_an_unreachable_broker_is_reported_in_a_heartbeat_sent_at_once(autojump_clock):
    channel = RecordingChannel()
    metadata = SimpleNamespace(offset=5, offline_replicas=lambda: (), remove_strays=lambda: None)
    epoch = BrokerEpoch()
    epoch.value = 7
    lifecycle = BrokerLifecycle(1, "localhost", 9093, None, channel, metadata, epoch, INTERVAL_MS)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lifecycle._heartbeat_until_stale)
        await trio.sleep(0.1)  # the first heartbeat went; next in 2 s
        lifecycle.report_unreachable(2)
        await trio.sleep(0.01)
        lifecycle.report_unreachable(2)  # again at once: not named again yet
        lifecycle.report_unreachable(1)  # itself: never
        await trio.sleep(REPORT_INTERVAL_S)
        lifecycle.report_unreachable(2)  # later: named again
        await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    named = [(round(t, 2), req.unreachable_brokers) for t, req in channel.sent]
    assert named == [(0.0, ()), (0.1, (2,)), (0.61, (2,))], named
