"""Each transition of the transaction coordinator core and each error, as Kafka's
TransactionCoordinator has them: init, add, end, markers, fencing, timeouts and expiry."""

import pytest
from txn_harness import TP, E, Harness

from broker.transaction.messages import (
    AddPartitionsResponse,
    EndTxnRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TransactionConfig,
    TxnResponse,
)
from broker.transaction.metadata import MAX_PRODUCER_EPOCH
from broker.transaction.partition_coordinator import TransactionCoordinator
from broker.transaction.records import TransactionLogValue, decode_record


def started(h: Harness, *tps, txn_id="tx"):
    """An id with an Ongoing transaction over `tps`: (producer id, epoch)."""
    r = h.init(txn_id)
    assert r.error == E.NONE
    assert h.add(r.producer_id, r.producer_epoch, *tps, txn_id=txn_id).error == E.NONE
    return r.producer_id, r.producer_epoch


# -- InitProducerId -------------------------------------------------------------------------------
def test_a_new_id_gets_a_fresh_producer_id_at_epoch_0_written_as_empty():
    h = Harness()
    assert h.init() == InitProducerIdResponse(E.NONE, 1000, 0)
    assert h.state() == "Empty"
    assert decode_record(*h.log[-1]) == (
        "tx",
        TransactionLogValue(1000, 0, 60_000, "Empty", frozenset(), h.now, -1),
    )


def test_init_again_bumps_the_epoch_and_keeps_the_producer_id():
    h = Harness()
    h.init()
    assert h.init() == InitProducerIdResponse(E.NONE, 1000, 1)


@pytest.mark.parametrize(
    "given_epoch, expect",
    [
        (1, InitProducerIdResponse(E.NONE, 1000, 2)),  # the current epoch: bump
        (0, InitProducerIdResponse(E.NONE, 1000, 1)),  # the last epoch: a retry, no bump
    ],
)
def test_kip360_init_with_the_current_or_last_epoch(given_epoch, expect):
    h = Harness()
    h.init()
    h.init(pid=1000, epoch=0)  # epoch 1, last epoch 0
    assert h.init(pid=1000, epoch=given_epoch) == expect


def test_kip360_init_with_an_unknown_epoch_or_producer_is_fenced():
    h = Harness()
    h.init()
    h.init(pid=1000, epoch=0)
    assert h.init(pid=1000, epoch=7).error == E.PRODUCER_FENCED
    assert h.init(pid=55, epoch=1).error == E.PRODUCER_FENCED


def test_an_exhausted_epoch_rotates_the_producer_id():
    h = Harness()
    h.init()
    h.core.metadata("tx").producer_epoch = MAX_PRODUCER_EPOCH - 1
    assert h.init() == InitProducerIdResponse(E.NONE, 1001, 0)


@pytest.mark.parametrize("timeout", [0, -5, 900_001])
def test_a_timeout_out_of_range_is_refused_naming_the_limit(timeout):
    h = Harness()
    r = h.init(timeout_ms=timeout)
    assert r.error == E.INVALID_TRANSACTION_TIMEOUT and "transaction.max.timeout.ms" in r.message
    assert h.state() is None


def test_an_empty_transactional_id_is_invalid():
    assert Harness().init(txn_id="").error == E.INVALID_REQUEST


def test_init_of_a_new_id_without_a_producer_id_asks_for_a_retry():
    h = Harness()
    req = InitProducerIdRequest("tx", 60_000)
    assert (
        h.ask(lambda hd: h.core.handle_init_producer_id(hd, req, h.now)).error
        == E.CONCURRENT_TRANSACTIONS
    )


def test_init_during_an_ongoing_transaction_fences_and_aborts_it_first():
    h = Harness()
    pid, epoch = started(h, TP("t", 0), TP("t", 1))
    assert h.init().error == E.CONCURRENT_TRANSACTIONS
    assert h.state() == "PrepareAbort"
    (marker,) = h.markers
    assert (marker.committed, marker.producer_epoch, marker.partitions) == (
        False,
        epoch + 1,
        frozenset({TP("t", 0), TP("t", 1)}),
    )
    # The old instance is fenced from here on: it can neither add nor commit.
    assert h.end(pid, epoch).error == E.PRODUCER_FENCED
    assert h.add(pid, epoch).error == E.PRODUCER_FENCED
    assert h.init().error == E.CONCURRENT_TRANSACTIONS  # markers still being written
    h.write_markers()
    assert h.state() == "CompleteAbort"
    assert h.init() == InitProducerIdResponse(E.NONE, pid, epoch + 2)


def test_init_while_a_record_is_being_appended_is_concurrent():
    h = Harness()
    h.init()
    h.auto_commit = False
    h.init()
    assert h.init().error == E.CONCURRENT_TRANSACTIONS


