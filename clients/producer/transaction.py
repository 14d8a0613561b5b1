"""The transactional producer's pure core (the transaction half of Kafka's TransactionManager):
the transaction's state, the partitions added to it, and what each error does to it.

States and transitions, in one place (CALLS below; anything else raises INVALID_TXN_STATE
naming the call and the state):
- uninitialized -> initializing: init_transactions (InitProducerId with the transactional id);
  initializing -> ready once it answers (a retry after a timeout stays in initializing);
- ready -> in_transaction: begin_transaction (no request: the coordinator learns of the
  transaction from its first AddPartitionsToTxn or AddOffsetsToTxn);
- in_transaction -> committing: commit_transaction (flush, then EndTxn commit);
- in_transaction | abortable_error -> aborting: abort_transaction (unsent batches dropped,
  EndTxn abort); committing | aborting -> ready once EndTxn answers, or at once when the
  transaction touched nothing (no partition, no offsets: there is nothing to end);
- in_transaction | committing -> abortable_error: a batch of the transaction failed, or the
  coordinator refused a partition or the offsets; commit then raises, only abort works;
- any -> fatal_error: the producer was fenced (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH: a newer
  instance with this transactional id took over), the id is not authorized, or the coordinator
  answered something the protocol does not allow; every call then raises, close the producer.
Before the first batch of a partition goes out in a transaction, AddPartitionsToTxn must have
added it (`is_send_allowed`); the sender collects the partitions to add (`maybe_add_partition`,
`take_partitions_to_add`) and reports each answer (`on_add_partitions_result`).
No trio, grpc or clock here: the producer and the sender call in.
"""

from __future__ import annotations

from clients.errors import ErrorCode, KraftError

E = ErrorCode

UNINITIALIZED = "uninitialized"
INITIALIZING = "initializing"
READY = "ready"
IN_TRANSACTION = "in_transaction"
COMMITTING = "committing"
ABORTING = "aborting"
ABORTABLE_ERROR = "abortable_error"
FATAL_ERROR = "fatal_error"

# call -> (the states it is allowed in, the state it leads to); fatal_error refuses them all.
CALLS = {
    "init_transactions": ({UNINITIALIZED, INITIALIZING}, INITIALIZING),
    "finish init_transactions": ({INITIALIZING}, READY),
    "begin_transaction": ({READY}, IN_TRANSACTION),
    "commit_transaction": ({IN_TRANSACTION, COMMITTING}, COMMITTING),
    "abort_transaction": ({IN_TRANSACTION, ABORTABLE_ERROR, ABORTING}, ABORTING),
    "end the transaction": ({COMMITTING, ABORTING}, READY),
    "bump the epoch": ({ABORTING}, INITIALIZING),  # after an abort, before the next one
}

# What an error answer means for a transactional request.
COORDINATOR_MOVED = "coordinator-moved"  # find the coordinator again, then retry
RETRY = "retry"  # retry after the backoff
ABORTABLE = "abortable"  # the transaction can only be aborted
FATAL = "fatal"  # the producer can only be closed

FENCED = frozenset({E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH})
_KINDS = {
    E.NOT_COORDINATOR: COORDINATOR_MOVED,
    E.COORDINATOR_NOT_AVAILABLE: COORDINATOR_MOVED,
    E.NETWORK_EXCEPTION: COORDINATOR_MOVED,
    E.COORDINATOR_LOAD_IN_PROGRESS: RETRY,
    E.CONCURRENT_TRANSACTIONS: RETRY,
    E.REQUEST_TIMED_OUT: RETRY,
    E.PRODUCER_FENCED: FATAL,
    E.INVALID_PRODUCER_EPOCH: FATAL,
    E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: FATAL,
    E.INVALID_TXN_STATE: FATAL,
    E.UNSUPPORTED_VERSION: FATAL,
    E.TRANSACTION_COORDINATOR_FENCED: FATAL,
}


def error_kind(code: int, otherwise: str = FATAL) -> str:
    """What `code` means for InitProducerId, EndTxn (unknown codes: FATAL, as Kafka), or
    AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit (pass otherwise=ABORTABLE)."""
    return _KINDS.get(code, otherwise)


# AddPartitionsToTxn and TxnOffsetCommit: the partition's metadata may not have reached the
# coordinator yet. (A consumer group that moved on is abortable, Kafka's CommitFailedException.)
PARTITION_RETRY = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION})


