"""The producer's pure core driven as plain data: batching by size, linger with a fake clock,
drains bounded by max_request_size, per-partition order and in-flight limits, retries, expiry."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clients.producer.accumulator import BATCH_OVERHEAD, RECORD_OVERHEAD, RecordAccumulator


class Result:
    def __init__(self, topic, partition):
        self.topic, self.partition = topic, partition


class Future:
    def __init__(self, result, index, ts):
        self.result, self.index, self.ts = result, index, ts

    def _place(self, result, index):
        self.result, self.index = result, index


class FixedPartitioner:
    def __init__(self):
        self.current = 0
        self.switches = []

    def partition(self, topic, n):
        return self.current % n

    def on_new_batch(self, topic, n, prev):
        self.switches.append(prev)
        self.current = prev + 1


def make(**kw):
    args = dict(
        batch_size=1000,
        linger_ms=5,
        max_request_size=10_000,
        delivery_timeout_ms=1000,
        retry_backoff_ms=100,
        max_in_flight=5,
        partitioner=FixedPartitioner(),
        key_partitioner=lambda key, n: key[0] % n,
        new_result=Result,
        make_future=Future,
    )
    args.update(kw)
    acc = RecordAccumulator(**args)
    acc.set_num_partitions("t", 4)
    return acc


LEADERS = {("t", p): 0 for p in range(4)}
ANY = lambda node: True
VALUE = b"x" * 84  # 100 bytes with RECORD_OVERHEAD


def test_appends_fill_a_batch_up_to_batch_size_then_open_another():
    acc = make(linger_ms=1000)
    per_batch = (1000 - BATCH_OVERHEAD) // (len(VALUE) + RECORD_OVERHEAD)
    wakes = [acc.append("t", 0, None, VALUE, None, 1, now_ms=0)[1] for _ in range(per_batch + 1)]
    assert wakes[0] and not any(wakes[1:per_batch]) and wakes[per_batch]
    d = acc.drain(1, LEADERS.get, ANY)
    assert [len(b.records) for b in d.requests[0]] == [per_batch]  # the open one lingers
    assert d.next_ms == 1000


def test_linger_holds_a_batch_until_it_expires():
    acc = make(linger_ms=5)
    fut, wake = acc.append("t", 1, None, b"v", None, 1, now_ms=100)
    assert wake and fut.index == 0
    d = acc.drain(104, LEADERS.get, ANY)
    assert d.requests == {} and d.next_ms == 105
    d = acc.drain(105, LEADERS.get, ANY)
    assert [b.partition for b in d.requests[0]] == [1]


def test_flush_makes_everything_ready_now():
    acc = make(linger_ms=10_000)
    acc.append("t", 2, None, b"v", None, 1, now_ms=0)
    results, pending = acc.begin_flush()
    assert len(results) == 1 and pending == []
    assert len(acc.drain(0, LEADERS.get, ANY).requests[0]) == 1
    acc.end_flush()


def test_drain_respects_max_request_size_but_sends_at_least_one_batch():
    acc = make(batch_size=500, max_request_size=1200, linger_ms=0)
    for p in range(4):
        for _ in range(4):
            acc.append("t", p, None, VALUE, None, 1, now_ms=0)  # 4 records -> 1 batch of ~461 B
    d = acc.drain(0, LEADERS.get, ANY)
    assert sum(b.size for b in d.requests[0]) <= 1200 and len(d.requests[0]) == 2
    assert d.next_ms == 0  # more is ready
    # Each record fits max_request_size alone (a larger one is refused at send), but a batch
    # of two is over it: it still goes, alone.
    big = make(max_request_size=BATCH_OVERHEAD + len(VALUE) + RECORD_OVERHEAD, linger_ms=0)
    big.append("t", 0, None, VALUE, None, 1, now_ms=0)
    big.append("t", 0, None, VALUE, None, 1, now_ms=0)
    assert len(big.drain(0, LEADERS.get, ANY).requests[0]) == 1


def test_partition_order_and_in_flight_limit():
    acc = make(batch_size=200, linger_ms=0, max_in_flight=1)
    for i in range(3):
        acc.append("t", 0, None, VALUE, None, i, now_ms=0)  # one record per batch
    first = acc.drain(0, LEADERS.get, ANY).requests[0]
    assert [b.records[0][3] for b in first] == [0, 1, 2]
    acc2 = make(batch_size=200, linger_ms=0, max_in_flight=1, max_request_size=200)
    for i in range(3):
        acc2.append("t", 0, None, VALUE, None, i, now_ms=0)
    one = acc2.drain(0, LEADERS.get, ANY).requests[0]
    assert acc2.drain(0, LEADERS.get, ANY).requests == {}  # partition busy: order kept
    acc2.request_done(one)
    acc2.reenqueue(one[0], now_ms=10)  # failed: goes back to the head, after its backoff
    assert acc2.drain(50, LEADERS.get, ANY).requests == {}
    again = acc2.drain(110, LEADERS.get, ANY).requests[0]
    assert [b.records[0][3] for b in again] == [0]


def test_unknown_leader_reports_topic_and_nodes_group_requests():
    acc = make(linger_ms=0)
    acc.append("t", 0, None, b"a", None, 1, now_ms=0)
    acc.append("t", 1, None, b"b", None, 1, now_ms=0)
    d = acc.drain(0, {("t", 0): 7}.get, ANY)
    assert list(d.requests) == [7] and d.unknown == {"t"}
    d = acc.drain(0, {("t", 1): 8}.get, lambda node: node != 8)
    assert d.requests == {}


def test_batches_expire_after_delivery_timeout():
    acc = make(linger_ms=0, delivery_timeout_ms=1000)
    acc.append("t", 0, None, b"a", None, 1, now_ms=0)
    d = acc.drain(1000, {}.get, ANY)
    assert len(d.expired) == 1
    acc.finished(d.expired[0])
    assert acc.buffered_bytes == 0


def test_keys_pick_by_hash_and_sticky_moves_on_with_each_new_batch():
    acc = make(batch_size=300, linger_ms=100)
    f, _ = acc.append("t", None, b"\x03", b"v", None, 1, now_ms=0)
    assert f.result.partition == 3
    parts = [
        acc.append("t", None, None, VALUE, None, 1, now_ms=0)[0].result.partition for _ in range(5)
    ]
    assert parts == [1, 1, 2, 2, 3]  # a new batch moves the sticky partition on


def test_sends_wait_for_metadata_then_are_placed_or_failed():
    acc = make()
    f1, wake = acc.append("new", None, None, b"v", None, 1, now_ms=0)
    f2, _ = acc.append("new", 9, None, b"v", None, 1, now_ms=0)
    assert wake and f1.result is None and acc.pending_topics() == {"new"}
    bad = acc.set_num_partitions("new", 2)
    assert bad == [f2] and f1.result.topic == "new"
    acc.append("gone", None, None, b"v", None, 1, now_ms=0)
    assert acc.fail_pending("gone", now_ms=999) == []
    assert len(acc.fail_pending("gone", now_ms=1000)) == 1


@pytest.mark.parametrize("partition", [-1, 4])
def test_a_partition_that_does_not_exist_is_refused(partition):
    assert make().append("t", partition, None, b"v", None, 1, now_ms=0) == (None, False)


@pytest.mark.parametrize("keys", [None, [bytes([i % 7]) for i in range(60)]])
@pytest.mark.parametrize("partition", [None, 2])
def test_append_many_places_records_as_appends_one_by_one_would(keys, partition):
    values = [b"v" * (i % 90) if i % 11 else None for i in range(60)]
    one, many = make(), make()
    for i, v in enumerate(values):
        one.append("t", partition, None if keys is None else keys[i], v, None, 7, now_ms=0)
    parts, wake = many.append_many("t", partition, keys, values, 7, now_ms=0)
    assert wake
    layout = {tp: [b.records for b in dq] for tp, dq in one._batches.items()}
    assert {tp: [b.records for b in dq] for tp, dq in many._batches.items()} == layout
    assert many.buffered_bytes == one.buffered_bytes
    assert many._partitioner.switches == one._partitioner.switches
    # The parts name each record's batch and index, in the order sent.
    placed = [(p[0], p[1] + i) for p in parts for i in range(p[2])]
    assert len(placed) == len(values)
    by_result = {b.result: b for dq in many._batches.values() for b in dq}
    assert [by_result[r].records[i][1] for r, i in placed] == values


def test_append_many_leaves_unknown_topics_and_partitions_to_the_caller():
    acc = make()
    assert acc.append_many("other", None, None, [b"x"], 1, now_ms=0) == (None, False)
    assert acc.append_many("t", 9, None, [b"x"], 1, now_ms=0) == (None, False)
    assert acc.buffered_bytes == 0


class _NoCache(dict):
    """An accumulator whose fast path never finds a batch: every record goes through _place."""

    def __setitem__(self, key, value) -> None:
        pass


def _layout(acc):
    return {tp: [(b.records, b.closed) for b in dq] for tp, dq in acc._batches.items()}


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(
                st.just("send"),
                st.sampled_from([None, b"\x02"]),
                st.sampled_from([None, None, None, 1]),
                st.integers(0, 400),
                st.sampled_from([None, None, [("h", b"v")]]),
            ),
            st.tuples(st.just("drain"), st.integers(0, 1500)),
            st.just(("abort",)),
        ),
        max_size=60,
    )
)
def test_the_keyless_fast_path_places_records_where_place_would(ops):
    # The same operations on an accumulator with the fast path and one without it: every
    # record lands in the same batch, at the same index, and the same batches are open.
    fast, slow = make(batch_size=600), make(batch_size=600)
    slow._open_sticky = _NoCache()
    now = 0
    for op in ops:
        if op[0] == "send":
            _, key, partition, size, headers = op
            a = fast.append("t", partition, key, b"v" * size, headers, 1, now_ms=now)
            b = slow.append("t", partition, key, b"v" * size, headers, 1, now_ms=now)
            assert (a[0].result.partition, a[0].index, a[1]) == (
                b[0].result.partition,
                b[0].index,
                b[1],
            )
        elif op[0] == "drain":
            now += op[1]  # past delivery_timeout_ms (1000), the open batches expire
            fast.drain(now, LEADERS.get, ANY)
            slow.drain(now, LEADERS.get, ANY)
        else:
            fast.abort_undrained()
            slow.abort_undrained()
        assert _layout(fast) == _layout(slow)
        assert fast.buffered_bytes == slow.buffered_bytes


def test_a_keyless_record_never_joins_an_expired_or_aborted_batch():
    acc = make(linger_ms=1000, delivery_timeout_ms=1000)
    first, _ = acc.append("t", None, None, b"a", None, 1, now_ms=0)
    d = acc.drain(1000, {}.get, ANY)  # no leader known: the open batch just expires
    assert [b.result for b in d.expired] == [first.result]
    second, _ = acc.append("t", None, None, b"b", None, 1, now_ms=1000)
    assert second.result is not first.result
    batches, _ = acc.abort_undrained()
    assert [b.result for b in batches] == [second.result]
    third, _ = acc.append("t", None, None, b"c", None, 1, now_ms=1000)
    assert third.result not in (first.result, second.result)
    assert [b.records for dq in acc._batches.values() for b in dq] == [[(None, b"c", None, 1)]]
