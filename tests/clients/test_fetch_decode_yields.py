"""A big fetch answer is decoded in slices with a checkpoint between them, so the consumer's other
trio tasks (the group's heartbeats above all) run while a backlog streams in; the records are
the same as one decode of the whole answer."""
from __future__ import annotations

import trio

from clients.consumer.fetch_decode import SLICE_BYTES, batch_span, decode_in_slices
from clients.record.codec import decode_records, encode_batch


def answer(batches: int, per_batch: int = 700, offset: int = 0) -> bytes:
    return b"".join(encode_batch([(None, b"%d" % i, (), 1000 + i) for i in range(per_batch)],
                                 base_offset=offset + b * per_batch) for b in range(batches))


async def test_a_large_answer_lets_other_tasks_run_between_slices():
    data = answer(80)                       # ~650 KB of small records, 56,000 of them
    next_offset, epoch, cuts = batch_span(data, 0)
    assert next_offset == 56_000 and len(cuts) >= len(data) // SLICE_BYTES
    events: list = []

    async def ticker():
        while True:
            events.append("tick")
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        await trio.lowlevel.checkpoint()
        events.append("decode starts")
        records = await decode_in_slices(data, cuts, verify_crc=True)
        events.append("decode ends")
        nursery.cancel_scope.cancel()
    during = events[events.index("decode starts"):events.index("decode ends")]
    # trio orders each batch of runnable tasks at random, so a tick may fall before the decode's
    # first slice or two slices may run back to back: many ticks, not exactly one per slice.
    assert during.count("tick") >= (len(cuts) - 1) // 2
    assert records == decode_records(data, skip_control=True)


async def test_a_small_answer_is_one_decode_and_a_partial_tail_is_left_out():
    data = answer(3, per_batch=10, offset=40)
    cut_short = data + answer(1, per_batch=10, offset=70)[:-5]
    next_offset, _epoch, cuts = batch_span(cut_short, 40)
    assert (next_offset, cuts) == (70, [len(data)])
    records = await decode_in_slices(cut_short, cuts, verify_crc=True)
    assert [r[0] for r in records] == list(range(40, 70))
