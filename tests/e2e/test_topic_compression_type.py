"""compression.type on a real node: a topic set to zstd stores the producer's uncompressed batches
zstd-compressed on disk and consumers read them back; a value kraft cannot honour is refused."""

from __future__ import annotations

import pytest

from clients.record.batch_header import parse_header

pytestmark = pytest.mark.e2e
ZSTD = 4


def test_a_zstd_topic_stores_zstd_batches(node, kraft):
    bs = ("--bootstrap-server", node.address)
    created = kraft("topic", "create", "packed", "-c", "compression.type=zstd", *bs)
    assert created.returncode == 0, created.stderr
    produced = kraft(
        "produce",
        "packed",
        "--compression",
        "none",
        *bs,
        input="".join(f"record {i} " * 10 + "\n" for i in range(50)),
    )
    assert produced.returncode == 0, produced.stderr
    consumed = kraft("consume", "packed", "--from-beginning", "--max-messages", "50", *bs)
    assert consumed.stdout.splitlines() == [f"record {i} " * 10 for i in range(50)]
    segment = (node.data_dir / "packed-0" / "00000000000000000000.log").read_bytes()
    assert segment and parse_header(segment).compression == ZSTD

    refused = kraft("topic", "alter", "packed", "--set", "compression.type=brotli", *bs)
    assert refused.returncode == 1 and "'snappy', 'lz4' or 'zstd'" in refused.stderr