# -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------------
def test_add_partitions_starts_the_transaction_and_adds_more():
    h = Harness()
    r = h.init()
    h.now = 5_000
    assert h.add(1000, 0, TP("a", 0)) == AddPartitionsResponse(E.NONE, ((TP("a", 0), E.NONE),))
    h.now = 6_000
    h.add(1000, 0, TP("b", 1))
    meta = h.core.metadata("tx")
    assert (meta.state, meta.partitions, meta.txn_start_ms) == (
        "Ongoing",
        frozenset({TP("a", 0), TP("b", 1)}),
        5_000,
    )
    appended = len(h.log)
    assert h.add(r.producer_id, r.producer_epoch, TP("a", 0)).error == E.NONE
    assert len(h.log) == appended  # already in: nothing written


def test_add_offsets_adds_the_groups_offsets_partition():
    h = Harness()
    h.init()
    assert h.add_offsets(1000, 0, partition=7) == TxnResponse(E.NONE)
    assert h.core.metadata("tx").partitions == {TP("__consumer_offsets", 7)}


@pytest.mark.parametrize(
    "pid, epoch, error",
    [
        (999, 0, E.INVALID_PRODUCER_ID_MAPPING),
        (1000, 1, E.PRODUCER_FENCED),
    ],
)
def test_add_with_a_wrong_producer_is_refused_per_partition(pid, epoch, error):
    h = Harness()
    h.init()
    r = h.add(pid, epoch, TP("a", 0), TP("a", 1))
    assert r.error == error and dict(r.partitions) == {TP("a", 0): error, TP("a", 1): error}
    assert h.add(1000, 0, txn_id="unknown").error == E.INVALID_PRODUCER_ID_MAPPING


def test_add_while_markers_are_being_written_is_concurrent():
    h = Harness()
    pid, epoch = started(h)
    h.end(pid, epoch)
    assert h.add(pid, epoch).error == E.CONCURRENT_TRANSACTIONS
    assert h.add_offsets(pid, epoch).error == E.CONCURRENT_TRANSACTIONS
    h.write_markers()
    assert h.add(pid, epoch).error == E.NONE  # the next transaction
    assert h.state() == "Ongoing"


def test_verify_only_answers_per_partition_and_adds_nothing():
    h = Harness()
    pid, epoch = started(h, TP("a", 0))
    r = h.add(pid, epoch, TP("a", 0), TP("a", 1), verify_only=True)
    assert dict(r.partitions) == {TP("a", 0): E.NONE, TP("a", 1): E.INVALID_TXN_STATE}
    assert h.core.metadata("tx").partitions == {TP("a", 0)}


# -- EndTxn ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "committed, prepare, complete",
    [(True, "PrepareCommit", "CompleteCommit"), (False, "PrepareAbort", "CompleteAbort")],
)
def test_end_prepares_answers_sends_markers_then_completes(committed, prepare, complete):
    h = Harness()
    pid, epoch = started(h, TP("a", 0), TP("b", 0))
    assert h.end(pid, epoch, committed) == TxnResponse(E.NONE)
    assert h.state() == prepare
    (marker,) = h.markers
    assert (marker.committed, marker.coordinator_epoch, marker.partitions) == (
        committed,
        3,
        frozenset({TP("a", 0), TP("b", 0)}),
    )
    h.write_markers()
    meta = h.core.metadata("tx")
    assert (meta.state, meta.partitions) == (complete, frozenset())
    assert decode_record(*h.log[-1])[1].state == complete


def test_a_retried_commit_of_a_completed_commit_succeeds_and_writes_nothing():
    h = Harness()
    pid, epoch = started(h)
    h.end(pid, epoch)
    h.write_markers()
    appended = len(h.log)
    assert h.end(pid, epoch) == TxnResponse(E.NONE)
    assert len(h.log) == appended and not h.markers


@pytest.mark.parametrize(
    "first, second, error",
    [
        (True, False, E.INVALID_TXN_STATE),  # abort after a commit
        (False, True, E.INVALID_TXN_STATE),
    ],
)
def test_ending_a_completed_transaction_the_other_way_is_invalid(first, second, error):
    h = Harness()
    pid, epoch = started(h)
    h.end(pid, epoch, first)
    h.write_markers()
    assert h.end(pid, epoch, second).error == error


def test_end_while_prepared_is_concurrent_the_same_way_and_invalid_the_other():
    h = Harness()
    pid, epoch = started(h)
    h.end(pid, epoch, True)
    assert h.end(pid, epoch, True).error == E.CONCURRENT_TRANSACTIONS
    assert h.end(pid, epoch, False).error == E.INVALID_TXN_STATE


def test_end_with_no_transaction_is_invalid():
    h = Harness()
    h.init()
    assert h.end(1000, 0).error == E.INVALID_TXN_STATE


def test_end_by_a_fenced_or_unknown_producer():
    h = Harness()
    pid, epoch = started(h)
    assert h.end(pid, epoch - 1).error == E.PRODUCER_FENCED
    assert h.end(pid + 1, epoch).error == E.INVALID_PRODUCER_ID_MAPPING


