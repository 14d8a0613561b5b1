"""The active controller's loop hands leadership back to preferred replicas once per
leader.imbalance.check.interval.seconds (the first check a full interval after it became
active), through an ElectLeaders command whose records it commits; never when disabled."""

from __future__ import annotations

import trio
from active_controller_driver import CommittingDriver
from controller_helpers import Harness

from broker.controller.active import ActiveController
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.result import ControllerResult
from kraft.metadata.records import PartitionChangeRecord


def led_by_its_second_replica(**config) -> tuple[Harness, ActiveController, CommittingDriver]:
    # No heartbeats come in this test: a session that never expires keeps the brokers live.
    h = Harness(
        ControllerConfig(
            broker_session_timeout_ms=10**9, leader_imbalance_check_interval_seconds=300, **config
        )
    )
    h.add_brokers([1, 2, 3])
    h.create_topic("orders", partitions=1, rf=3)
    second = h.partition("orders").replicas[1]
    h.commit(
        ControllerResult(
            [PartitionChangeRecord(h.image.topic("orders").topic_id, 0, leader=second)]
        )
    )
    driver = CommittingDriver()
    driver.committed_end = len(h.log)  # the quorum's log goes on where the harness's ends
    active = ActiveController(
        h.controller, driver, clock_ms=lambda: int(trio.current_time() * 1000)
    )
    driver.active = active
    return h, active, driver


async def test_the_preferred_replica_leads_again_one_interval_after_becoming_active(autojump_clock):
    h, active, driver = led_by_its_second_replica()
    preferred = h.partition("orders").replicas[0]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(active.run)
        await trio.sleep(299)
        assert h.partition("orders").leader != preferred and driver.proposals == []
        await trio.sleep(2)
        assert h.partition("orders").leader == preferred
        [[change]] = driver.proposals
        assert isinstance(change, PartitionChangeRecord) and change.leader == preferred
        await trio.sleep(600)  # balanced now: later checks propose nothing
        assert len(driver.proposals) == 1
        nursery.cancel_scope.cancel()


async def test_nothing_moves_when_auto_leader_rebalance_is_disabled(autojump_clock):
    h, active, driver = led_by_its_second_replica(auto_leader_rebalance_enable=False)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(active.run)
        await trio.sleep(1000)
        assert driver.proposals == []
        assert h.partition("orders").leader != h.partition("orders").replicas[0]
        nursery.cancel_scope.cancel()
