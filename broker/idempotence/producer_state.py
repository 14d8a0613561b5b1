"""One partition's idempotent-producer state (Kafka's ProducerStateManager, idempotence only): the
last five batches of each producer id, and the verdict on a new batch: append, duplicate or error.

Rules, Kafka's (ProducerAppendInfo, ProducerStateEntry), in the order they are checked:
- a batch with no producer id (-1), or a control batch, is not checked and leaves no state;
- a producer id with a negative epoch or base sequence is INVALID_RECORD;
- an epoch below the producer's current one is INVALID_PRODUCER_EPOCH: a fenced zombie;
- the same epoch and the exact (first, last) sequence range of one of the last five batches is a
  duplicate: answered with that batch's offsets, nothing appended;
- a higher epoch must start at sequence 0 (the producer bumped its epoch and restarted its
  sequences), else OUT_OF_ORDER_SEQUENCE_NUMBER; so must the epoch a transaction marker set
  (a coordinator bumps it when it aborts a timed-out transaction) while it has no batch here;
- a producer id this partition does not know (its batches left the log through retention, or its
  state expired after producer.id.expiration.ms idle) is accepted at any sequence, as Kafka
  does since KIP-360: there is nothing to check it against, and refusing would fail a live
  producer's next send after a quiet day;
- the same epoch must continue right after the last batch: first == last + 1, or 0 after
  2^31-1 (sequences wrap), else OUT_OF_ORDER_SEQUENCE_NUMBER.
Only an appended batch changes the state; a rejected or duplicate one leaves it as it was.
A producer idle for producer.id.expiration.ms (by its last batch's timestamp) is forgotten,
unless it has a transaction open.

Transactions, Kafka's (ProducerStateManager, ProducerAppendInfo.appendEndTxnMarker):
- a transactional batch opens its producer's transaction if none is open, remembering its first
  offset; a non-transactional batch while one is open is INVALID_TXN_STATE;
- a COMMIT or ABORT marker (a control batch the coordinator has the leader write) closes it; a
  marker with an epoch below the producer's is INVALID_PRODUCER_EPOCH, with a coordinator epoch
  below the last marker's TRANSACTION_COORDINATOR_FENCED (a deposed coordinator);
- a closed transaction stays unstable until the high watermark passes its marker; the last
  stable offset (LSO) is min(first offset of every unstable transaction, high watermark).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from broker.idempotence.producer_entry import (  # noqa: F401  (re-exported: callers import here)
    ACCEPT,
    APPEND,
    BATCHES_PER_PRODUCER,
    DUPLICATE,
    NO_PRODUCER_ID,
    NO_TXN,
    REJECT,
    SEQUENCE_LIMIT,
    BatchMetadata,
    CompletedTxn,
    Decision,
    ProducerEntry,
    decide,
    is_checked,
    last_sequence,
    next_sequence,
    reject,
)
from broker.idempotence.request_check import (  # noqa: F401  (re-exported: callers import here)
    check_request,
    record_request,
    request_headers,
)
from clients.errors import ErrorCode
from clients.record.control import EndTxnMarker


class ProducerStateManager:
    """The state of every producer id seen on one partition, up to `end_offset` of its log."""

    def __init__(self, name: str = "", max_batches: int = BATCHES_PER_PRODUCER) -> None:
        self.name = name
        self.max_batches = max_batches
        self.producers: dict[int, ProducerEntry] = {}
        self.end_offset = 0  # the state reflects every batch below this log offset
        self.snapshot_offset = -1  # end offset of the snapshot last written or loaded
        self.ongoing: dict[int, int] = {}  # producer id -> open transaction's first offset
        self.unreplicated: list[CompletedTxn] = []  # closed, marker not yet below the HW
        # Markers met per producer id since this state was built: a partition leader verifying
        # a transaction's first batch with its coordinator (KIP-890) appends it only if no
        # marker ended that producer's transaction meanwhile (Kafka's VerificationGuard).
        self.markers_seen: dict[int, int] = {}

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    # -- checking (the leader, before it appends) -----------------------------------------------
    def check(
        self, producer_id: int, producer_epoch: int, base_sequence: int, last_sequence: int
    ) -> Decision:
        """The verdict on one batch; changes nothing."""
        return decide(
            self.producers.get(producer_id),
            producer_id,
            producer_epoch,
            base_sequence,
            last_sequence,
            self.name,
        )

    def check_and_update(
        self,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        last_sequence: int,
        first_offset: int,
        timestamp: int = -1,
    ) -> Decision:
        """The verdict on one batch that would be appended at `first_offset`; an APPEND verdict
        is recorded at once (for callers that append exactly what was accepted)."""
        decision = self.check(producer_id, producer_epoch, base_sequence, last_sequence)
        if decision.is_append:
            last_offset = first_offset + (last_sequence - base_sequence) % SEQUENCE_LIMIT
            self.on_batch_appended(
                producer_id,
                producer_epoch,
                base_sequence,
                last_sequence,
                first_offset,
                last_offset,
                timestamp,
            )
        return decision

    def check_batches(self, headers: Iterable, first_offset: int) -> list[Decision | None]:
        """Verdicts on the batches of one request, in order, as if each accepted one were
        appended from `first_offset` on (so a request may carry several batches of a producer);
        None for a batch that is not checked. Changes nothing."""
        staged: dict[int, ProducerEntry] = {}
        out: list[Decision | None] = []
        offset = first_offset
        for h in headers:
            if not is_checked(h):
                out.append(None)
                offset += h.last_offset_delta + 1
                continue
            pid, last_seq = h.producer_id, last_sequence(h)
            entry = staged.get(pid, self.producers.get(pid))
            decision = decide(entry, pid, h.producer_epoch, h.base_sequence, last_seq, self.name)
            if (
                decision.is_append
                and not h.is_transactional
                and entry is not None
                and entry.in_transaction
                and h.producer_epoch == entry.epoch
            ):
                decision = reject(
                    ErrorCode.INVALID_TXN_STATE,
                    f"producer {pid} sent a non-transactional batch to {self.name} "
                    f"while its transaction from offset "
                    f"{entry.current_txn_first_offset} is open; commit or abort it "
                    f"first",
                )
            out.append(decision)
            if decision.is_append:
                batch = BatchMetadata(
                    h.base_sequence, last_seq, offset, offset + h.last_offset_delta, h.max_timestamp
                )
                staged[pid] = self._updated(entry, pid, h.producer_epoch, batch)
                if h.is_transactional and not staged[pid].in_transaction:
                    staged[pid] = replace(staged[pid], current_txn_first_offset=offset)
                offset += h.last_offset_delta + 1
        return out

    # -- updating (after an append, on a follower, when rebuilding) ------------------------------
    def on_batch_appended(
        self,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        last_sequence: int,
        first_offset: int,
        last_offset: int,
        timestamp: int = -1,
        transactional: bool = False,
    ) -> None:
        """Record a batch now in the log, unchecked: the leader checked it before appending.
        A transactional batch opens its producer's transaction if none is open."""
        if producer_id == NO_PRODUCER_ID:
            return
        batch = BatchMetadata(base_sequence, last_sequence, first_offset, last_offset, timestamp)
        entry = self._updated(self.producers.get(producer_id), producer_id, producer_epoch, batch)
        if transactional and not entry.in_transaction:
            entry = replace(entry, current_txn_first_offset=first_offset)
            self.ongoing[producer_id] = first_offset
        self.producers[producer_id] = entry
        self.end_offset = max(self.end_offset, last_offset + 1)

    def on_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        marker: EndTxnMarker,
        offset: int,
        timestamp: int = -1,
    ) -> CompletedTxn | None:
        """A COMMIT or ABORT marker at `offset`, now in the log: the producer's transaction (if
        one is open; a retried marker finds none) is closed. A newer epoch replaces the old
        one's sequences, as any batch of a newer epoch does."""
        entry = self.producers.get(producer_id) or ProducerEntry(producer_id, producer_epoch)
        first = entry.current_txn_first_offset
        batches = entry.batches if producer_epoch == entry.epoch else ()
        self.producers[producer_id] = replace(
            entry,
            epoch=producer_epoch,
            batches=batches,
            current_txn_first_offset=NO_TXN,
            coordinator_epoch=marker.coordinator_epoch,
            marker_timestamp=timestamp,
        )
        self.ongoing.pop(producer_id, None)
        self.markers_seen[producer_id] = self.markers_seen.get(producer_id, 0) + 1
        self.end_offset = max(self.end_offset, offset + 1)
        if first == NO_TXN:
            return None
        done = CompletedTxn(
            producer_id,
            first,
            offset,
            not marker.committed,
            min(self.ongoing.values(), default=offset + 1),
        )
        self.unreplicated.append(done)
        return done

    def on_replicated_batches(
        self, headers: Iterable, read_marker: Callable[[object], EndTxnMarker | None] | None = None
    ) -> list[CompletedTxn]:
        """Batches appended to this log with their final offsets (a follower's fetch, the
        leader's own append, a replay of the log): record each idempotent one, and each marker
        (`read_marker(header)` reads a control batch's marker; without it they are skipped).
        Returns the transactions the markers closed."""
        completed = []
        for h in headers:
            if is_checked(h):
                self.on_batch_appended(
                    h.producer_id,
                    h.producer_epoch,
                    h.base_sequence,
                    last_sequence(h),
                    h.base_offset,
                    h.last_offset,
                    h.max_timestamp,
                    h.is_transactional,
                )
            elif h.is_control and h.producer_id != NO_PRODUCER_ID and read_marker is not None:
                marker = read_marker(h)
                if marker is not None:
                    done = self.on_marker(
                        h.producer_id, h.producer_epoch, marker, h.base_offset, h.max_timestamp
                    )
                    if done is not None:
                        completed.append(done)
            self.end_offset = max(self.end_offset, h.base_offset + h.last_offset_delta + 1)
        return completed

    # -- transactions -------------------------------------------------------------------------------
    def check_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> Decision:
        """May the coordinator's marker for `producer_id` be written? Changes nothing."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return ACCEPT
        if producer_epoch < entry.epoch:
            return reject(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"marker for producer {producer_id} at epoch {producer_epoch} on "
                f"{self.name} is fenced: the producer is at epoch {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            return reject(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"marker for producer {producer_id} on {self.name} from coordinator "
                f"epoch {coordinator_epoch}, below {entry.coordinator_epoch} of the "
                f"last marker: a newer coordinator took over",
            )
        return ACCEPT

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the earliest transaction that is open, or closed by a marker the
        high watermark has not passed; None if there is none. Forgets those now stable."""
        self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]
        firsts = list(self.ongoing.values()) + [t.first_offset for t in self.unreplicated]
        return min(firsts) if firsts else None

    def last_stable_offset(self, high_watermark: int) -> int:
        """What read_committed consumers may read up to: Kafka's LSO."""
        first = self.first_unstable_offset(high_watermark)
        return high_watermark if first is None else min(first, high_watermark)

    def rebuild_from_batches(self, headers: Iterable, start_offset: int = 0) -> None:
        """Forget everything and replay the log's batch headers from `start_offset`."""
        self.load([], start_offset)
        self.on_replicated_batches(headers)

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose every batch is below the log start (deleted by retention), as
        a rebuild from the remaining log would."""
        gone = [pid for pid, e in self.producers.items() if e.last_offset < log_start_offset]
        for pid in gone:
            del self.producers[pid]
            self.ongoing.pop(pid, None)
            self.markers_seen.pop(pid, None)
        self.end_offset = max(self.end_offset, log_start_offset)

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers whose last batch is `expiration_ms` or more older than `now_ms`
        (Kafka's producer.id.expiration.ms): their ids and sequences no longer cost memory and
        snapshot space forever. One that comes back is an unknown producer id, accepted at the
        sequence it is at, as after retention deleted its batches. Returns the ids removed."""
        gone = [
            pid
            for pid, e in self.producers.items()
            if not e.in_transaction and now_ms - e.last_timestamp >= expiration_ms
        ]
        for pid in gone:
            del self.producers[pid]
            self.markers_seen.pop(pid, None)
        return gone

    def _updated(
        self, entry: ProducerEntry | None, producer_id: int, epoch: int, batch: BatchMetadata
    ) -> ProducerEntry:
        if entry is None:
            return ProducerEntry(producer_id, epoch, (batch,))
        return entry.with_batch(epoch, batch, self.max_batches)

    # -- snapshots ----------------------------------------------------------------------------------
    def entries(self) -> list[ProducerEntry]:
        return [self.producers[pid] for pid in sorted(self.producers)]

    def load(self, entries: Iterable[ProducerEntry], end_offset: int) -> None:
        """Replace the state with a snapshot's: `entries` describe every batch below `end_offset`."""
        self.producers = {e.producer_id: e for e in entries}
        self.ongoing = {
            e.producer_id: e.current_txn_first_offset
            for e in self.producers.values()
            if e.in_transaction
        }
        self.unreplicated = []
        self.end_offset = end_offset

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ProducerStateManager)
            and self.producers == other.producers
            and self.end_offset == other.end_offset
        )

    def __repr__(self) -> str:
        return (
            f"ProducerStateManager({self.name!r}, {len(self.producers)} producers, "
            f"end_offset={self.end_offset})"
        )
