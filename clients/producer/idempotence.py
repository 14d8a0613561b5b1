"""The idempotent producer's pure core (the idempotence half of Kafka's TransactionManager): the
producer id and epoch, per-partition sequence numbers, and what a failed batch does to them.

Rules:
- a batch gets its (producer id, epoch, base sequence) when it is first drained, and keeps them
  (and its encoded bytes) on every retry, so the leader can recognise a retry it already
  appended and answer it with the original offset instead of appending it twice;
- sequences count records per partition from 0 under each epoch, wrapping after 2^31-1;
- a batch that failed for good and that the leader surely did not append (it answered with an
  error before appending) gives its sequences back: the partition's next batch reuses them;
- when the leader's view and ours may differ (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID, or
  a batch whose fate is unknown: a lost answer, a timeout) the epoch is bumped (KIP-360):
  InitProducerId with the current id and epoch, then every partition restarts at sequence 0,
  and a batch still waiting to be sent is stamped again under the new epoch;
- a batch is unknown once any attempt of it is: a later definite refusal (NOT_LEADER_OR_FOLLOWER
  from the next leader) does not prove the earlier attempt was not appended, so it never gives
  its sequences back (the next batch would reuse them and be answered as a "duplicate" at the
  first one's offset), and it keeps its old stamp across a bump (stamped anew it could be written
  twice): the leader then answers it as a duplicate, appends it, or fences its old epoch;
- INVALID_PRODUCER_EPOCH means another producer took this id over: a fresh id is asked for;
- several requests of one partition may be out at once (`pipelined`), but only once the leader
  acknowledged a batch of it under the current epoch: a leader that does not know the producer
  yet appends any sequence, so the first batch goes alone. Requests may reach the leader in
  either order; sequences restore it: OUT_OF_ORDER_SEQUENCE_NUMBER for a batch while an earlier
  batch of its partition is still unresolved (out, or waiting for a retry) means "not yet", and
  the batch is retried after that one (`retry_out_of_order`), as is one stamped under an epoch
  being replaced; a batch refused for good while later ones of its partition are stamped
  bumps the epoch instead of giving its sequences back (the later ones carry sequences after it).
No trio, grpc or clock here: the sender calls in with the lock held.
"""

from __future__ import annotations

from clients.errors import ErrorCode

SEQUENCE_LIMIT = 2**31
NO_PRODUCER_ID = -1

# Codes a leader may send after it appended the batch (acks=all waited in vain), or whose cause
# is not the leader's answer: the batch's fate is unknown.
_UNKNOWN_OUTCOME = frozenset(
    {
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.UNKNOWN_SERVER_ERROR,
    }
)
_STATE_DIFFERS = frozenset({ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID})

READY = "ready"
NEEDS_ID = "needs-id"  # no id yet, or the old one was fenced: ask for a fresh one
NEEDS_BUMP = "needs-bump"  # ask for the next epoch of the current id


