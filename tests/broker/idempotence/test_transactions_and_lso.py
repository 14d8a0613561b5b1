"""Transactions in the producer state (pure core): a transactional batch opens its producer's
transaction at its first offset, a COMMIT/ABORT marker closes it, stale markers are fenced, and
the last stable offset is min(first offset of every undecided transaction, high watermark), a
decided one counting until the high watermark passes its marker. The snapshot keeps the open
transactions, so a restart knows them."""

from __future__ import annotations

import random

import pytest

from broker.idempotence.producer_state import CompletedTxn, ProducerStateManager
from broker.idempotence.producer_state_file import decode_snapshot, encode_snapshot
from clients.errors import ErrorCode
from clients.record.batch_header import CONTROL_FLAG, TRANSACTIONAL_FLAG, BatchHeader
from clients.record.control import EndTxnMarker

COMMIT, ABORT = EndTxnMarker(True, 0), EndTxnMarker(False, 0)


def header(pid, offset, n=1, seq=0, epoch=0, txn=True, control=False):
    attrs = (TRANSACTIONAL_FLAG if txn else 0) | (CONTROL_FLAG if control else 0)
    return BatchHeader(
        offset, 0, 0, 2, 0, attrs, n - 1, 0, 0, pid, epoch, -1 if control else seq, n
    )


def replay(state, events):
    """events: ("data", pid, offset, n, seq) | ("commit"/"abort", pid, offset)."""
    done = []
    for kind, pid, offset, *rest in events:
        if kind == "data":
            n, seq = rest
            done += state.on_replicated_batches([header(pid, offset, n, seq)])
        else:
            marker = COMMIT if kind == "commit" else ABORT
            done += state.on_replicated_batches(
                [header(pid, offset, control=True)], lambda h, m=marker: m
            )
    return done


# (events, high watermark, expected LSO)
LSO_TABLE = [
    ([], 0, 0),
    ([("data", 1, 0, 2, 0)], 2, 0),  # open: held at its start
    ([("data", 1, 0, 2, 0), ("commit", 1, 2)], 2, 0),  # marker above the HW
    ([("data", 1, 0, 2, 0), ("commit", 1, 2)], 3, 3),  # marker committed
    ([("data", 1, 0, 2, 0), ("data", 2, 2, 1, 0)], 3, 0),  # two open: the earliest
    ([("data", 1, 0, 2, 0), ("data", 2, 2, 1, 0), ("abort", 1, 3)], 4, 2),
    ([("data", 1, 0, 2, 0), ("data", 1, 2, 1, 2)], 3, 0),  # continues, same start
    ([("data", 1, 0, 1, 0), ("abort", 1, 1), ("data", 1, 2, 1, 1)], 3, 2),  # a new one
]


@pytest.mark.parametrize("events,hw,lso", LSO_TABLE)
def test_last_stable_offset(events, hw, lso):
    state = ProducerStateManager("t-0")
    replay(state, events)
    assert state.last_stable_offset(hw) == lso


def test_markers_close_transactions_and_say_what_the_txnindex_needs():
    state = ProducerStateManager("t-0")
    done = replay(
        state,
        [
            ("data", 1, 0, 2, 0),
            ("data", 2, 2, 1, 0),
            ("abort", 1, 3),
            ("commit", 2, 4),
            ("commit", 2, 5),
        ],
    )  # the last: a retried marker
    # lastStableOffset of the abort: producer 2's transaction (from 2) was still open.
    assert done == [CompletedTxn(1, 0, 3, True, 2), CompletedTxn(2, 2, 4, False, 5)]
    assert state.ongoing == {}


@pytest.mark.parametrize(
    "entry_epoch,entry_coord,marker_epoch,marker_coord,expected",
    [
        (3, 5, 3, 5, ErrorCode.NONE),
        (3, 5, 4, 5, ErrorCode.NONE),  # a bumped epoch (an abort after a timeout)
        (3, 5, 2, 5, ErrorCode.INVALID_PRODUCER_EPOCH),
        (3, 5, 3, 4, ErrorCode.TRANSACTION_COORDINATOR_FENCED),
    ],
)
def test_stale_markers_are_fenced(entry_epoch, entry_coord, marker_epoch, marker_coord, expected):
    state = ProducerStateManager("t-0")
    state.on_replicated_batches([header(7, 0, epoch=entry_epoch)])
    state.on_replicated_batches(
        [header(7, 1, epoch=entry_epoch, control=True)], lambda h: EndTxnMarker(True, entry_coord)
    )
    assert state.check_marker(7, marker_epoch, marker_coord).error_code == expected
    assert state.check_marker(8, 0, 0).error_code == ErrorCode.NONE  # unknown producer


