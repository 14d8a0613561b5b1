"""The node process as an operator meets it: `kraft dev` stops cleanly on SIGTERM (next start skips
recovery), `kraft node` refuses an unformatted dir and says how to format, and a busy port or a
bad config key is one clear line and exit 1; a broker still waiting for its controllers stops on
SIGTERM."""

from __future__ import annotations

import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_stop_signal_stops_cleanly_and_leaves_the_clean_shutdown_marker(node, signum):
    assert node.stop(signum=signum) == 0
    assert (node.data_dir / ".kafka_cleanshutdown").exists()
    assert (node.data_dir / "recovery-point-offset-checkpoint").read_text().startswith("0\n")
    node.start()  # and it comes back on the same data
    assert not (node.data_dir / ".kafka_cleanshutdown").exists()


def test_node_refuses_an_unformatted_dir_and_says_how_to_format(tmp_path, kraft):
    config = tmp_path / "server.properties"
    config.write_text(
        f"node.id=2\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs={tmp_path / 'data'}\n"
    )

    refused = kraft("node", "--config", str(config))
    assert refused.returncode == 1
    assert "not formatted; run: kraft format" in refused.stderr
    assert "Traceback" not in refused.stderr

    formatted = kraft("format", "--config", str(config), "--cluster-id", "c1")
    assert formatted.returncode == 0, formatted.stderr
    assert "cluster.id=c1" in (tmp_path / "data" / "meta.properties").read_text()
    again = kraft("format", "--config", str(config))
    assert again.returncode == 1 and "already formatted" in again.stderr


def test_a_busy_port_is_one_clear_line(node, tmp_path, kraft):
    busy = kraft("dev", "--data", str(tmp_path / "other"), "--port", str(node.port), timeout=30)
    assert busy.returncode == 1
    assert f"cannot listen on 127.0.0.1:{node.port}" in busy.stderr
    assert "Traceback" not in busy.stderr


def test_a_bad_config_value_names_the_key(tmp_path, kraft):
    bad = kraft(
        "dev", "--data", str(tmp_path / "d"), "--port", "0", "--override", "num.partitions=many"
    )
    assert bad.returncode == 1
    assert "num.partitions" in bad.stderr and "Traceback" not in bad.stderr


def test_a_broker_waiting_for_its_controllers_still_stops_on_sigterm(tmp_path, kraft):
    config = tmp_path / "broker.properties"
    config.write_text(
        f"process.roles=broker\nnode.id=4\nlisteners=PLAINTEXT://127.0.0.1:0\n"
        f"controller.quorum.voters=1@127.0.0.1:{_free_port()}\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    assert kraft("format", "--config", str(config)).returncode == 0
    log = tmp_path / "broker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "entry.main", "node", "--config", str(config)],
            cwd=ROOT,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 30
        while "waiting to be registered" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "waiting to be registered" in log.read_text(), log.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
