"""A consumer whose group coordinator died retries several times a second until the node is
fenced; it says so once per 10 s, with the count of retries in between, not once per retry."""

import logging

from clients.cluster import Cluster
from clients.consumer.coordinator import ConsumerCoordinator
from clients.consumer.fetcher import Fetcher
from clients.consumer.membership import CoordinatorUnknown, MembershipConfig

LINE = "looking for the coordinator again"


class NoNursery:
    def start_soon(self, *_args):
        raise AssertionError("nothing should be started for a lost coordinator")


def coordinator() -> ConsumerCoordinator:
    cluster = Cluster("127.0.0.1:9", request_timeout_ms=1000)
    fetcher = Fetcher(
        cluster,
        fetch_min_bytes=1,
        fetch_max_wait_ms=500,
        fetch_max_bytes=1 << 20,
        max_partition_fetch_bytes=1 << 20,
        auto_offset_reset="latest",
        check_crcs=True,
        request_timeout_ms=1000,
    )
    c = ConsumerCoordinator(
        cluster,
        fetcher,
        MembershipConfig("g"),
        client_id="t",
        enable_auto_commit=False,
        auto_commit_interval_ms=5000,
        metadata_max_age_ms=300_000,
        request_timeout_ms=1000,
    )
    c._nursery = NoNursery()
    return c


async def test_one_line_per_interval_with_the_count_held_back(caplog):
    c = coordinator()
    now = [100.0]
    c.coordinator_lost.clock = lambda: now[0]
    with caplog.at_level(logging.INFO, logger="clients.consumer.coordinator"):
        for i in range(30):  # three retries a second for 10 s
            c._apply([CoordinatorUnknown(f"heartbeat: NOT_COORDINATOR ({i})")])
            now[0] += 0.33
        now[0] = 110.0  # 10 s after the first line
        c._apply([CoordinatorUnknown("heartbeat: NOT_COORDINATOR (last)")])
    lines = [r.getMessage() for r in caplog.records if LINE in r.getMessage()]
    assert lines == [
        "group g: looking for the coordinator again (heartbeat: NOT_COORDINATOR (0))",
        "group g: looking for the coordinator again (heartbeat: NOT_COORDINATOR (last)) "
        "(29 more like it since the last report)",
    ]
    assert all(r.levelno == logging.INFO for r in caplog.records if LINE in r.getMessage())
