"""A fetched partition's records, decoded in slices of whole batches with a trio checkpoint
between slices, so one big fetch answer never holds up the consumer's other tasks."""
from __future__ import annotations

import trio

from clients.record.codec import decode_records, iter_batches

# About 20 ms of decoding on this VM (small records): a group's heartbeats and the other fetch
# loops share the consumer's trio thread, and a whole answer (a MB per partition, several
# partitions) decoded in one go kept them waiting for seconds under load, long enough for
# the coordinator to count a busy member dead.
SLICE_BYTES = 128 * 1024


def batch_span(data: bytes, offset: int) -> tuple[int, int, list[int]]:
    """(next offset after the whole batches, their highest leader epoch, slice ends): ends of
    the slices to decode, each about SLICE_BYTES of whole batches."""
    next_offset, epoch, cuts, start = offset, -1, [], 0
    end = 0
    for pos, header in iter_batches(data):
        next_offset = header.base_offset + header.last_offset_delta + 1
        epoch = max(epoch, header.partition_leader_epoch)
        end = pos + header.size
        if end - start >= SLICE_BYTES:
            cuts.append(end)
            start = end
    if end > start:
        cuts.append(end)
    return next_offset, epoch, cuts


async def decode_in_slices(data: bytes, cuts: list[int], *, verify_crc: bool,
                           into: tuple | None = None) -> list:
    """decode_records over data[:cuts[-1]], a checkpoint after each slice but the last."""
    if len(cuts) == 1:
        return decode_records(data, verify_crc=verify_crc, skip_control=True, into=into)
    out: list = []
    start = 0
    for i, end in enumerate(cuts):
        out += decode_records(data[start:end], verify_crc=verify_crc, skip_control=True,
                              into=into)
        start = end
        if i + 1 < len(cuts):
            await trio.lowlevel.checkpoint()
    return out
