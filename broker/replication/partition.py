"""One replica hosted on this broker, as Kafka's Partition: its log, its replication state
(PartitionState, leader or follower) and its producer state, and the appends and reads on them
(`append_records_to_leader`, `read_records`, a follower's fetch). The log's high watermark (what
consumers may read, what is checkpointed) follows the core's; this is the only place that copies
it across. Errors of the request are KraftErrors; a log's OSError is the replica manager's."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from broker.idempotence import producer_state_file
from broker.idempotence.producer_state import (
    ProducerStateManager,
    check_request,
    record_request,
    request_headers,
)
from broker.replication.disk_log import DiskReplicaLog
from broker.replication.messages import (
    Effect,
    FetchAnswer,
    FollowerFetch,
    HighWatermarkAdvanced,
    IsrChanged,
    ProposeIsr,
    Truncated,
)
from broker.replication.partition_state import PartitionState, ReplicationConfig
from broker.replication.producer_states import HostedProducerStates
from broker.replication.purgatory import Purgatory
from broker.replication.results import (
    ACKS_ALL,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    READ_COMMITTED,
    FetchResult,
    OffsetResult,
    ProduceResult,
)
from broker.replication.topic_stats import TopicStats
from clients.errors import ErrorCode, KraftError
from clients.record.control import encode_marker_batch
from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.log.segment import SegmentCorrupt
from kraft.log.transaction_index import AbortedTxn
from kraft.metadata.image import PartitionRegistration

# The replica manager's: an ISR change this partition's leader wants the controller to make.
ProposeIsrTo = Callable[["Partition", ProposeIsr], None]


class Partition:
    def __init__(
        self,
        topic: str,
        partition: int,
        topic_id: str,
        log: Log,
        node_id: int,
        replica_lag_time_max_ms: int,
        broker_epoch: int,
        *,
        producer_states: HostedProducerStates,
        purgatory: Purgatory,
        propose_isr: ProposeIsrTo,
        stats: TopicStats | None = None,
    ) -> None:
        """`purgatory`: told of each move (log end, high watermark, ISR, leadership, a
        truncation), so the requests the replica manager parked on this partition look again."""
        self.topic, self.partition, self.topic_id = topic, partition, topic_id
        self.log = log
        config = ReplicationConfig(
            replica_lag_time_max_ms=replica_lag_time_max_ms,
            min_insync_replicas=log.config.min_insync_replicas,
        )
        # A restart resumes from the checkpointed high watermark (capped by what the log holds).
        self._replica_log = DiskReplicaLog(log)
        self.state = PartitionState(
            node_id, self._replica_log, config, broker_epoch, high_watermark=log.high_watermark
        )
        self.node_id = node_id
        self._producer_states = producer_states
        self._purgatory = purgatory
        self._propose_isr = propose_isr
        self._stats = stats if stats is not None else TopicStats()  # what the metrics read

    # -- views
    @property
    def is_leader(self) -> bool:
        return self.state.is_leader

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def leader_id(self) -> int:
        return -1 if self.state.leader_id is None else self.state.leader_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_append_time(self) -> int:
        """The log append time of the last leader append (-1 unless LogAppendTime)."""
        info = self._replica_log.last_append
        return -1 if info is None else info.log_append_time

    def producer_state(self) -> ProducerStateManager:
        """The producer state describing all of the log (loaded or caught up now)."""
        return self._producer_states.of((self.topic, self.partition), self.log)

    def last_stable_offset(self) -> int:
        """Kafka's LSO: the high watermark, or below it the first offset of a transaction not
        yet decided (or whose marker is not yet committed)."""
        return self.producer_state().last_stable_offset(self.log.high_watermark)

    def first_unstable_offset(self) -> int | None:
        """The cleaner's bound: where the earliest undecided transaction starts, None if none."""
        try:
            state = self.producer_state()
        except (OSError, SegmentCorrupt, ValueError):
            return self.log.log_start_offset  # unknown: clean nothing rather than too much
        return state.first_unstable_offset(self.log.high_watermark)

    # -- metadata
    def apply_registration(self, reg: PartitionRegistration, now_ms: int) -> None:
        """Lead or follow as the metadata log says. Raises the log's OSError / SegmentCorrupt."""
        was = (self.is_leader, self.leader_epoch)
        if reg.leader == self.node_id:
            effects = self.state.become_leader(
                reg.leader_epoch, reg.partition_epoch, tuple(reg.isr), tuple(reg.replicas), now_ms
            )
        else:
            effects = self.state.become_follower(
                reg.leader if reg.leader >= 0 else None,
                reg.leader_epoch,
                reg.partition_epoch,
                now_ms,
            )
        self._absorb(effects)
        if (self.is_leader, self.leader_epoch) != was:
            # acks=all waiters of a deposed leader answer NOT_LEADER_OR_FOLLOWER now, so their
            # producers retry on the new leader instead of waiting out request.timeout.ms.
            self._purgatory.moved(self.topic, self.partition)

    def update_config(self, config: LogConfig) -> None:
        self.log.update_config(config)
        if config.min_insync_replicas != self.state.config.min_insync_replicas:
            self.state.config = dataclasses.replace(
                self.state.config, min_insync_replicas=config.min_insync_replicas
            )

    def set_broker_epoch(self, broker_epoch: int) -> None:
        self.state.broker_epoch = broker_epoch

    # -- leader: appends
    def check_leader(self, current_leader_epoch: int = -1) -> None:
        """Raises NOT_LEADER_OR_FOLLOWER, or FENCED / UNKNOWN_LEADER_EPOCH for a request that
        names another epoch (-1: not checked)."""
        if not self.is_leader:
            leader = f"broker {self.leader_id}" if self.leader_id >= 0 else "no broker (yet)"
            raise KraftError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"this broker does not lead {self.topic}-{self.partition}; {leader} does",
            )
        if current_leader_epoch >= 0 and current_leader_epoch != self.leader_epoch:
            code = (
                ErrorCode.FENCED_LEADER_EPOCH
                if current_leader_epoch < self.leader_epoch
                else ErrorCode.UNKNOWN_LEADER_EPOCH
            )
            raise KraftError(
                code,
                f"{self.topic}-{self.partition} is at leader epoch "
                f"{self.leader_epoch}, the request says {current_leader_epoch}",
            )

    def append_records_to_leader(
        self, records, acks: int, now_ms: int, *, coordinator: bool = False
    ) -> ProduceResult:
        """min.insync.replicas, the idempotent producer check, then the append. `coordinator`:
        a group coordinator's own append (Kafka's AppendOrigin.COORDINATOR), whose transactional
        batches carry no producer sequence to check, only the epoch. Raises KraftError,
        CorruptBatchError and the log's errors; nothing is appended then."""
        self.check_leader()
        if not records:
            raise KraftError(ErrorCode.CORRUPT_MESSAGE, "the request carries no record batch")
        refused = self.state.check_min_isr(acks)
        if refused != ErrorCode.NONE:
            # Before the duplicate check: a retry must not be told "done" while the ISR is short.
            raise KraftError(
                refused,
                f"{self.topic}-{self.partition}: in-sync replicas "
                f"{list(self.state.isr)} are fewer than min.insync.replicas="
                f"{self.state.config.min_insync_replicas}; retry once "
                "followers catch up, or use acks=1",
            )
        headers, verdict = (
            self._check_coordinator_producers(records)
            if coordinator
            else self._check_producers(records)
        )  # idempotence
        if verdict is not None:
            return verdict
        result = self.state.append_as_leader(records, acks, now_ms)
        if result.error != ErrorCode.NONE:
            return ProduceResult(result.error, result.message)
        # The state was current just before this append (_check_producers caught it up).
        record_request(
            self._producer_states.current((self.topic, self.partition)),
            headers,
            result.first_offset,
            self.log.log_end_offset,
        )
        self._stats.appended(self.topic, len(records), result.last_offset - result.first_offset + 1)
        self._absorb(result.effects)
        # The log end moved: followers' parked fetches take the new batches now (the rest were
        # woken by _absorb if the high watermark moved too, as with no followers).
        self._purgatory.end_moved(self.topic, self.partition)
        return ProduceResult(
            base_offset=result.first_offset,
            log_append_time=self.last_append_time,
            log_start_offset=self.log.log_start_offset,
            last_offset=result.last_offset,
            leader_epoch=result.leader_epoch,
        )

    def append_txn_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> ProduceResult:
        """A transaction's COMMIT or ABORT marker, as the leader. Refused, nothing written, for a
        fenced producer epoch or coordinator epoch (producer_state.py)."""
        self.check_leader()
        producers = self.producer_state()
        verdict = producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        if not verdict.is_append:
            return ProduceResult(verdict.error_code, verdict.message)
        refused = self.state.check_min_isr(ACKS_ALL)
        if refused != ErrorCode.NONE:
            raise KraftError(
                refused,
                f"{self.topic}-{self.partition}: in-sync replicas "
                f"{list(self.state.isr)} are fewer than "
                f"min.insync.replicas; the marker waits for them",
            )
        batch = encode_marker_batch(
            producer_id, producer_epoch, committed, coordinator_epoch, now_ms
        )
        result = self.state.append_as_leader(batch, ACKS_ALL, now_ms, from_coordinator=True)
        if result.error != ErrorCode.NONE:
            return ProduceResult(result.error, result.message)
        producer_state_file.catch_up(producers, self.log)  # closes it, writes .txnindex
        self._absorb(result.effects)
        self._purgatory.moved(self.topic, self.partition)
        return ProduceResult(
            base_offset=result.first_offset,
            log_start_offset=self.log.log_start_offset,
            last_offset=result.last_offset,
            leader_epoch=result.leader_epoch,
        )

    def acks_satisfied(self, offset: int, leader_epoch: int) -> ErrorCode | None:
        """For an acks=all append: None while waiting, NONE once committed, else the error."""
        return self.state.acks_satisfied(offset, leader_epoch)

    # -- leader: reads
    def read_records(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool,
        unread: bool,
        isolation_level: int,
    ) -> FetchResult:
        """A consumer's read, up to the high watermark (read_committed: the last stable offset,
        with the aborted transactions whose data the answer may hold). `unread`: the records
        come as a FileSlice to read before anything else runs."""
        log_ = self.log
        hw = log_.high_watermark
        lso = self.last_stable_offset()
        limit = lso if isolation_level == READ_COMMITTED else hw
        aborted: tuple[AbortedTxn, ...] = ()
        if limit < fetch_offset <= log_.log_end_offset:
            data = b""
        else:
            data = log_.read_slice(
                fetch_offset, max_bytes, max_offset=limit, min_one_batch=min_one_batch
            )
            if isolation_level == READ_COMMITTED and data.size:
                aborted = tuple(log_.collect_aborted_txns(fetch_offset, limit))
            self._stats.read(self.topic, data.size)
            data = data if unread else data.read()
        return FetchResult(
            high_watermark=hw,
            log_start_offset=log_.log_start_offset,
            records=data,
            last_stable_offset=lso,
            aborted_transactions=aborted,
        )

    def read_for_follower(
        self,
        replica_id: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        current_leader_epoch: int,
        max_bytes: int,
        now_ms: int,
        *,
        broker_epoch: int,
        min_one_batch: bool,
        unread: bool,
    ) -> FetchResult:
        """A follower's fetch: its position acknowledges what it holds (the HW may move); the
        answer is records up to the log end, or the epoch where its log diverged."""
        decision = self.state.handle_follower_fetch(
            replica_id, fetch_offset, last_fetched_epoch, current_leader_epoch, now_ms, broker_epoch
        )
        self._absorb(decision.effects)
        log_ = self.log
        if decision.error != ErrorCode.NONE:
            return FetchResult(
                decision.error, decision.message, log_.high_watermark, log_.log_start_offset
            )
        if decision.diverging_epoch is not None:
            return FetchResult(
                high_watermark=log_.high_watermark,
                log_start_offset=log_.log_start_offset,
                diverging_epoch=tuple(decision.diverging_epoch),
            )
        data = log_.read_slice(decision.read_from, max_bytes, min_one_batch=min_one_batch)
        self._stats.read(self.topic, data.size, follower=True)
        data = data if unread else data.read()
        return FetchResult(
            high_watermark=log_.high_watermark,
            log_start_offset=log_.log_start_offset,
            records=data,
            last_stable_offset=self.last_stable_offset(),
        )

    def list_offset(self, timestamp: int, isolation_level: int) -> OffsetResult:
        """read_committed: "latest" is the last stable offset, and no offset past it is found."""
        log_ = self.log
        visible = (
            self.last_stable_offset() if isolation_level == READ_COMMITTED else log_.high_watermark
        )
        if timestamp == EARLIEST_TIMESTAMP:
            return OffsetResult(offset=log_.log_start_offset, leader_epoch=self.leader_epoch)
        if timestamp == LATEST_TIMESTAMP:
            return OffsetResult(offset=visible, leader_epoch=self.leader_epoch)
        if timestamp < 0:
            raise KraftError(
                ErrorCode.INVALID_REQUEST,
                f"timestamp {timestamp}: use -1 (latest), -2 (earliest) or a time in ms",
            )
        found = log_.offset_for_timestamp(timestamp)
        if found is None or found[0] >= visible:
            return OffsetResult(leader_epoch=self.leader_epoch)
        return OffsetResult(offset=found[0], timestamp=found[1], leader_epoch=self.leader_epoch)

    # -- leader: the ISR
    def tick(self, now_ms: int) -> None:
        """Shrink lagging replicas out of the ISR, resend an unanswered proposal."""
        self._absorb(self.state.tick(now_ms))

    def on_alter_partition_result(
        self,
        proposal: ProposeIsr,
        error: ErrorCode,
        leader_epoch: int,
        partition_epoch: int,
        isr: tuple[int, ...],
        now_ms: int,
    ) -> None:
        self._absorb(
            self.state.on_alter_partition_result(
                proposal, error, leader_epoch, partition_epoch, isr, now_ms
            )
        )

    # -- follower
    def follower_fetch(self) -> FollowerFetch | None:
        """What to ask the leader next (None: not a follower with a leader)."""
        return self.state.fetch_request()

    def append_records_as_follower(
        self, fetch: FollowerFetch, answer: FetchAnswer, now_ms: int
    ) -> None:
        """The leader's answer to `fetch`: appended, or the log truncated where it diverged.
        Raises CorruptRecords / CorruptBatchError and the log's errors."""
        self._absorb(self.state.handle_fetch_response(fetch, answer, now_ms))

    # -- effects
    def _absorb(self, effects: tuple[Effect, ...]) -> None:
        """Carry out the core's effects: ISR proposals to the replica manager; a truncation
        reloads the producer state; any move wakes the requests parked on this partition. The
        high watermark itself the core keeps in the log."""
        wake, truncated = False, False
        for effect in effects:
            if isinstance(effect, IsrChanged):
                self._stats.isr_changed(
                    self.topic, self.partition, self.leader_epoch, effect.isr, self.is_leader
                )
                wake = True
            elif isinstance(effect, HighWatermarkAdvanced):
                wake = True
            elif isinstance(effect, Truncated):
                truncated = wake = True
            elif isinstance(effect, ProposeIsr):
                self._propose_isr(self, effect)
        if truncated:
            self._producer_states.on_log_truncated((self.topic, self.partition))
        if wake:
            self._purgatory.moved(self.topic, self.partition)

    # -- idempotent producers
    def _check_producers(self, records):
        """(headers, None) to append, or (None, the ProduceResult) for a duplicate (the original
        offset, nothing appended) or a sequence / epoch error (nothing appended)."""
        state = self.producer_state()
        headers = request_headers(records)
        if headers is None:
            return None, None
        verdict = check_request(state, headers, self.log.log_end_offset)
        if verdict is None:
            return headers, None
        if verdict.is_duplicate:
            # last_offset: acks=all answers a duplicate once the original is committed, as Kafka.
            return None, ProduceResult(
                base_offset=verdict.first_offset,
                log_start_offset=self.log.log_start_offset,
                last_offset=verdict.last_offset,
                leader_epoch=self.leader_epoch,
            )
        return None, ProduceResult(
            verdict.error_code, verdict.message, log_start_offset=self.log.log_start_offset
        )

    def _check_coordinator_producers(self, records):
        """As _check_producers for a coordinator's batches: only a fenced epoch is refused."""
        state = self.producer_state()
        headers = request_headers(records)
        for h in headers or ():
            entry = state.entry(h.producer_id)
            if entry is not None and h.producer_epoch < entry.epoch:
                return None, ProduceResult(
                    ErrorCode.INVALID_PRODUCER_EPOCH,
                    f"producer {h.producer_id} epoch {h.producer_epoch} is fenced on "
                    f"{self.topic}-{self.partition}: epoch {entry.epoch} is newer",
                    log_start_offset=self.log.log_start_offset,
                )
        return headers, None
