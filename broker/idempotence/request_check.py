"""One produce request against a partition's producer state: its batch headers read and checked
whole, the verdict on the request (append, duplicate or reject), and the record after it appends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from broker.idempotence.producer_entry import DUPLICATE, REJECT, Decision, is_checked, reject
from clients.errors import ErrorCode
from clients.record.batch_header import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    CorruptBatchError,
    parse_header,
    validate_batch,
)

if TYPE_CHECKING:
    from broker.idempotence.producer_state import ProducerStateManager


def request_headers(records) -> list | None:
    """The headers of every batch in a produce request's bytes when at least one is idempotent,
    each checked whole (CRC included: a damaged batch must be CORRUPT_MESSAGE, not judged by a
    sequence it never had); None when no batch is idempotent or the bytes do not parse (the log's
    validator then answers for them)."""
    headers, pos, end = [], 0, len(records)
    try:
        while pos < end:
            header = parse_header(records, pos)
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                return None
            headers.append(header)
            pos += header.size
        if pos != end or not any(is_checked(h) for h in headers):
            return None
        for pos, _h in zip(_positions(headers), headers):
            validate_batch(records, pos)
    except CorruptBatchError:
        return None
    return headers


def _positions(headers: list) -> Iterator[int]:
    pos = 0
    for h in headers:
        yield pos
        pos += h.size


def check_request(state: ProducerStateManager, headers: list, next_offset: int) -> Decision | None:
    """The answer to a request whose batches are `headers` if it must not be appended: the first
    rejection, or a duplicate (every batch already in the log, contiguously: answered with the
    original first offset). None: append it all."""
    decisions = state.check_batches(headers, next_offset)
    for d in decisions:
        if d is not None and d.action == REJECT:
            return d
    dups = [d for d in decisions if d is not None and d.is_duplicate]
    if not dups:
        return None
    if len(dups) != len(decisions):
        return reject(
            ErrorCode.INVALID_REQUEST,
            f"the request for {state.name} mixes batches already appended with new "
            f"ones; send a retried batch in a request of its own; nothing was appended",
        )
    for a, b in zip(dups, dups[1:]):
        if b.first_offset != a.last_offset + 1:
            return reject(
                ErrorCode.INVALID_REQUEST,
                f"the request for {state.name} repeats batches that were appended "
                f"apart (offsets {a.last_offset} and {b.first_offset}); retry them one "
                f"per request",
            )
    return Decision(DUPLICATE, first_offset=dups[0].first_offset, last_offset=dups[-1].last_offset)


def record_request(
    state: ProducerStateManager, headers: list | None, first_offset: int, log_end_offset: int
) -> None:
    """After a leader append of a request whose batches got offsets from `first_offset` on."""
    if headers:
        offset = first_offset
        placed = []
        for h in headers:
            placed.append(h._replace(base_offset=offset))
            offset += h.last_offset_delta + 1
        state.on_replicated_batches(placed)
    state.end_offset = log_end_offset
