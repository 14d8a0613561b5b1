"""`docker compose -f docker-compose.secure.yml up quorum` for real: the image from this checkout,
certificates made by the one-shot `certs` service, 3 controllers and 3 brokers calling each other
over mTLS, the admin's SCRAM user created by `quorum`; then produce and consume as admin over
SASL_SSL, and a client without credentials refused. Skipped, reason printed, without Docker."""

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
ADMIN_TLS = "/etc/kraft/secure/admin-tls.properties"
RECORDS = 100

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]


def test_secure_compose_serves_the_admin_over_sasl_ssl(capsys):
    compose = build_image(IMAGE, require_compose(capsys), capsys)
    built = time.monotonic()
    cluster = ComposeCluster(compose, IMAGE, "docker-compose.secure.yml")
    try:
        cluster.compose("up", "-d", "quorum", timeout=300)
        wait_healthy(cluster, "quorum")
        healthy = time.monotonic()
        printed = cluster.compose("logs", "--no-color", "quorum").stdout
        assert "creating the SCRAM user admin" in printed, printed
        assert "LeaderId" in printed and "CLUSTER-ID" in printed, printed

        # The controllers serve certificates only: the admin's, not its password.
        quorum = json.loads(
            cluster.kraft(
                "quorum",
                "describe",
                "--bootstrap-controller",
                CONTROLLERS,
                "--command-config",
                ADMIN_TLS,
                "--format",
                "json",
            )
        )
        assert sorted(v["id"] for v in quorum["voters"]) == [1, 2, 3], quorum
        # `client` is the admin over SASL_SSL (its KRAFT_COMMAND_CONFIG is client.properties).
        info = json.loads(
            cluster.kraft(
                "cluster", "info", "--bootstrap-server", cluster.bootstrap, "--format", "json"
            )
        )
        assert sorted(b["id"] for b in info["brokers"]) == [4, 5, 6], info
        produce_and_consume(cluster, "compose-secure", RECORDS)
        users = cluster.kraft("user", "list", "--bootstrap-server", cluster.bootstrap)
        assert "admin" in users, users

        # Without the admin's settings a client speaks PLAINTEXT to a TLS listener: refused.
        anonymous = cluster.compose(
            "run",
            "--rm",
            "-T",
            "-e",
            "KRAFT_COMMAND_CONFIG=",
            "client",
            "kraft",
            "topic",
            "list",
            "--bootstrap-server",
            cluster.bootstrap,
            timeout=180,
            check=False,
        )
        assert anonymous.returncode != 0 and "compose-secure" not in anonymous.stdout, anonymous
        print(
            f"compose up to healthy {healthy - built:.0f} s, checks {time.monotonic() - healthy:.0f} s"
        )
    finally:
        cluster.down()
    assert_removed(cluster)
