"""`docker compose up quorum` for real: builds the image from this checkout (docker/build-images.sh,
which reuses the base image when present), starts the 3-controller, 3-broker compose cluster
under a project name of its own, produces and consumes through it, then tears it all down.
Skipped, with the reason printed, where no Docker engine runs."""

from __future__ import annotations

import json
import time

import pytest
from compose_cluster import (
    ComposeCluster,
    assert_removed,
    build_image,
    produce_and_consume,
    require_compose,
    wait_healthy,
)

IMAGE = "kraft:test"
CONTROLLERS = "controller1:9093,controller2:9093,controller3:9093"
RECORDS = 100

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]


def test_compose_quorum_serves_produce_and_consume(capsys):
    compose = require_compose(capsys)
    started = time.monotonic()
    compose = build_image(IMAGE, compose, capsys)
    built = time.monotonic()

    cluster = ComposeCluster(compose, IMAGE)
    try:
        # up returns once the six nodes are healthy (quorum depends on that), then quorum prints.
        cluster.compose("up", "-d", "quorum", timeout=300)
        wait_healthy(cluster, "quorum")
        healthy = time.monotonic()
        printed = cluster.compose("logs", "--no-color", "quorum").stdout
        assert "LeaderId" in printed and "CLUSTER-ID" in printed, printed

        quorum = json.loads(
            cluster.kraft(
                "quorum", "describe", "--bootstrap-controller", CONTROLLERS, "--format", "json"
            )
        )
        assert quorum["leader_id"] in (1, 2, 3), quorum
        assert sorted(v["id"] for v in quorum["voters"]) == [1, 2, 3], quorum
        info = json.loads(
            cluster.kraft(
                "cluster", "info", "--bootstrap-server", cluster.bootstrap, "--format", "json"
            )
        )
        assert sorted(b["id"] for b in info["brokers"]) == [4, 5, 6], info

        produce_and_consume(cluster, "compose-smoke", RECORDS)
        print(
            f"image build {built - started:.0f} s, compose up to healthy {healthy - built:.0f} s, "
            f"produce+consume {time.monotonic() - healthy:.0f} s"
        )
    finally:
        cluster.down()
    assert_removed(cluster)
