"""The transactional producer's core (clients/producer/transaction.py) as tables: which calls each
state allows and where they lead, what errors do to a transaction (a failed batch makes it
abortable-only, a fenced producer is fatal), and the partitions added before their batches."""

import pytest

from clients.errors import ErrorCode as E
from clients.errors import KraftError
from clients.producer.transaction import (
    ABORTABLE,
    ABORTABLE_ERROR,
    ABORTING,
    COMMITTING,
    COORDINATOR_MOVED,
    FATAL,
    FATAL_ERROR,
    IN_TRANSACTION,
    INITIALIZING,
    READY,
    RETRY,
    UNINITIALIZED,
    TransactionManager,
    error_kind,
)

ALL = (
    UNINITIALIZED,
    INITIALIZING,
    READY,
    IN_TRANSACTION,
    COMMITTING,
    ABORTING,
    ABORTABLE_ERROR,
    FATAL_ERROR,
)

# call -> {state it is allowed in: state after}; every other state refuses the call.
CALLS = {
    "begin_init": {UNINITIALIZED: INITIALIZING, INITIALIZING: INITIALIZING},
    "initialized": {INITIALIZING: READY},
    "begin_transaction": {READY: IN_TRANSACTION},
    "begin_commit": {IN_TRANSACTION: COMMITTING, COMMITTING: COMMITTING},
    "begin_abort": {IN_TRANSACTION: ABORTING, ABORTABLE_ERROR: ABORTING, ABORTING: ABORTING},
    "completed": {COMMITTING: READY, ABORTING: READY},
    "reinitialize": {ABORTING: INITIALIZING},
}


def manager(state: str) -> TransactionManager:
    t = TransactionManager("app-1", 60_000)
    t.state = state
    if state in (ABORTABLE_ERROR, FATAL_ERROR):
        t.error = KraftError(
            E.PRODUCER_FENCED if state == FATAL_ERROR else E.NOT_ENOUGH_REPLICAS, "why"
        )
    return t


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("state", ALL)
def test_each_call_moves_or_refuses_by_the_table(call, state):
    t = manager(state)
    allowed = CALLS[call]
    if state in allowed:
        getattr(t, call)()
        assert t.state == allowed[state]
        return
    with pytest.raises(KraftError) as raised:
        getattr(t, call)()
    assert t.state == state  # a refused call changes nothing
    if state == FATAL_ERROR:
        assert raised.value.code == E.PRODUCER_FENCED and "close it" in raised.value.message
    elif state == ABORTABLE_ERROR and call == "begin_commit":
        assert "abort_transaction()" in raised.value.message
    else:
        assert raised.value.code == E.INVALID_TXN_STATE
        assert state in raised.value.message


SENDS = [
    (UNINITIALIZED, E.INVALID_TXN_STATE, "init_transactions()"),
    (INITIALIZING, E.INVALID_TXN_STATE, "init_transactions()"),
    (READY, E.INVALID_TXN_STATE, "begin_transaction()"),
    (IN_TRANSACTION, None, ""),
    (COMMITTING, E.INVALID_TXN_STATE, "commit_transaction()"),
    (ABORTING, E.INVALID_TXN_STATE, "abort_transaction()"),
    (ABORTABLE_ERROR, E.NOT_ENOUGH_REPLICAS, "abort_transaction()"),
    (FATAL_ERROR, E.PRODUCER_FENCED, "close it"),
]


@pytest.mark.parametrize("state,code,hint", SENDS)
def test_send_only_inside_a_transaction(state, code, hint):
    t = manager(state)
    if code is None:
        t.check_in_transaction()
        return
    with pytest.raises(KraftError) as raised:
        t.check_in_transaction()
    assert raised.value.code == code and hint in raised.value.message


