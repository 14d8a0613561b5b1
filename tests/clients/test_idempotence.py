"""The producer's idempotence core as plain data: sequences per partition from the first drain,
kept on retries, restarted under a bumped epoch, given back by a batch the leader refused, wrapping;
several requests per partition once the leader knows the epoch, and what an out-of-order answer means."""

from __future__ import annotations

from clients.errors import ErrorCode
from clients.producer.accumulator import ProducerBatch
from clients.producer.idempotence import NEEDS_BUMP, NEEDS_ID, SEQUENCE_LIMIT, IdempotenceManager


def batch(partition: int, n: int) -> ProducerBatch:
    b = ProducerBatch("t", partition, None, 0, 0)
    b.records = [(None, b"v", (), 0)] * n
    return b


def ready(pid: int = 5, epoch: int = 0) -> IdempotenceManager:
    m = IdempotenceManager()
    assert not m.ready and m.init_request() == (None, None)
    m.set_producer(pid, epoch)
    return m


def test_sequences_count_records_per_partition_and_retries_keep_theirs():
    m = ready()
    a, b, c = batch(0, 3), batch(1, 2), batch(0, 4)
    assert m.stamp(a) and m.stamp(b) and m.stamp(c)
    assert [(x.producer_id, x.producer_epoch, x.base_sequence) for x in (a, b, c)] == [
        (5, 0, 0),
        (5, 0, 0),
        (5, 0, 3),
    ]
    assert not m.stamp(a)  # a retry: same sequence, same bytes
    assert m.next_sequence(("t", 0)) == 7 and m.next_sequence(("t", 1)) == 2


def test_unknown_fate_bumps_the_epoch_and_waiting_batches_are_stamped_again():
    m = ready()
    a, waiting = batch(0, 3), batch(0, 2)
    m.stamp(a)
    m.stamp(waiting)
    m.on_failed(a, None)
    assert m.state == NEEDS_BUMP and m.init_request() == (5, 0)
    m.set_producer(5, 1)
    assert m.stamp(waiting) and (waiting.producer_epoch, waiting.base_sequence) == (1, 0)


def test_sequence_errors_bump_and_a_fenced_epoch_asks_for_a_new_id():
    for code, state in [
        (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, NEEDS_BUMP),
        (ErrorCode.UNKNOWN_PRODUCER_ID, NEEDS_BUMP),
        (ErrorCode.REQUEST_TIMED_OUT, NEEDS_BUMP),
        (ErrorCode.INVALID_PRODUCER_EPOCH, NEEDS_ID),
    ]:
        m = ready()
        a = batch(0, 1)
        m.stamp(a)
        m.on_failed(a, code)
        assert m.state == state, code
    assert m.init_request() == (None, None)


def test_a_refused_request_gives_its_sequences_back():
    m = ready()
    first, a, b = batch(0, 2), batch(0, 3), batch(0, 4)
    for x in (first, a, b):
        m.stamp(x)
    m.on_succeeded(first)
    m.on_failed(a, ErrorCode.MESSAGE_TOO_LARGE, (a, b))  # one request: they fail in order
    m.on_failed(b, ErrorCode.MESSAGE_TOO_LARGE, (a, b))
    assert m.ready and m.next_sequence(("t", 0)) == 2
    m.on_failed(batch(0, 1), ErrorCode.MESSAGE_TOO_LARGE)  # never stamped: nothing to give back
    assert m.next_sequence(("t", 0)) == 2


def test_sequences_wrap_after_2_31_minus_1():
    m = ready()
    m._next[("t", 0)] = SEQUENCE_LIMIT - 2
    a, b = batch(0, 5), batch(0, 1)
    m.stamp(a)
    m.stamp(b)
    assert (a.base_sequence, b.base_sequence) == (SEQUENCE_LIMIT - 2, 3)
    m.on_failed(b, ErrorCode.INVALID_RECORD)
    m.on_failed(a, ErrorCode.INVALID_RECORD)
    assert m.next_sequence(("t", 0)) == SEQUENCE_LIMIT - 2


