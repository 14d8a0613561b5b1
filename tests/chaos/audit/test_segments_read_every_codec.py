"""The audit walks a replica's batches as the broker's validator does, in every codec Kafka's
clients write (snappy included): an intact batch has no problem, a damaged section is named."""

import pytest

from chaos.audit.segments import _records_problem
from clients.record.batch_header import HEADER_SIZE, parse_header
from clients.record.codec import encode_batch
from clients.record.compression import NAMES, SNAPPY

RECORDS = [(b"k%d" % i, b"value %d " % i * 30, (), 1_000 + i) for i in range(20)]


@pytest.mark.parametrize("codec", sorted(NAMES))
def test_an_intact_batch_has_no_problem(codec):
    batch = encode_batch(RECORDS, compression=codec)
    assert parse_header(batch).compression == codec
    assert _records_problem(batch, parse_header(batch), metadata=False) is None


def test_a_damaged_snappy_section_is_named():
    batch = bytearray(encode_batch(RECORDS, compression=SNAPPY))
    batch[HEADER_SIZE + 20 : HEADER_SIZE + 28] = b"\xff" * 8  # inside the first block
    problem = _records_problem(bytes(batch), parse_header(bytes(batch)), metadata=False)
    assert problem is not None and "snappy" in problem