class TransactionManager:
    def __init__(self, transactional_id: str, transaction_timeout_ms: int) -> None:
        if not transactional_id:
            raise ValueError("transactional_id must not be empty")
        if transaction_timeout_ms <= 0:
            raise ValueError(
                f"transaction_timeout_ms must be positive, not {transaction_timeout_ms}"
            )
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = UNINITIALIZED
        self.error: KraftError | None = None  # why abortable_error or fatal_error
        self.partitions: set[tuple] = set()  # added to the transaction
        self._to_add: set[tuple] = set()  # waiting for AddPartitionsToTxn
        self._adding: set[tuple] = set()  # in the AddPartitionsToTxn out now
        self.offsets_added = False  # AddOffsetsToTxn succeeded

    # -- transitions ------------------------------------------------------------------------------
    def _move(self, action: str) -> None:
        allowed, to = CALLS[action]
        if self.state == FATAL_ERROR:
            raise self._fatal()
        if self.state not in allowed:
            if self.state == ABORTABLE_ERROR and to == COMMITTING:
                raise KraftError(
                    self.error.code if self.error else E.INVALID_TXN_STATE,
                    f"cannot commit: the transaction failed "
                    f"({self.error.message if self.error else 'unknown'}); "
                    "call abort_transaction()",
                )
            raise KraftError(
                E.INVALID_TXN_STATE,
                f"cannot {action} in state {self.state}{_HINT.get(self.state, '')}",
            )
        self.state = to

    def _fatal(self) -> KraftError:
        err = self.error
        return KraftError(
            err.code if err else E.INVALID_TXN_STATE,
            f"the transactional producer failed for good "
            f"({err.message if err else 'unknown'}); close it and create a new one",
        )

    def begin_init(self) -> None:
        self._move("init_transactions")

    def initialized(self) -> None:
        self._move("finish init_transactions")

    def begin_transaction(self) -> None:
        self._move("begin_transaction")

    def begin_commit(self) -> None:
        """commit_transaction; again while committing: a retry of one that timed out."""
        self._move("commit_transaction")

    def begin_abort(self) -> None:
        self._move("abort_transaction")

    def needs_end_txn(self) -> bool:
        """EndTxn only when the coordinator knows the transaction (Kafka skips it otherwise)."""
        return bool(self.partitions) or self.offsets_added

    def completed(self) -> None:
        """EndTxn answered (or was not needed): ready for the next transaction."""
        self._move("end the transaction")
        self._reset()

    def reinitialize(self) -> None:
        """After an abort whose batches' fate is unknown: a new epoch before the next one."""
        self._move("bump the epoch")
        self._reset()

    def _reset(self) -> None:
        self.partitions.clear()
        self._to_add.clear()
        self._adding.clear()
        self.offsets_added = False
        self.error = None

    def fail(self, kind: str, error: KraftError) -> None:
        """An error of `kind` (ABORTABLE or FATAL) reached the transaction."""
        if kind == FATAL or error.code in FENCED:
            self.state, self.error = FATAL_ERROR, error
        elif self.state in (IN_TRANSACTION, COMMITTING):
            self.state, self.error = ABORTABLE_ERROR, error
        # Already aborting or failed: the first error stands.

    def on_batch_failed(self, error: KraftError) -> None:
        """A batch of the transaction failed for good: its records are not in the transaction,
        which must not commit without them."""
        self.fail(FATAL if error.code in FENCED else ABORTABLE, error)

    # -- what may be done now ---------------------------------------------------------------------
    def check_in_transaction(self, action: str = "send") -> None:
        """`send` and send_offsets_to_transaction only inside a transaction; raises why not."""
        if self.state == IN_TRANSACTION:
            return
        if self.state == FATAL_ERROR:
            raise self._fatal()
        if self.state == ABORTABLE_ERROR:
            raise KraftError(
                self.error.code if self.error else E.INVALID_TXN_STATE,
                f"cannot {action}: the transaction failed "
                f"({self.error.message if self.error else ''}); call "
                "abort_transaction() first",
            )
        raise KraftError(
            E.INVALID_TXN_STATE, f"cannot {action} in state {self.state}{_HINT.get(self.state, '')}"
        )

    @property
    def sending(self) -> bool:
        """Batches may go out (of partitions already added)."""
        return self.state in (IN_TRANSACTION, COMMITTING)

    @property
    def dropping(self) -> bool:
        """Batches not yet sent must be failed: the transaction will not commit."""
        return self.state in (ABORTING, ABORTABLE_ERROR, FATAL_ERROR)

    def is_send_allowed(self, tp: tuple) -> bool:
        return self.sending and tp in self.partitions

    # -- AddPartitionsToTxn -----------------------------------------------------------------------
    def maybe_add_partition(self, tp: tuple) -> None:
        if self.sending and tp not in self.partitions and tp not in self._adding:
            self._to_add.add(tp)

    def take_partitions_to_add(self) -> list[tuple]:
        """The partitions for the next AddPartitionsToTxn (none while one is out)."""
        if self._adding or not self._to_add or not self.sending:
            return []
        self._adding, self._to_add = self._to_add, set()
        return sorted(self._adding)

    def on_add_partitions_result(self, errors: dict[tuple, int]) -> str | None:
        """The answer for the partitions out (`errors`: each one's code, NONE when added).
        Returns the kind of the worst error (None: all added); retried ones wait again."""
        adding, self._adding = self._adding, set()
        worst = None
        for tp in adding:
            code = errors.get(tp, E.UNKNOWN_SERVER_ERROR)
            if code == E.NONE:
                self.partitions.add(tp)
                continue
            kind = RETRY if code in PARTITION_RETRY else error_kind(code, ABORTABLE)
            if kind in (RETRY, COORDINATOR_MOVED):
                self._to_add.add(tp)
            worst = _worse(worst, kind)
        return worst


_ORDER = (None, RETRY, COORDINATOR_MOVED, ABORTABLE, FATAL)


def _worse(a: str | None, b: str | None) -> str | None:
    return a if _ORDER.index(a) >= _ORDER.index(b) else b


_HINT = {
    UNINITIALIZED: ": call init_transactions() first",
    INITIALIZING: ": init_transactions() has not finished; call it again",
    READY: ": call begin_transaction() first",
    COMMITTING: ": a commit is under way; call commit_transaction() again to finish it",
    ABORTING: ": an abort is under way; call abort_transaction() again to finish it",
    ABORTABLE_ERROR: ": the transaction failed; call abort_transaction()",
}
