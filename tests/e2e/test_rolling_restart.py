"""`kraft dev --rolling-restart --include-controllers` of a 3-controller + 3-broker cluster under
load: a producer (acks=all, retries) writes to an RF=3, min.insync.replicas=2 topic and a consumer
group reads it throughout. The producer's application sees no error, every acknowledged record is
read back exactly once, in order, per partition, and every node is a new process afterwards."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest

from clients.consumer import Consumer
from clients.producer import Producer
from entry.dev_cluster import is_kraft_process

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOPIC = "rolling"
PARTITIONS = 3


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "cluster"
    yield d
    if (d / "cluster.json").exists():
        for n in json.loads((d / "cluster.json").read_text())["nodes"]:
            if n.get("pid") and is_kraft_process(n["pid"]):
                os.kill(n["pid"], signal.SIGKILL)


def _logs(data: pathlib.Path) -> str:
    return "".join(
        f"\n--- {p}\n{p.read_text()[-2000:]}" for p in sorted(data.glob("node-*/node.log"))
    )


class Load:
    """A producer sending one record every few ms on a thread, remembering each acknowledged
    record's (partition, offset) and every error its application saw."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer(
            bootstrap, acks="all", linger_ms=2, request_timeout_ms=5000, retry_backoff_ms=50
        )
        self.acked: dict[int, dict[int, bytes]] = {p: {} for p in range(PARTITIONS)}
        self.errors: list[BaseException] = []
        self.sent = 0
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _done(self, value: bytes):
        def done(future) -> None:
            with self._lock:
                if future.exception() is not None:
                    self.errors.append(future.exception())
                else:
                    meta = future.result()
                    self.acked[meta.partition][meta.offset] = value

        return done

    def _run(self) -> None:
        while not self._stop.is_set():
            value = b"r-%08d" % self.sent
            try:
                future = self.producer.send(TOPIC, value, partition=self.sent % PARTITIONS)
            except Exception as exc:  # noqa: BLE001 - the application's view: any error counts
                with self._lock:
                    self.errors.append(exc)
            else:
                future.add_done_callback(self._done(value))
            self.sent += 1
            time.sleep(0.004)

    def count(self) -> int:
        with self._lock:
            return sum(map(len, self.acked.values()))

    def start(self) -> Load:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.producer.flush(timeout=60)
        self.producer.close(timeout=10)


def test_rolling_restart_under_load_fails_no_send_and_reads_each_record_once(data, kraft):
    started = kraft(
        "dev",
        "--controllers",
        "3",
        "--brokers",
        "3",
        "--port",
        "0",
        "--controller-port",
        "0",
        "--detach",
        "--data",
        str(data),
        timeout=180,
    )
    assert started.returncode == 0, started.stderr + _logs(data)
    doc = json.loads((data / "cluster.json").read_text())
    bootstrap = ",".join(n["address"] for n in doc["nodes"] if n["roles"] == ["broker"])
    created = kraft(
        "topic",
        "create",
        TOPIC,
        "--partitions",
        str(PARTITIONS),
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
        "--bootstrap-server",
        bootstrap,
    )
    assert created.returncode == 0, created.stderr

    consumed: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    stop_reading = threading.Event()
    consumer_errors: list[BaseException] = []

    def read() -> None:
        try:
            with Consumer(
                bootstrap,
                group_id="rolling-readers",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
            ) as consumer:
                consumer.subscribe([TOPIC])
                while not stop_reading.is_set():
                    records = consumer.poll(timeout_ms=200)
                    for r in records:
                        consumed[r.partition].append((r.offset, r.value))
                    if records:  # commit what was read, so a rejoin resumes right after it
                        consumer.commit()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            consumer_errors.append(exc)

    load = Load(bootstrap).start()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while load.count() < 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert load.count() >= 200, f"the producer made no progress: {load.errors[:3]}"
        before = load.count()
        rolling = subprocess.run(
            [sys.executable, "-m", "entry.main", "dev", "--rolling-restart"]
            + ["--include-controllers", "--data", str(data), "--timeout", "90"]
            + ["--format", "json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert rolling.returncode == 0, rolling.stderr + _logs(data)
        time.sleep(1)  # some records after the last restart too
    finally:
        load.stop()
    assert not load.errors, f"the producer's application saw {load.errors[:5]}"
    assert load.count() > before  # it kept producing through the restarts

    summary = json.loads(rolling.stdout)
    ids = [n["id"] for n in summary["nodes"]]
    assert ids[:3] == [4, 5, 6] and sorted(ids[3:]) == [1, 2, 3]  # brokers first
    assert all(n["stop_s"] >= 0 and n["isr_s"] >= 0 for n in summary["nodes"][:3])
    assert all(n["caught_up_s"] >= 0 for n in summary["nodes"][3:])
    assert rolling.stderr.count("ISR whole in") == 3 and rolling.stderr.count("caught up in") == 3
    after = json.loads((data / "cluster.json").read_text())["nodes"]
    assert all(n["pid"] != o["pid"] for n, o in zip(after, doc["nodes"]))  # six new processes

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(map(len, consumed.values())) < load.count():
        time.sleep(0.1)
    stop_reading.set()
    reader.join(30)
    assert not consumer_errors, consumer_errors
    for p in range(PARTITIONS):
        acked = sorted(load.acked[p].items())
        # exactly once and in order: the partition's records as acknowledged, nothing else
        assert consumed[p] == acked, f"partition {p}: read {len(consumed[p])}, acked {len(acked)}"
        values = [v for _, v in acked]
        assert values == sorted(values)  # in the order they were sent
