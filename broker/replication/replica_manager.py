"""The partitions this node hosts and the data path through them: append (produce), read (consumer
and follower fetches), list offsets, and the replication state each partition's core keeps.
Synchronous; the servicer adds the waiting. Log errors become Kafka error codes here, so a
client's bytes can never take the broker down."""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable

import trio

from broker.idempotence import producer_state_file
from broker.metrics.topic_stats import TopicStats
from broker.replication.partition import Partition
from broker.replication.producer_states import HostedProducerStates
from broker.replication.purgatory import Purgatory
from broker.idempotence.producer_state import (ProducerStateManager, check_request, record_request,
                                   request_headers)
from broker.replication.messages import Effect, FetchAnswer, FollowerFetch, IsrChanged, ProposeIsr
from clients.errors import ErrorCode, KraftError
from clients.record.batch_header import CorruptBatchError
from clients.record.codec import iter_batches
from clients.record.control import encode_marker_batch
from kraft.log.file_slice import FileSlice
from kraft.log.log_config import LogConfig
from kraft.log.log_dir_failure import StorageError
from kraft.log.log_manager import LogManager
from kraft.log.log_validator import CorruptRecords
from kraft.log.segment import SegmentCorrupt
from kraft.log.transaction_index import AbortedTxn
from kraft.metadata.image import PartitionRegistration

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
ACKS_ALL = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclasses.dataclass(frozen=True)
class ProduceResult:
    error_code: int = 0
    error_message: str = ""
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    # Where the append ended and in which leader epoch: what acks=all waits for (-1: nothing new).
    last_offset: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(frozen=True)
class FetchResult:
    error_code: int = 0
    error_message: str = ""
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes | FileSlice = b""     # a FileSlice (not read yet) when asked with unread=True
    diverging_epoch: tuple[int, int] | None = None    # follower fetches only (KIP-101)
    last_stable_offset: int = -1
    aborted_transactions: tuple[AbortedTxn, ...] = ()  # read_committed only


@dataclasses.dataclass(frozen=True)
class OffsetResult:
    error_code: int = 0
    error_message: str = ""
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


def _has_transactional(records) -> bool:
    return any(h.is_transactional for _, h in iter_batches(records))


def _unknown(topic: str, partition: int) -> KraftError:
    return KraftError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      f"this node hosts no partition {topic}-{partition}")


