"""One partition's fetched batches, kept as the bytes the broker sent and decoded a few batches at
a time as poll takes records (Kafka's CompletedFetch).

Why not decode on arrival: a decoded record is a GC-tracked Python object (a namedtuple, which
CPython never untracks). Decoded ahead, records waited in the buffer for poll long enough for
the collector to promote them and walk them again in every full collection, which took about a
third of a fast consumer's time. Decoded here, a record is made just before the user gets it and
dies young if the user drops it, and the consumer's trio thread (heartbeats, fetches) never
spends time decoding."""

from __future__ import annotations

import bisect
import operator

from clients.record.codec import decode_records, iter_batches

_offset_of = operator.attrgetter("offset")


def batch_span(data: bytes, offset: int) -> tuple[int, int, int, bool]:
    """Of a fetched partition's records (whole batches, then perhaps a cut one): the next offset
    after the whole batches, their highest leader epoch, where they end, and whether any is not
    a control batch (transaction markers are never records to the user)."""
    next_offset, epoch, end, has_records = offset, -1, 0, False
    for pos, header in iter_batches(data):
        next_offset = header.base_offset + header.last_offset_delta + 1
        epoch = max(epoch, header.partition_leader_epoch)
        end = pos + header.size
        has_records = has_records or not header.is_control
    return next_offset, epoch, end, has_records


class CompletedFetch:
    """`take(n)` returns up to n records in offset order, [] once used up (`done`). A batch that
    does not decode (bad CRC, bad lengths) raises CorruptBatchError from `take`, and every later
    `take` raises it again: nothing past it is returned and nothing before it is lost."""

    __slots__ = (
        "tp",
        "data",
        "pos",
        "end",
        "records",
        "index",
        "skip_below",
        "next_offset",
        "into",
        "verify_crc",
        "error",
    )

    def __init__(
        self,
        tp,
        data: bytes,
        end: int,
        fetch_offset: int,
        next_offset: int,
        *,
        record_type: type,
        verify_crc: bool,
    ) -> None:
        self.tp = tp
        self.data = data  # whole batches in data[:end]
        self.pos = 0  # where the batches not decoded yet start
        self.end = end
        self.records: list = []  # decoded, not all taken yet
        self.index = 0
        self.skip_below = fetch_offset  # a batch may start before the offset asked for
        self.next_offset = next_offset  # the partition's position once all are taken
        self.into = (record_type, tp[0], tp[1])
        self.verify_crc = verify_crc
        self.error: Exception | None = None

    @property
    def done(self) -> bool:
        return self.index >= len(self.records) and self.pos >= self.end and self.error is None

    def take(self, n: int) -> list:
        out: list = []
        while len(out) < n:
            if self.index >= len(self.records):
                try:
                    more = self._decode(n - len(out))
                except ValueError:
                    if out:
                        return out  # the next take raises it
                    raise
                if not more:
                    break
            part = self.records[self.index : self.index + n - len(out)]
            self.index += len(part)
            out += part
        return out

    def _decode(self, want: int) -> bool:
        """Decode the next batches holding at least `want` records (one at least); False when
        there are none left. Raises the error of a batch that does not decode."""
        if self.error is not None:
            raise self.error
        if self.pos >= self.end:
            return False
        start, stop, count, spanned = self.pos, self.pos, 0, 0
        for pos, header in iter_batches(memoryview(self.data)[start : self.end]):
            stop = start + pos + header.size
            count += header.records_count
            spanned += 1
            if count >= want:
                break
        if stop == start:  # not even one whole batch: nothing to take (never sent so)
            self.pos = self.end
            return False
        try:
            records = decode_records(
                self.data[start:stop], verify_crc=self.verify_crc, skip_control=True, into=self.into
            )
        except ValueError as exc:
            if spanned > 1:  # one batch at a time up to the bad one: those before it count
                return self._decode(1)
            self.error = exc
            raise
        self.pos = stop
        if records and records[0].offset < self.skip_below:
            del records[: bisect.bisect_left(records, self.skip_below, key=_offset_of)]
        self.records, self.index = records, 0
        return True
