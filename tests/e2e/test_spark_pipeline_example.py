"""docs/spark.md's pipeline example, run as a user pastes it (a real process) against a real
`kraft dev` node: orders in, one total per customer out in order-totals. tests/docs/test_examples.py
leaves this block to this test (its `not run` marker names this file), which writes its input."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
from system_tools import require_tool

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "spark.md"
MARKER = "tests/e2e/test_spark_pipeline_example.py runs this block"


def docs_example() -> str:
    text = PAGE.read_text()
    start = text.index("```python\n", text.index(MARKER)) + len("```python\n")
    return text[start : text.index("```", start)]


def test_the_spark_page_pipeline_totals_orders_per_customer(node):
    pytest.importorskip("pyspark")
    require_tool("java")
    admin = Admin(node.address)
    try:
        admin.create_topics([NewTopic("orders", 2, 1), NewTopic("order-totals", 1, 1)])
    finally:
        admin.close()
    amounts = {"ann": [5, 7, 11], "bob": [2], "cy": [1, 1, 1, 1]}
    with Producer(node.address, acks="all") as p:
        for customer, values in amounts.items():
            for v in values:
                p.send("orders", str(v).encode(), customer.encode())
    env = {
        **os.environ,
        "KRAFT_BOOTSTRAP": node.address,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
    }
    proc = subprocess.run(
        [sys.executable, "-"],
        input=docs_example(),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    tp = TopicPartition("order-totals", 0)
    with Consumer(node.address) as c:
        c.assign([tp])
        c.seek(tp, 0)
        got = {}
        while len(got) < len(amounts):
            records = c.poll(timeout_ms=10_000)
            assert records, f"order-totals holds only {got}"
            got.update({r.key.decode(): int(r.value) for r in records})
    assert got == {customer: sum(values) for customer, values in amounts.items()}