class ReplicaManager:
    def __init__(self, log_manager: LogManager, node_id: int, *,
                 replica_lag_time_max_ms: int = 30_000,
                 broker_epoch: Callable[[], int] = lambda: -1,
                 clock_ms: Callable[[], int] = monotonic_ms,
                 purgatory: Purgatory | None = None) -> None:
        self.log_manager = log_manager
        self.node_id = node_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.broker_epoch = broker_epoch
        self.clock_ms = clock_ms          # replication timing (lag), monotonic
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._producer_states = HostedProducerStates(self._partitions)
        # ISR proposals waiting to go to the controller, the latest per partition.
        self._proposals: dict[tuple[str, int], tuple[Partition, ProposeIsr]] = {}
        self._proposals_ready = trio.Event()
        # Requests parked on a partition: woken when its log end, high watermark, ISR or
        # leadership moves.
        self.purgatory = purgatory if purgatory is not None else Purgatory()
        self.topic_stats = TopicStats()      # read by the metrics endpoint, if there is one
        log_manager.on_offline = self.handle_logs_offline
        log_manager.first_unstable_offset = self.first_unstable_offset

    # -- hosting (driven by the metadata image) ----------------------------------------------
    def apply_registration(self, topic: str, partition: int, topic_id: str, config: LogConfig,
                           reg: PartitionRegistration, *, config_changed: bool = False,
                           now_ms: int | None = None) -> Partition | None:
        """Host the replica (creating its log if needed) and tell its core the partition's
        leader, epochs and ISR as the metadata log says them. None: offline on this broker."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            try:
                log_ = self.log_manager.get_or_create_log(topic, partition, config, topic_id)
            except StorageError:
                return None     # offline here (logged once); the heartbeat reports it
            log_.update_config(config)
            hosted = Partition(topic, partition, topic_id, log_, self.node_id,
                               self.replica_lag_time_max_ms, self.broker_epoch())
            self._partitions[(topic, partition)] = hosted
            self._preload_producer_state(topic, partition)
        elif config_changed:
            hosted.update_config(config)
        hosted.set_broker_epoch(self.broker_epoch())
        now = self.clock_ms() if now_ms is None else now_ms
        was = (hosted.is_leader, hosted.leader_epoch)
        try:
            self._absorb(hosted, hosted.apply_registration(reg, self.node_id, now))
        except (OSError, SegmentCorrupt) as exc:
            self.log_manager.log_failed(topic, partition, exc, "applying the registration of")
            return None
        if (hosted.is_leader, hosted.leader_epoch) != was:
            # acks=all waiters of a deposed leader answer NOT_LEADER_OR_FOLLOWER now, so their
            # producers retry on the new leader instead of waiting out request.timeout.ms.
            self.purgatory.moved(topic, partition)
        return hosted

    def remove_partition(self, topic: str, partition: int) -> None:
        self._producer_states.forget((topic, partition))
        self.topic_stats.forget(topic, partition)
        self._proposals.pop((topic, partition), None)
        if self._partitions.pop((topic, partition), None) is not None:
            self.log_manager.delete_log(topic, partition)
            self.purgatory.moved(topic, partition)

    def handle_logs_offline(self, tps: list[tuple[str, int]]) -> None:
        """The log manager took these logs offline (a failed log dir, damaged files): stop
        serving and following them. The broker's heartbeat lists them, so the controller moves
        leadership away and drops this broker from their ISRs."""
        for tp in tps:
            self._partitions.pop(tp, None)
            self._producer_states.forget(tp)
            self._proposals.pop(tp, None)
            self.purgatory.moved(*tp)     # parked requests answer KAFKA_STORAGE_ERROR now

    def _storage_error(self, topic: str, partition: int, exc: BaseException,
                       during: str) -> KraftError:
        return KraftError(ErrorCode.KAFKA_STORAGE_ERROR,
                          self.log_manager.log_failed(topic, partition, exc, during))

    def read_failed(self, topic: str, partition: int, exc: OSError) -> None:
        """Reading a FileSlice this manager handed out failed: the log goes offline as for any
        read error, so the fetch answers KAFKA_STORAGE_ERROR when it reads again."""
        self._storage_error(topic, partition, exc, "reading")

    def get(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def _absorb(self, hosted: Partition, effects: tuple[Effect, ...]) -> None:
        if not effects:
            return
        for effect in effects:
            if isinstance(effect, IsrChanged):
                self.topic_stats.isr_changed(hosted.topic, hosted.partition, hosted.leader_epoch,
                                             effect.isr, hosted.is_leader)
        proposals, wake, truncated = hosted.absorb(effects)
        for proposal in proposals:
            self._proposals[(hosted.topic, hosted.partition)] = (hosted, proposal)
            self._proposals_ready.set()
        if truncated is not None:
            self.on_log_truncated(hosted.topic, hosted.partition)
        if wake:
            self.purgatory.moved(hosted.topic, hosted.partition)

    def _checked(self, topic: str, partition: int, current_leader_epoch: int) -> Partition:
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            offline = self.log_manager.offline_reason(topic, partition)
            if offline is not None:
                raise KraftError(ErrorCode.KAFKA_STORAGE_ERROR, offline)
            raise _unknown(topic, partition)
        if not hosted.is_leader:
            leader = f"broker {hosted.leader_id}" if hosted.leader_id >= 0 else "no broker (yet)"
            raise KraftError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"this broker does not lead {topic}-{partition}; {leader} does")
        if current_leader_epoch >= 0 and current_leader_epoch != hosted.leader_epoch:
            code = (ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < hosted.leader_epoch
                    else ErrorCode.UNKNOWN_LEADER_EPOCH)
            raise KraftError(code, f"{topic}-{partition} is at leader epoch {hosted.leader_epoch}, "
                                   f"the request says {current_leader_epoch}")
        return hosted

    # -- produce -----------------------------------------------------------------------------
    def append(self, topic: str, partition: int, records: bytes, acks: int, now_ms: int, *,
               coordinator: bool = False) -> ProduceResult:
        """`coordinator`: a group coordinator's own append (Kafka's AppendOrigin.COORDINATOR),
        whose transactional batches carry no producer sequence to check, only the epoch."""
        try:
            hosted = self._checked(topic, partition, -1)
            if not records:
                raise KraftError(ErrorCode.CORRUPT_MESSAGE, "the request carries no record batch")
            refused = hosted.state.check_min_isr(acks)
            if refused != ErrorCode.NONE:
                # Before the duplicate check: a retry must not be told "done" while the ISR is short.
                raise KraftError(refused, f"{topic}-{partition}: in-sync replicas "
                                          f"{list(hosted.state.isr)} are fewer than min.insync.replicas="
                                          f"{hosted.state.config.min_insync_replicas}; retry once "
                                          "followers catch up, or use acks=1")
            headers, verdict = (self._check_coordinator_producers(hosted, records) if coordinator
                                else self._check_producers(hosted, records))  # idempotence
            if verdict is not None:
                return verdict
            result = hosted.state.append_as_leader(records, acks, now_ms)
            if result.error != ErrorCode.NONE:
                return ProduceResult(result.error, result.message)
            self._record_producers(hosted, headers, result.first_offset)
            self.topic_stats.appended(topic, len(records), result.last_offset - result.first_offset + 1)
            self._absorb(hosted, result.effects)
            # The log end moved: followers' parked fetches take the new batches now (the rest
            # were woken by _absorb if the high watermark moved too, as with no followers).
            self.purgatory.end_moved(topic, partition)
            return ProduceResult(base_offset=result.first_offset,
                                 log_append_time=hosted.last_append_time,
                                 log_start_offset=hosted.log.log_start_offset,
                                 last_offset=result.last_offset, leader_epoch=result.leader_epoch)
        except KraftError as exc:
            return ProduceResult(exc.code, exc.message)
        except CorruptBatchError as exc:
            return ProduceResult(ErrorCode.CORRUPT_MESSAGE, str(exc))
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "appending to")
            return ProduceResult(failed.code, failed.message)

    def append_txn_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                          committed: bool, coordinator_epoch: int, now_ms: int) -> ProduceResult:
        """Write a transaction's COMMIT or ABORT marker as this partition's leader (Kafka's
        WriteTxnMarkers; the caller waits for acks=all). Refused, nothing written, for a fenced
        producer epoch or coordinator epoch (producer_state.py)."""
        try:
            hosted = self._checked(topic, partition, -1)
            state = self.producer_state(topic, partition)
            verdict = state.check_marker(producer_id, producer_epoch, coordinator_epoch)
            if not verdict.is_append:
                return ProduceResult(verdict.error_code, verdict.message)
            refused = hosted.state.check_min_isr(ACKS_ALL)
            if refused != ErrorCode.NONE:
                raise KraftError(refused, f"{topic}-{partition}: in-sync replicas "
                                          f"{list(hosted.state.isr)} are fewer than "
                                          f"min.insync.replicas; the marker waits for them")
            batch = encode_marker_batch(producer_id, producer_epoch, committed, coordinator_epoch,
                                        now_ms)
            result = hosted.state.append_as_leader(batch, ACKS_ALL, now_ms, from_coordinator=True)
            if result.error != ErrorCode.NONE:
                return ProduceResult(result.error, result.message)
            producer_state_file.catch_up(state, hosted.log)    # closes it, writes .txnindex
            self._absorb(hosted, result.effects)
            self.purgatory.moved(topic, partition)
            return ProduceResult(base_offset=result.first_offset,
                                 log_start_offset=hosted.log.log_start_offset,
                                 last_offset=result.last_offset, leader_epoch=result.leader_epoch)
        except KraftError as exc:
            return ProduceResult(exc.code, exc.message)
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "writing a marker to")
            return ProduceResult(failed.code, failed.message)

    def acks_satisfied(self, topic: str, partition: int, offset: int,
                       leader_epoch: int) -> ErrorCode | None:
        """For an acks=all append: None while waiting, NONE once committed, else the error."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return hosted.state.acks_satisfied(offset, leader_epoch)

    async def wait_committed(self, topic: str, partition: int, offset: int, leader_epoch: int,
                             deadline: float) -> ErrorCode | None:
        """The one acks=all rule: wait until `offset` (appended at `leader_epoch`) is committed
        (NONE), the wait fails (the error: leadership moved, the ISR fell below
        min.insync.replicas), or trio's clock passes `deadline` (None)."""
        return await self.purgatory.wait_until(
            [(topic, partition)],
            lambda: self.acks_satisfied(topic, partition, offset, leader_epoch), deadline)

    # -- fetch: consumers --------------------------------------------------------------------
    def read(self, topic: str, partition: int, fetch_offset: int, max_bytes: int, *,
             current_leader_epoch: int = -1, min_one_batch: bool = True,
             unread: bool = False, isolation_level: int = READ_UNCOMMITTED) -> FetchResult:
        """`unread`: the records come as a FileSlice to read before anything else runs.
        read_committed: only up to the last stable offset, with the aborted transactions whose
        data the answer may hold (Kafka's Fetch with isolation level 1)."""
        try:
            hosted = self._checked(topic, partition, current_leader_epoch)
            log_ = hosted.log
            hw = log_.high_watermark
            lso = self.last_stable_offset(topic, partition)
            # Consumers see only committed records: up to the high watermark, or the LSO.
            limit = lso if isolation_level == READ_COMMITTED else hw
            aborted: tuple[AbortedTxn, ...] = ()
            if limit < fetch_offset <= log_.log_end_offset:
                data = b""
            else:
                data = log_.read_slice(fetch_offset, max_bytes, max_offset=limit,
                                       min_one_batch=min_one_batch)
                if isolation_level == READ_COMMITTED and data.size:
                    aborted = tuple(log_.collect_aborted_txns(fetch_offset, limit))
                self.topic_stats.read(topic, data.size)
                data = data if unread else data.read()
            return FetchResult(high_watermark=hw, log_start_offset=log_.log_start_offset,
                               records=data, last_stable_offset=lso, aborted_transactions=aborted)
        except KraftError as exc:
            hosted = self._partitions.get((topic, partition))
            return FetchResult(exc.code, exc.message,
                               hosted.log.high_watermark if hosted else -1,
                               hosted.log.log_start_offset if hosted else -1)
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "reading")
            return FetchResult(failed.code, failed.message)

    def last_stable_offset(self, topic: str, partition: int) -> int:
        """Kafka's LSO: the high watermark, or below it the first offset of a transaction not
        yet decided (or whose marker is not yet committed)."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            raise _unknown(topic, partition)
        return self.producer_state(topic, partition).last_stable_offset(hosted.log.high_watermark)

    def first_unstable_offset(self, topic: str, partition: int) -> int | None:
        """The cleaner's bound (any replica's): where the earliest undecided transaction
        starts, None if there is none (or the partition is not hosted here)."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            return None
        try:
            state = self.producer_state(topic, partition)
        except (OSError, SegmentCorrupt, ValueError):
            return hosted.log.log_start_offset     # unknown: clean nothing rather than too much
        return state.first_unstable_offset(hosted.log.high_watermark)

    # -- fetch: followers (leader side) ------------------------------------------------------
    def read_for_follower(self, topic: str, partition: int, replica_id: int, fetch_offset: int,
                          last_fetched_epoch: int, current_leader_epoch: int, max_bytes: int,
                          now_ms: int, *, broker_epoch: int = -1,
                          min_one_batch: bool = True, unread: bool = False) -> FetchResult:
        """A follower's fetch: its position acknowledges what it holds (the HW may move); the
        answer is records up to the log end, or the epoch where its log diverged."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            offline = self.log_manager.offline_reason(topic, partition)
            if offline is not None:
                return FetchResult(ErrorCode.KAFKA_STORAGE_ERROR, offline)
            return FetchResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"this node hosts no partition {topic}-{partition}")
        decision = hosted.state.handle_follower_fetch(replica_id, fetch_offset, last_fetched_epoch,
                                                      current_leader_epoch, now_ms, broker_epoch)
        self._absorb(hosted, decision.effects)
        log_ = hosted.log
        if decision.error != ErrorCode.NONE:
            return FetchResult(decision.error, decision.message, log_.high_watermark,
                               log_.log_start_offset)
        if decision.diverging_epoch is not None:
            return FetchResult(high_watermark=log_.high_watermark,
                               log_start_offset=log_.log_start_offset,
                               diverging_epoch=tuple(decision.diverging_epoch))
        try:
            data = log_.read_slice(decision.read_from, max_bytes, min_one_batch=min_one_batch)
            self.topic_stats.read(topic, data.size, follower=True)
            data = data if unread else data.read()
            lso = self.last_stable_offset(topic, partition)
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "reading")
            return FetchResult(failed.code, failed.message)
        return FetchResult(high_watermark=log_.high_watermark,
                           log_start_offset=log_.log_start_offset, records=data,
                           last_stable_offset=lso)

    # -- fetch: followers (follower side) ----------------------------------------------------
    def leaders_followed(self) -> set[int]:
        return {p.state.leader_id for p in self._partitions.values()
                if not p.is_leader and p.state.leader_id is not None}

    def followed_from(self, leader_id: int) -> list[tuple[Partition, FollowerFetch]]:
        out = []
        epoch = self.broker_epoch()
        for p in self._partitions.values():
            p.set_broker_epoch(epoch)
            fetch = p.state.fetch_request()
            if fetch is not None and fetch.leader_id == leader_id:
                out.append((p, fetch))
        return out

    def apply_fetch_response(self, hosted: Partition, fetch: FollowerFetch, answer: FetchAnswer,
                             now_ms: int) -> None:
        if self._partitions.get((hosted.topic, hosted.partition)) is not hosted:
            return   # dropped or replaced while the fetch was out
        try:
            effects = hosted.state.handle_fetch_response(fetch, answer, now_ms)
        except (CorruptRecords, CorruptBatchError) as exc:
            log.error("%s-%d: the leader sent batches this replica cannot append (%s); "
                      "fetching again", hosted.topic, hosted.partition, exc)
            return
        except (OSError, SegmentCorrupt) as exc:
            self.log_manager.log_failed(hosted.topic, hosted.partition, exc, "appending to")
            return
        self._absorb(hosted, effects)
        if answer.records and _has_transactional(answer.records):
            # The follower's .txnindex and producer state follow its log now, not at its next
            # checkpoint: it may lead (and serve read_committed fetches) any moment.
            self._catch_up_producers(hosted)

    def _catch_up_producers(self, hosted: Partition) -> None:
        try:
            self.producer_state(hosted.topic, hosted.partition)
        except (OSError, SegmentCorrupt) as exc:
            self.log_manager.log_failed(hosted.topic, hosted.partition, exc,
                                        "indexing the transactions of")

    # -- ISR (leader side) -------------------------------------------------------------------
    def tick(self, now_ms: int | None = None) -> None:
        """Periodic: shrink lagging replicas out of ISRs, resend unanswered proposals."""
        now = self.clock_ms() if now_ms is None else now_ms
        for hosted in list(self._partitions.values()):
            if hosted.is_leader:
                self._absorb(hosted, hosted.state.tick(now))

    async def wait_isr_proposals(self) -> None:
        await self._proposals_ready.wait()
        self._proposals_ready = trio.Event()

    def take_isr_proposals(self) -> list[tuple[Partition, ProposeIsr]]:
        out = list(self._proposals.values())
        self._proposals.clear()
        return out

    def on_alter_partition_result(self, hosted: Partition, proposal: ProposeIsr, error: ErrorCode,
                                  leader_epoch: int, partition_epoch: int, isr: tuple[int, ...],
                                  now_ms: int) -> None:
        if self._partitions.get((hosted.topic, hosted.partition)) is hosted:
            self._absorb(hosted, hosted.state.on_alter_partition_result(
                proposal, error, leader_epoch, partition_epoch, isr, now_ms))

    # -- list offsets ------------------------------------------------------------------------
    def list_offset(self, topic: str, partition: int, timestamp: int,
                    current_leader_epoch: int = -1,
                    isolation_level: int = READ_UNCOMMITTED) -> OffsetResult:
        """read_committed: "latest" is the last stable offset, and no offset past it is found."""
        try:
            hosted = self._checked(topic, partition, current_leader_epoch)
            log_ = hosted.log
            visible = self.last_stable_offset(topic, partition) \
                if isolation_level == READ_COMMITTED else log_.high_watermark
            if timestamp == EARLIEST_TIMESTAMP:
                return OffsetResult(offset=log_.log_start_offset, leader_epoch=hosted.leader_epoch)
            if timestamp == LATEST_TIMESTAMP:
                return OffsetResult(offset=visible, leader_epoch=hosted.leader_epoch)
            if timestamp < 0:
                raise KraftError(ErrorCode.INVALID_REQUEST,
                                 f"timestamp {timestamp}: use -1 (latest), -2 (earliest) or a time in ms")
            found = log_.offset_for_timestamp(timestamp)
            if found is None or found[0] >= visible:
                return OffsetResult(leader_epoch=hosted.leader_epoch)
            return OffsetResult(offset=found[0], timestamp=found[1], leader_epoch=hosted.leader_epoch)
        except KraftError as exc:
            return OffsetResult(exc.code, exc.message)
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "listing offsets of")
            return OffsetResult(failed.code, failed.message)

    # -- idempotent producers -----------------------------------------------------------------
    def producer_state(self, topic: str, partition: int) -> ProducerStateManager:
        """The partition's producer state, describing all of its log (producer_states.py)."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            raise _unknown(topic, partition)
        return self._producer_states.of((topic, partition), hosted.log)

    def producer_state_managers(self) -> list[ProducerStateManager]:
        return self._producer_states.loaded()

    def _preload_producer_state(self, topic: str, partition: int) -> None:
        try:
            self.producer_state(topic, partition)
        except (OSError, ValueError):
            # Hosting must not fail on it: the first produce tries again and answers the error.
            log.exception("loading the producer state of %s-%d failed", topic, partition)

    def on_log_truncated(self, topic: str, partition: int) -> None:
        self._producer_states.on_log_truncated((topic, partition))

    def checkpoint_producer_states(self) -> None:
        """Snapshot every partition's producer state that changed since its last snapshot, all
        inline (shutdown), so a restart replays only the log after it."""
        self.producer_snapshots_written(self.write_producer_snapshots(self.due_producer_snapshots()))

    def due_producer_snapshots(self) -> list[tuple]:
        return self._producer_states.due_snapshots()

    def write_producer_snapshots(self, due: list[tuple]) -> list[tuple]:
        return self._producer_states.write_snapshots(due)

    def producer_snapshots_written(self, done: list[tuple]) -> None:
        self._producer_states.snapshots_written(done)

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `expiration_ms` on every hosted partition (Kafka's
        producer.id.expiration.ms; the node calls it every ...check.interval.ms)."""
        return self._producer_states.remove_expired(now_ms, expiration_ms)

    def _check_producers(self, hosted: Partition, records: bytes):
        """(headers, None) to append, or (None, the ProduceResult) for a duplicate (the original
        offset, nothing appended) or a sequence / epoch error (nothing appended)."""
        state = self.producer_state(hosted.topic, hosted.partition)
        headers = request_headers(records)
        if headers is None:
            return None, None
        verdict = check_request(state, headers, hosted.log.log_end_offset)
        if verdict is None:
            return headers, None
        if verdict.is_duplicate:
            # last_offset: acks=all answers a duplicate once the original is committed, as Kafka.
            return None, ProduceResult(base_offset=verdict.first_offset,
                                       log_start_offset=hosted.log.log_start_offset,
                                       last_offset=verdict.last_offset,
                                       leader_epoch=hosted.leader_epoch)
        return None, ProduceResult(verdict.error_code, verdict.message,
                                   log_start_offset=hosted.log.log_start_offset)

    def _check_coordinator_producers(self, hosted: Partition, records: bytes):
        """As _check_producers for a coordinator's batches: only a fenced epoch is refused."""
        state = self.producer_state(hosted.topic, hosted.partition)
        headers = request_headers(records)
        for h in headers or ():
            entry = state.entry(h.producer_id)
            if entry is not None and h.producer_epoch < entry.epoch:
                return None, ProduceResult(
                    ErrorCode.INVALID_PRODUCER_EPOCH,
                    f"producer {h.producer_id} epoch {h.producer_epoch} is fenced on "
                    f"{hosted.topic}-{hosted.partition}: epoch {entry.epoch} is newer",
                    log_start_offset=hosted.log.log_start_offset)
        return headers, None

    def _record_producers(self, hosted: Partition, headers, first_offset: int) -> None:
        # The state was current just before this append (_check_producers caught it up).
        state = self._producer_states.current((hosted.topic, hosted.partition))
        record_request(state, headers, first_offset, hosted.log.log_end_offset)
