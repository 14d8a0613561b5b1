"""What a partition's leader answers an append, a read and an offset lookup, as Kafka's
LogAppendInfo / LogReadInfo and ListOffsets' answer: Kafka error codes, never an exception (a
client's bytes can never take the broker down)."""

from __future__ import annotations

import dataclasses

from kraft.log.file_slice import FileSlice
from kraft.log.transaction_index import AbortedTxn

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
ACKS_ALL = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclasses.dataclass(frozen=True)
class ProduceResult:
    error_code: int = 0
    error_message: str = ""
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    # Where the append ended and in which leader epoch: what acks=all waits for (-1: nothing new).
    last_offset: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(frozen=True)
class FetchResult:
    error_code: int = 0
    error_message: str = ""
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes | FileSlice = b""  # a FileSlice (not read yet) when asked with unread=True
    diverging_epoch: tuple[int, int] | None = None  # follower fetches only (KIP-101)
    last_stable_offset: int = -1
    aborted_transactions: tuple[AbortedTxn, ...] = ()  # read_committed only


@dataclasses.dataclass(frozen=True)
class OffsetResult:
    error_code: int = 0
    error_message: str = ""
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1