class IdempotenceManager:
    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.epoch = -1
        self.state = NEEDS_ID
        self._next: dict[tuple, int] = {}
        # Per partition: batches stamped and not yet acknowledged or failed for good, in
        # creation order; and the partitions acknowledged under the current epoch.
        self._unresolved: dict[tuple, list] = {}
        self._acknowledged: set[tuple] = set()

    @property
    def ready(self) -> bool:
        return self.state == READY

    def init_request(self) -> tuple[int | None, int | None]:
        """What InitProducerId should carry: (id, epoch) to bump the epoch, (None, None) for a
        fresh id."""
        if self.state == NEEDS_BUMP and self.producer_id >= 0:
            return self.producer_id, self.epoch
        return None, None

    def set_producer(self, producer_id: int, epoch: int) -> None:
        """InitProducerId answered: every partition starts over at sequence 0."""
        self.producer_id, self.epoch = producer_id, epoch
        self._next.clear()
        self._acknowledged.clear()
        self.state = READY

    def pipelined(self, tp: tuple) -> bool:
        """Several requests of `tp` may be out at once (see the rules above)."""
        return tp in self._acknowledged

    def on_succeeded(self, batch) -> None:
        self._resolve(batch)
        if batch.producer_id == self.producer_id and batch.producer_epoch == self.epoch:
            self._acknowledged.add((batch.topic, batch.partition))

    def note_sent(self, batch) -> None:
        """A stamped batch leaves now: remember whether an earlier batch of its partition was
        still unresolved then (its answer may overtake theirs)."""
        pending = self._unresolved.get((batch.topic, batch.partition))
        batch.sent_behind = bool(pending) and pending[0] is not batch

    def retry_out_of_order(self, batch) -> bool:
        """The leader answered OUT_OF_ORDER_SEQUENCE_NUMBER: True when that only means an
        earlier batch of the partition had not landed yet when this one arrived (it left while
        one was unresolved; that one may have landed since), or the epoch is being replaced:
        send it again after them, without counting it as a failure."""
        # A batch whose fate is unknown keeps its old stamp: under a replaced epoch it would be
        # refused the same way forever.
        return batch.sent_behind or (
            not batch.fate_unknown and (self.state != READY or batch.producer_epoch != self.epoch)
        )

    def _resolve(self, batch) -> None:
        tp = (batch.topic, batch.partition)
        pending = self._unresolved.get(tp)
        if pending is not None and batch in pending:
            pending.remove(batch)
            if not pending:
                del self._unresolved[tp]

    def next_sequence(self, tp: tuple) -> int:
        return self._next.get(tp, 0)

    def stamp(self, batch) -> bool:
        """Give a drained batch its producer id, epoch and sequences unless it already has them
        under the current epoch; True when it got new ones (its old bytes, if any, are stale)."""
        if batch.base_sequence >= 0 and (
            batch.fate_unknown
            or (batch.producer_id == self.producer_id and batch.producer_epoch == self.epoch)
        ):
            return False
        tp = (batch.topic, batch.partition)
        seq = self._next.get(tp, 0)
        pending = self._unresolved.setdefault(tp, [])
        if batch not in pending:
            pending.append(batch)
            if len(pending) > 1 and pending[-2].seq > batch.seq:
                pending.sort(key=lambda b: b.seq)
        batch.producer_id, batch.producer_epoch, batch.base_sequence = (
            self.producer_id,
            self.epoch,
            seq,
        )
        self._next[tp] = (seq + len(batch.records)) % SEQUENCE_LIMIT
        return True

    def on_attempt_failed(self, batch, code: int | None) -> None:
        """One attempt of a stamped batch failed (it may be retried). `code` as in on_failed."""
        if batch.base_sequence >= 0 and (code is None or code in _UNKNOWN_OUTCOME):
            batch.fate_unknown = True

    def on_failed(self, batch, code: int | None, siblings=()) -> None:
        """A batch failed for good. `code`: the leader's error for it, None when its fate is
        unknown (transport failure, expiry after an attempt); `siblings`: the batches of its
        request, which fail with it."""
        self._resolve(batch)
        if (
            batch.base_sequence < 0
            or batch.producer_id != self.producer_id
            or batch.producer_epoch != self.epoch
        ):
            return  # never stamped, or stamped under an id or epoch already replaced
        if code == ErrorCode.INVALID_PRODUCER_EPOCH:
            self.state = NEEDS_ID
        elif (
            code is None or code in _UNKNOWN_OUTCOME or code in _STATE_DIFFERS or batch.fate_unknown
        ):
            if self.state == READY:
                self.state = NEEDS_BUMP
        else:
            # Not appended: later batches of the partition must not leave a gap where it was.
            # Batches of one request fail together in order, so the lowest start wins.
            tp = (batch.topic, batch.partition)
            later = any(
                b.producer_epoch == self.epoch
                and b.producer_id == self.producer_id
                and not any(b is s for s in siblings)
                for b in self._unresolved.get(tp, ())
            )
            if later and self.state == READY:
                # Later batches already carry sequences after it (several requests out): a
                # new epoch renumbers them instead.
                self.state = NEEDS_BUMP
            elif _before(batch.base_sequence, self._next.get(tp, 0)):
                self._next[tp] = batch.base_sequence


def _before(a: int, b: int) -> bool:
    """a precedes b in wrapping sequence order (within half the sequence space)."""
    return a != b and (b - a) % SEQUENCE_LIMIT < SEQUENCE_LIMIT // 2