FAILURES = [
    # state, error code of a failed batch, state after
    (IN_TRANSACTION, E.NOT_ENOUGH_REPLICAS, ABORTABLE_ERROR),
    (COMMITTING, E.REQUEST_TIMED_OUT, ABORTABLE_ERROR),
    (IN_TRANSACTION, E.PRODUCER_FENCED, FATAL_ERROR),
    (COMMITTING, E.INVALID_PRODUCER_EPOCH, FATAL_ERROR),
    (ABORTING, E.NOT_ENOUGH_REPLICAS, ABORTING),  # dropped by the abort itself
    (ABORTABLE_ERROR, E.MESSAGE_TOO_LARGE, ABORTABLE_ERROR),
    (ABORTABLE_ERROR, E.PRODUCER_FENCED, FATAL_ERROR),
]


@pytest.mark.parametrize("state,code,after", FAILURES)
def test_a_failed_batch_makes_the_transaction_abortable_or_the_producer_fatal(state, code, after):
    t = manager(state)
    first = t.error
    t.on_batch_failed(KraftError(code, "batch failed"))
    assert t.state == after
    if after == state and state == ABORTABLE_ERROR:
        assert t.error is first  # the first error stands


KINDS = [
    (E.NOT_COORDINATOR, COORDINATOR_MOVED, COORDINATOR_MOVED),
    (E.COORDINATOR_NOT_AVAILABLE, COORDINATOR_MOVED, COORDINATOR_MOVED),
    (E.CONCURRENT_TRANSACTIONS, RETRY, RETRY),
    (E.COORDINATOR_LOAD_IN_PROGRESS, RETRY, RETRY),
    (E.PRODUCER_FENCED, FATAL, FATAL),
    (E.INVALID_PRODUCER_EPOCH, FATAL, FATAL),
    (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, FATAL, FATAL),
    (E.TOPIC_AUTHORIZATION_FAILED, FATAL, ABORTABLE),  # unknown: EndTxn fatal, adds abortable
    (E.UNKNOWN_MEMBER_ID, FATAL, ABORTABLE),
]


@pytest.mark.parametrize("code,end_txn,add", KINDS)
def test_error_kinds(code, end_txn, add):
    assert error_kind(code) == end_txn
    assert error_kind(code, ABORTABLE) == add


def test_partitions_are_added_once_before_their_batches_and_retried_on_retriable_errors():
    t = manager(IN_TRANSACTION)
    a, b, c = ("t", 0), ("t", 1), ("u", 0)
    assert not t.is_send_allowed(a)
    for tp in (a, b, a):
        t.maybe_add_partition(tp)
    assert t.take_partitions_to_add() == [a, b]
    t.maybe_add_partition(c)
    assert t.take_partitions_to_add() == []  # one request out at a time
    kind = t.on_add_partitions_result({a: E.NONE, b: E.CONCURRENT_TRANSACTIONS})
    assert kind == RETRY and t.is_send_allowed(a) and not t.is_send_allowed(b)
    assert t.take_partitions_to_add() == [b, c]
    assert t.on_add_partitions_result({b: E.NONE}) == ABORTABLE  # c left out of the answer
    t.maybe_add_partition(a)
    assert t.take_partitions_to_add() == []  # a is in already
    assert t.needs_end_txn()
    t.begin_commit()
    t.completed()
    assert (t.state, t.partitions, t.needs_end_txn()) == (READY, set(), False)


def test_no_partitions_are_added_outside_a_transaction_and_nothing_is_sent_while_aborting():
    t = manager(READY)
    t.maybe_add_partition(("t", 0))
    assert t.take_partitions_to_add() == []
    t = manager(IN_TRANSACTION)
    t.partitions.add(("t", 0))
    t.begin_abort()
    assert not t.is_send_allowed(("t", 0)) and t.dropping and not t.sending


def test_an_empty_transaction_needs_no_end_txn_and_offsets_make_one():
    t = manager(IN_TRANSACTION)
    assert not t.needs_end_txn()
    t.offsets_added = True
    assert t.needs_end_txn()


@pytest.mark.parametrize("tid,timeout", [("", 60_000), ("a", 0)])
def test_bad_settings_are_named(tid, timeout):
    with pytest.raises(ValueError, match="transactional_id|transaction_timeout_ms"):
        TransactionManager(tid, timeout)
