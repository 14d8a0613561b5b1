"""Property: any edit of a valid batch, made to pass the CRC again (length and CRC recomputed), is
either refused by the leader's validator or decodes to exactly recordsCount records at offsets
0..n-1 whose largest timestamp is maxTimestamp: nothing a consumer cannot read gets appended."""

import struct

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kraft_log_helpers import with_crc

from clients.errors import KraftError
from clients.record.codec import decode_batch, encode_batch
from clients.record.compression import compress
from kraft.log.log_config import LogConfig
from kraft.log.log_validator import validate_records

CONFIG = LogConfig()
COMPACTED = LogConfig(cleanup_policy="compact")

blob = st.one_of(st.none(), st.binary(max_size=90))  # 64 and up: two-byte lengths
header = st.tuples(st.text(max_size=5), blob)
record = st.tuples(blob, blob, st.lists(header, max_size=2), st.integers(1_000, 1_100))
edit = st.tuples(
    st.sampled_from(["set", "insert", "delete"]), st.integers(0, 10_000), st.integers(0, 255)
)


def rebuilt(batch: bytes, section: bytes, codec: int) -> bytes:
    """`batch`'s header around a new records section: batchLength and CRC made right."""
    body = compress(codec, section) if codec else section
    head = bytearray(batch[:61])
    struct.pack_into(">i", head, 8, 49 + len(body))
    return with_crc(bytes(head) + body)


def mutate(data: bytes, edits) -> bytes:
    out = bytearray(data)
    for kind, at, value in edits:
        if not out:
            break
        i = at % len(out)
        if kind == "set":
            out[i] = value
        elif kind == "insert":
            out.insert(i, value)
        else:
            del out[i]
    return bytes(out)


@pytest.mark.slow  # 400 examples
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(record, min_size=1, max_size=6),
    codec=st.sampled_from([0, 1, 2, 3, 4]),
    edits=st.lists(edit, min_size=1, max_size=3),
    in_header=st.booleans(),
    compacted=st.booleans(),
)
def test_an_edited_batch_is_refused_or_reads_back_exactly(
    records, codec, edits, in_header, compacted
):
    batch = encode_batch(records, compression=codec)
    section = encode_batch(records)[61:]  # the records, uncompressed
    if in_header:  # attributes .. recordsCount: the CRC-covered header fields
        tail = mutate(batch[21:61], [(k, at, v) for k, at, v in edits if k == "set"])
        batch = batch[:21] + tail + batch[61:]
        codec = struct.unpack_from(">h", batch, 21)[0] & 7
        if codec not in (0, 1, 2, 3, 4):
            codec = 0  # an unreadable codec in the attributes: the section stays as it is
        candidate = rebuilt(batch, section, codec) if codec else with_crc(batch[:61] + section)
    else:
        candidate = rebuilt(batch, mutate(section, edits), codec)
    config = COMPACTED if compacted else CONFIG
    try:
        [(_, h)] = validate_records(bytearray(candidate), config, "t-0", leader=True)
    except KraftError as exc:
        event(f"refused: {exc.code.name}")
        return
    event("accepted")
    got, decoded = decode_batch(candidate)
    assert len(decoded) == h.records_count == h.last_offset_delta + 1
    assert [r.offset for r in decoded] == list(range(h.records_count))
    if not h.attributes & 0x08:
        assert max(r.timestamp for r in decoded) == h.max_timestamp
    if compacted and not h.is_control:
        assert all(r.key is not None for r in decoded)