def test_the_epoch_a_marker_bumped_starts_at_sequence_zero():
    """A coordinator that aborts a timed-out transaction writes its marker at the next epoch;
    that epoch's first batch must start at 0, as any new epoch's (Kafka: inSequence(-1, seq))."""
    state = ProducerStateManager("t-0")
    state.on_replicated_batches([header(7, 0, n=3, seq=0, epoch=3)])
    state.on_replicated_batches(
        [header(7, 3, epoch=4, control=True)], lambda h: EndTxnMarker(False, 0)
    )
    [decision] = state.check_batches([header(7, 0, seq=3, epoch=4)], 4)
    assert decision.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "must start at 0" in decision.message
    [decision] = state.check_batches([header(7, 0, seq=0, epoch=4)], 4)
    assert decision.is_append
    # A marker at the producer's own epoch keeps its sequences: the next batch continues them.
    state.on_replicated_batches(
        [header(8, 5, n=2, seq=0, epoch=1), header(8, 7, epoch=1, control=True)],
        lambda h: EndTxnMarker(True, 0),
    )
    [decision] = state.check_batches([header(8, 0, seq=2, epoch=1)], 8)
    assert decision.is_append


def test_a_plain_batch_inside_an_open_transaction_is_refused():
    state = ProducerStateManager("t-0")
    state.on_replicated_batches([header(1, 0, n=2, seq=0)])
    [decision] = state.check_batches([header(1, 0, seq=2, txn=False)], 2)
    assert decision.error_code == ErrorCode.INVALID_TXN_STATE
    [decision] = state.check_batches([header(1, 0, seq=2, txn=True)], 2)
    assert decision.is_append


def test_a_producer_with_an_open_transaction_does_not_expire():
    state = ProducerStateManager("t-0")
    replay(state, [("data", 1, 0, 1, 0), ("data", 2, 1, 1, 0), ("commit", 2, 2)])
    assert state.remove_expired_producers(now_ms=10**12, expiration_ms=1) == [2]
    assert state.ongoing == {1: 0}


def test_the_snapshot_keeps_open_transactions_and_coordinator_epochs():
    state = ProducerStateManager("t-0")
    replay(state, [("data", 1, 0, 2, 0), ("data", 2, 2, 1, 0)])
    state.on_replicated_batches([header(2, 3, control=True)], lambda h: EndTxnMarker(False, 9))
    state.on_replicated_batches(
        [header(3, 4, epoch=2, control=True)], lambda h: EndTxnMarker(True, 4)
    )  # known by a marker only
    again = ProducerStateManager("t-0")
    again.load(decode_snapshot(encode_snapshot(state.entries())), state.end_offset)
    # What matters of each producer survives; a marker's time is folded into the last
    # batch's (Kafka's row has one timestamp), so the entries compare by it.
    for pid, entry in state.producers.items():
        got = again.entry(pid)
        assert (
            got.epoch,
            got.batches[-1:] and got.batches[-1][:4],
            got.last_timestamp,
            got.current_txn_first_offset,
            got.coordinator_epoch,
        ) == (
            entry.epoch,
            entry.batches[-1:] and entry.batches[-1][:4],
            entry.last_timestamp,
            entry.current_txn_first_offset,
            entry.coordinator_epoch,
        )
    assert again.ongoing == {1: 0}
    assert again.last_stable_offset(10) == 0
    assert again.entry(2).coordinator_epoch == 9 and again.entry(3).epoch == 2


@pytest.mark.parametrize("seed", range(30))
def test_lso_matches_a_brute_force_model(seed):
    """Random interleavings of three transactional producers, plain batches and a rising high
    watermark: after every event the LSO is the model's, min(first offset of every transaction
    not decided by a marker below the HW, HW); a snapshot taken anywhere knows the open ones."""
    rng = random.Random(seed)
    state = ProducerStateManager("t-0")
    txns: list[list] = []  # [pid, first offset, marker offset or None]
    open_: dict[int, list] = {}
    seqs = {1: 0, 2: 0, 3: 0}
    offset = hw = 0
    for _ in range(200):
        pid = rng.choice([1, 2, 3, 0])
        if pid == 0:  # a plain batch
            state.on_replicated_batches([header(9, offset, txn=False, seq=offset)])
        elif pid in open_ and rng.random() < 0.4:
            committed = rng.random() < 0.5
            state.on_replicated_batches(
                [header(pid, offset, control=True)], lambda h: COMMIT if committed else ABORT
            )
            open_.pop(pid)[2] = offset
        else:
            state.on_replicated_batches([header(pid, offset, seq=seqs[pid])])
            seqs[pid] += 1
            if pid not in open_:
                open_[pid] = [pid, offset, None]
                txns.append(open_[pid])
        offset += 1
        hw = rng.randint(hw, offset)
        model = min([t[1] for t in txns if t[2] is None or t[2] >= hw] + [hw])
        assert state.last_stable_offset(hw) == model, f"seed {seed}"
        if rng.random() < 0.1:
            again = ProducerStateManager("t-0")
            again.load(decode_snapshot(encode_snapshot(state.entries())), state.end_offset)
            assert again.ongoing == {pid: t[1] for pid, t in open_.items()}, f"seed {seed}"
