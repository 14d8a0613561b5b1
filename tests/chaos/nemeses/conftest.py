"""Two network namespaces joined by a veth pair, for the nemeses' tests; removed however the
test ends. Named after the test's pid so they never collide with a chaos run's kraft-n<id>."""

from __future__ import annotations

import os
import subprocess

import pytest


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")
    return done


@pytest.fixture
def ns_pair():
    """(namespace a, address a, namespace b, address b)."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tag = f"kt{os.getpid() % 100000}"
    a, b = f"{tag}a", f"{tag}b"
    for ns in (a, b):
        sh("ip", "netns", "del", ns, check=False)
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh(
            "ip",
            "link",
            "add",
            f"{tag}va",
            "netns",
            a,
            "type",
            "veth",
            "peer",
            "name",
            f"{tag}vb",
            "netns",
            b,
        )
        for ns, dev, addr in ((a, f"{tag}va", "10.79.0.1"), (b, f"{tag}vb", "10.79.0.2")):
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield a, "10.79.0.1", b, "10.79.0.2"
    finally:
        for ns in (a, b):
            pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                sh("kill", "-9", pid, check=False)
            sh("ip", "netns", "del", ns, check=False)
