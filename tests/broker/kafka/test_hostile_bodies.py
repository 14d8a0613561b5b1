"""Request bodies no client would send, for every API and version served: the schema walk
(guard.py) and kio's decode either give a message or raise FrameError, whatever the bytes,
and quickly. A count kio would allocate for (4 billion elements in 5 bytes) would abort the
process: this test process, here, so it fails loudly."""

from __future__ import annotations

import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.kafka.apis import APIS, MIN_PRODUCE_SERVED, PRODUCE
from broker.kafka.codec import decode_request
from broker.kafka.framing import FrameError

SERVED = [
    (api.key, v)
    for api in APIS.values()
    for v in range(
        (MIN_PRODUCE_SERVED if api.key == PRODUCE else api.min_version), api.max_version + 1
    )
]

# Lengths and counts that lie: legacy int32/int16 and compact uvarint forms of huge values.
LIES = [
    struct.pack(">i", 2**31 - 1),
    struct.pack(">i", -7),
    struct.pack(">h", 32767),
    b"\xff\xff\xff\xff\x0f",
    b"\xfe\xff\xff\xff\x07",
    b"\x80\x80\x80\x80\x80\x80",
]


def decodes_or_refuses(key: int, version: int, body: bytes) -> None:
    started = time.monotonic()
    try:
        decode_request(key, version, body)
    except FrameError:
        pass
    assert time.monotonic() - started < 2.0, "a hostile body held the decoder"


@pytest.mark.parametrize("key, version", SERVED)
@pytest.mark.parametrize("lie", LIES)
def test_a_lying_count_at_any_position(key, version, lie):
    # Zeros decode as empty or null almost everywhere: a lie after N of them lands on the
    # N-th field's length for many positions.
    for prefix in range(0, 32, 2):
        decodes_or_refuses(key, version, b"\x00" * prefix + lie + b"\x01" * 8)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SERVED),
    st.lists(st.one_of(st.binary(max_size=12), st.sampled_from(LIES)), max_size=12),
)
def test_random_bodies(served, pieces):
    decodes_or_refuses(*served, b"".join(pieces))
