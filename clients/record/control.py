"""Kafka's end-transaction markers: the one record of a control batch (attributes: control and
transactional flags set), written by a partition's leader when a transaction commits or aborts.

Record key (big-endian): version int16 (0), type int16 (0 ABORT, 1 COMMIT).
Record value: version int16 (0), coordinator_epoch int32.
The batch carries the transaction's producer id and epoch, base sequence -1, one record.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from clients.record.batch_header import CorruptBatchError
from clients.record.codec import encode_batch

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
_VERSION = 0


class EndTxnMarker(NamedTuple):
    committed: bool
    coordinator_epoch: int


def encode_marker_batch(
    producer_id: int,
    producer_epoch: int,
    committed: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
    *,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A whole control batch holding one COMMIT or ABORT marker, base offset 0 (the leader
    assigns the real one on append, as for any produced batch)."""
    key = _KEY.pack(_VERSION, COMMIT if committed else ABORT)
    value = _VALUE.pack(_VERSION, coordinator_epoch)
    return encode_batch(
        [(key, value, (), timestamp_ms)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def decode_marker(key: bytes | None, value: bytes | None) -> EndTxnMarker:
    """The marker of a control record; CorruptBatchError names what is malformed (an unknown
    control type is refused: Kafka skips unknown types, but kraft writes only these two)."""
    if key is None or len(key) < _KEY.size:
        raise CorruptBatchError(
            f"control record key of {0 if key is None else len(key)} bytes, "
            f"a marker key needs {_KEY.size}"
        )
    version, kind = _KEY.unpack_from(key)
    if kind not in (ABORT, COMMIT):
        raise CorruptBatchError(
            f"control record type {kind} (version {version}): only ABORT (0) "
            f"and COMMIT (1) markers are known"
        )
    if value is None or len(value) < _VALUE.size:
        raise CorruptBatchError(
            f"end-transaction marker value of "
            f"{0 if value is None else len(value)} bytes, needs {_VALUE.size}"
        )
    _, coordinator_epoch = _VALUE.unpack_from(value)
    return EndTxnMarker(kind == COMMIT, coordinator_epoch)