def test_a_refusal_after_an_unknown_attempt_keeps_the_sequences_and_bumps():
    # Chaos found this shape: attempt 1 times out (the old leader may have appended it), the
    # retry is refused by the new leader. Giving seq 0 back would let the next batch reuse it and
    # be answered "duplicate" at the first batch's offset: a lost write reported as written.
    m = ready()
    a, nxt = batch(0, 1), batch(0, 1)
    m.stamp(a)
    m.on_attempt_failed(a, None)  # the answer never came
    m.on_attempt_failed(a, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    m.on_failed(a, ErrorCode.NOT_LEADER_OR_FOLLOWER)  # out of time: failed for good
    assert m.next_sequence(("t", 0)) == 1 and m.state == NEEDS_BUMP
    m.set_producer(5, 1)
    m.stamp(nxt)
    assert (nxt.producer_epoch, nxt.base_sequence) == (1, 0)


def test_a_batch_of_unknown_fate_keeps_its_stamp_across_a_bump():
    m = ready()
    unknown, waiting = batch(0, 2), batch(0, 3)
    m.stamp(unknown)
    m.stamp(waiting)
    m.on_attempt_failed(unknown, ErrorCode.REQUEST_TIMED_OUT)  # retried later
    other = batch(1, 1)
    m.stamp(other)
    m.on_failed(other, None)  # another batch forces a bump
    assert m.init_request() == (5, 0)
    m.set_producer(5, 1)
    assert not m.stamp(unknown)  # resent as it was: answered as a duplicate or fenced
    assert (unknown.producer_epoch, unknown.base_sequence) == (0, 0)
    assert m.stamp(waiting) and (waiting.producer_epoch, waiting.base_sequence) == (1, 0)
    m.on_failed(unknown, ErrorCode.INVALID_PRODUCER_EPOCH)  # its old epoch is fenced now
    assert m.ready and m.epoch == 1  # which says nothing about ours


def created(partition: int, n: int, seq: int) -> ProducerBatch:
    b = batch(partition, n)
    b.seq = seq
    return b


def test_several_requests_per_partition_only_after_an_acknowledgement_under_the_epoch():
    m = ready()
    a, b = created(0, 1, 1), created(0, 1, 2)
    m.stamp(a)
    assert not m.pipelined(("t", 0))  # the leader may not know the producer yet
    m.on_succeeded(a)
    assert m.pipelined(("t", 0)) and not m.pipelined(("t", 1))
    m.stamp(b)
    m.on_failed(b, None)
    m.set_producer(5, 1)  # a new epoch: the first batch goes alone again
    assert not m.pipelined(("t", 0))


def test_out_of_order_behind_an_unresolved_batch_is_retried_else_it_is_a_gap():
    m = ready()
    a, b = created(0, 2, 1), created(0, 3, 2)
    for x in (a, b):
        m.stamp(x)
        m.note_sent(x)
    assert m.retry_out_of_order(b)  # a was still out: b may have arrived first
    assert not m.retry_out_of_order(a)  # nothing before a: a real gap
    m.on_succeeded(a)
    assert m.retry_out_of_order(b)  # a landed since, but maybe after b
    m.note_sent(b)  # resent with nothing before it
    assert not m.retry_out_of_order(b)


def test_a_refused_batch_with_later_ones_out_bumps_the_epoch_and_they_are_restamped():
    m = ready()
    a, b = created(0, 2, 1), created(0, 3, 2)
    for x in (a, b):  # two requests, out at the same time
        m.stamp(x)
        m.note_sent(x)
    m.on_failed(a, ErrorCode.MESSAGE_TOO_LARGE, (a,))
    assert m.state == NEEDS_BUMP  # b carries sequence 2: giving 0 back would gap
    b.sent_behind = False
    assert m.retry_out_of_order(b)  # its answer: resend it under the new epoch
    m.set_producer(5, 1)
    assert m.stamp(b) and (b.producer_epoch, b.base_sequence) == (1, 0)