# -- appends that fail ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "append_error, answered",
    [
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
        (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
        (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
    ],
)
def test_a_failed_append_answers_kafkas_error_and_changes_nothing(append_error, answered):
    h = Harness()
    pid, epoch = started(h)
    h.auto_commit = False
    h.handles += 1
    h.run(h.core.handle_end_txn(h.handles, EndTxnRequest("tx", pid, epoch, True), h.now))
    h.commit_all(append_error)
    assert h.answers[h.handles].error == answered
    assert h.state() == "Ongoing" and not h.markers


def test_a_new_id_whose_first_record_fails_is_forgotten():
    h = Harness()
    h.auto_commit = False
    h.handles += 1
    h.run(h.core.handle_init_producer_id(h.handles, InitProducerIdRequest("tx", 60_000), h.now, 5))
    h.commit_all(E.NOT_LEADER_OR_FOLLOWER)
    assert h.answers[h.handles].error == E.NOT_COORDINATOR
    assert h.state() is None


def test_a_failed_complete_record_is_written_again_after_the_backoff():
    h = Harness()
    pid, epoch = started(h)
    h.end(pid, epoch)
    h.auto_commit = False
    h.write_markers()
    h.commit_all(E.NOT_ENOUGH_REPLICAS)
    assert h.state() == "PrepareCommit"
    assert h.core.next_deadline_ms() == h.now + 100
    h.auto_commit = True
    h.tick(100)
    assert h.state() == "CompleteCommit"


# -- timers ---------------------------------------------------------------------------------------
def test_a_timed_out_transaction_is_aborted_with_a_bumped_epoch():
    h = Harness(TransactionConfig(abort_timed_out_cleanup_interval_ms=1_000))
    r = h.init(timeout_ms=5_000)
    h.add(r.producer_id, r.producer_epoch)
    h.tick(4_000)
    assert h.state() == "Ongoing"
    h.tick(1_000)
    assert h.state() == "PrepareAbort"
    (marker,) = h.markers
    assert (marker.committed, marker.producer_epoch) == (False, r.producer_epoch + 1)
    assert h.end(r.producer_id, r.producer_epoch).error == E.PRODUCER_FENCED
    h.write_markers()
    assert h.state() == "CompleteAbort"


def test_an_idle_id_expires_with_a_tombstone():
    h = Harness(
        TransactionConfig(
            transactional_id_expiration_ms=60_000, abort_timed_out_cleanup_interval_ms=10_000
        )
    )
    h.init()
    h.tick(50_000)
    assert h.state() == "Empty"
    h.tick(10_000)
    assert h.state() is None and h.log[-1] == (h.log[-1][0], None)
    assert h.init().producer_id == 1001  # a new life: a new producer id


def test_an_ongoing_transaction_does_not_expire():
    h = Harness(TransactionConfig(transactional_id_expiration_ms=1_000, max_timeout_ms=10**8))
    started_ = h.init(timeout_ms=10**8)
    h.add(started_.producer_id, started_.producer_epoch)
    h.tick(10_000)
    assert h.state() == "Ongoing"


# -- leadership -----------------------------------------------------------------------------------
def test_a_new_coordinator_replays_the_log_and_resends_markers_of_decided_transactions():
    h = Harness()
    pid, epoch = started(h, TP("a", 0))
    h.end(pid, epoch)  # PrepareCommit written, markers not yet
    fresh = TransactionCoordinator(0)
    for key, value in h.log:
        fresh.replay(key, value)
    assert fresh.list_transactions() == (E.COORDINATOR_LOAD_IN_PROGRESS, ())
    (marker,) = fresh.become_coordinator(9, h.now)
    assert (marker.committed, marker.coordinator_epoch, marker.partitions) == (
        True,
        9,
        frozenset({TP("a", 0)}),
    )
    assert fresh.describe("tx").state == "PrepareCommit"


def test_resign_answers_parked_requests_not_coordinator():
    h = Harness()
    pid, epoch = started(h)
    h.auto_commit = False
    h.end(pid, epoch)
    h.run(h.core.resign())
    assert h.answers[h.handles] == TxnResponse(E.NOT_COORDINATOR)
    assert h.end(pid, epoch).error == E.NOT_COORDINATOR


def test_describe_and_list():
    h = Harness()
    pid, epoch = started(h, TP("a", 0))
    h.init(txn_id="other")
    d = h.core.describe("tx")
    assert (d.state, d.producer_id, d.partitions, d.txn_start_ms) == (
        "Ongoing",
        pid,
        (TP("a", 0),),
        h.now,
    )
    assert h.core.describe("nope").error == E.TRANSACTIONAL_ID_NOT_FOUND
    assert h.core.list_transactions(frozenset({"Ongoing"})) == (E.NONE, (("tx", pid, "Ongoing"),))
    assert h.core.list_transactions(producer_ids=frozenset({1001})) == (
        E.NONE,
        (("other", 1001, "Empty"),),
    )
