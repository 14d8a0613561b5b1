"""docker/entrypoint.sh turns KRAFT_CFG_* variables into server.properties keys as Kafka's images
do: `_` is `.`, `__` is `_`, `___` is `-`. Runs the script with a stand-in `kraft` (no Docker)."""

from __future__ import annotations

import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_underscores_map_as_in_kafkas_images(tmp_path):
    fake = tmp_path / "bin" / "kraft"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "kraft $*"\n')
    fake.chmod(0o755)
    config = tmp_path / "server.properties"
    env = {
        "PATH": f"{fake.parent}:{os.environ['PATH']}",
        "KRAFT_CONFIG": str(config),
        "KRAFT_CLUSTER_ID": "c1",
        "KRAFT_CFG_NODE_ID": "4",
        "KRAFT_CFG_LISTENER_NAME_SASL__SSL_SSL_CLIENT_AUTH": "none",
        "KRAFT_CFG_SUPER_USERS": "User:admin;User:kraft-node-4",
        "KRAFT_CFG_SOME___DASHED_KEY": "x=y",
    }
    done = subprocess.run(
        ["sh", str(ROOT / "docker" / "entrypoint.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert f"kraft node --config {config}" in done.stdout
    lines = config.read_text().splitlines()
    assert "listener.name.sasl_ssl.ssl.client.auth=none" in lines
    assert "node.id=4" in lines and "super.users=User:admin;User:kraft-node-4" in lines
    assert "some-dashed.key=x=y" in lines
