"""The idempotent producer keeps several requests of one partition in flight, and still writes
every record exactly once and in order, against a fake leader that checks sequences as a real
one does, answers requests in random order (delays), refuses some and loses some answers."""

from __future__ import annotations

import pathlib
import random
import sys
import threading
import time

import pytest
import trio

from clients.errors import ErrorCode
from clients.producer import AsyncProducer
from clients.record.batch_header import iter_valid_batches
from clients.wire import broker_pb2 as bp

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402

OUT_OF_ORDER = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class SequencedBroker(FakeBroker):
    """Sequences checked per (partition, producer id) as the real leader does (a producer it
    does not know yet may start anywhere; then only the next sequence, or a duplicate of an
    appended batch, is accepted; an older epoch is fenced); each Produce waits a random 0-15 ms first, so requests of one
    partition overtake each other; counts how many are out at once."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.next_seq: dict[tuple, tuple[int, int]] = {}  # (tp, pid) -> (epoch, next seq)
        self.out = 0
        self.most_out = 0
        self.out_of_order = 0
        self.lock = threading.Lock()

    def Produce(self, req, ctx):
        with self.lock:
            self.out += 1
            self.most_out = max(self.most_out, self.out)
            delay = self.rng.random() * 0.015
        try:
            time.sleep(delay)
            with self.cond:
                verdict = self._check(req)
                if verdict is not None:
                    return verdict
                answer = super().Produce(req, ctx)
                self._advance(req, answer)
                return answer
        finally:
            with self.lock:
                self.out -= 1

    def _headers(self, p):
        return [h for _, h in iter_valid_batches(bytearray(p.records))]

    def _check(self, req):
        (t,) = req.topics
        (p,) = t.partitions
        first = self._headers(p)[0]
        log = self.topics[t.name][p.partition]
        if (first.producer_id, first.producer_epoch, first.base_sequence) in log.sequences:
            return None  # a duplicate: answered by offset
        known = self.next_seq.get(((t.name, p.partition), first.producer_id))
        if known is not None and first.producer_epoch < known[0]:
            return self._refuse(t.name, p.partition, ErrorCode.INVALID_PRODUCER_EPOCH, "fenced")
        if (
            known is None
            or (first.producer_epoch > known[0] and first.base_sequence == 0)
            or known == (first.producer_epoch, first.base_sequence)
        ):
            return None
        self.out_of_order += 1
        return self._refuse(t.name, p.partition, OUT_OF_ORDER, "sequence gap")

    def _refuse(self, topic: str, partition: int, code: int, message: str):
        return bp.ProduceResponse(
            topics=[
                bp.TopicProduceResponse(
                    name=topic,
                    partitions=[
                        bp.PartitionProduceResponse(
                            partition=partition,
                            error_code=code,
                            base_offset=-1,
                            error_message=message,
                        )
                    ],
                )
            ]
        )

    def _advance(self, req, answer):
        (t,) = req.topics
        (p,) = t.partitions
        part = answer.topics[0].partitions[0]
        if part.error_code not in (0, ErrorCode.REQUEST_TIMED_OUT):  # not appended
            return
        last = self._headers(p)[-1]
        key = ((t.name, p.partition), last.producer_id)
        end = last.base_sequence + last.last_offset_delta + 1
        if (
            key not in self.next_seq
            or self.next_seq[key][0] < last.producer_epoch
            or self.next_seq[key][1] < end
        ):
            self.next_seq[key] = (last.producer_epoch, end)


@pytest.fixture(params=[1, 2, 3])
def broker(request):
    b = SequencedBroker(seed=request.param).start()
    yield b
    b.stop()


async def produce(broker, values: list[bytes], faults: dict) -> list:
    """Send `values` to t-0 in small batches, pausing now and then so requests overlap; before
    the record at index i, `faults[i]` is called with the broker to plant a fault."""
    broker.create("t", 1)
    futures = []
    async with AsyncProducer(
        broker.address, acks="all", linger_ms=0, batch_size=120, retry_backoff_ms=5
    ) as p:
        await p.partitions_for("t")
        for i, v in enumerate(values):
            if i in faults:
                faults[i](broker)
            futures.append(await p.send("t", v, partition=0))
            if i % 7 == 0:
                await trio.sleep(0.002)
        await p.flush()
    return futures


def _refused(code):  # the whole next Produce is answered `code`, nothing appended
    return lambda broker: broker.produce_errors.append(code)


def _lost(broker):  # the next partition appended is answered REQUEST_TIMED_OUT
    broker.lost_answers.append(ErrorCode.REQUEST_TIMED_OUT)


async def test_several_requests_in_flight_keep_order_and_exactly_once(broker):
    values = [b"v%04d" % i for i in range(600)]
    not_leader = _refused(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    futures = await produce(
        broker, values, {150: not_leader, 250: _lost, 400: not_leader, 500: _lost}
    )
    offsets = [f.result(0).offset for f in futures]
    stored = broker.records("t", 0)
    assert [r.value for r in stored] == values  # once each, in the order sent
    assert offsets == list(range(len(values)))
    assert broker.most_out > 1  # requests did overlap


async def test_a_batch_refused_for_good_with_later_ones_out_bumps_the_epoch_losing_nothing_else(
    broker,
):
    values = [b"v%04d" % i for i in range(400)]
    futures = await produce(broker, values, {200: _refused(ErrorCode.INVALID_RECORD)})
    failed = [i for i, f in enumerate(futures) if f.exception(0) is not None]
    assert failed and all(
        f.exception(0).code == ErrorCode.INVALID_RECORD for f in futures if f.exception(0)
    )
    kept = [v for i, v in enumerate(values) if i not in failed]
    assert [r.value for r in broker.records("t", 0)] == kept  # the rest once each, in order
    assert [f.result(0).offset for f in futures if not f.exception(0)] == list(range(len(kept)))
