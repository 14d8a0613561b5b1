"""The partitions this node hosts, as Kafka's ReplicaManager: hosting them as the metadata image
says, the data path through them (append, read, list offsets: each Partition does the work, asked
here) and the two waits on them, acks=all (`wait_committed`) and a parked fetch
(`wait_readable`), over one purgatory. Log errors become Kafka error codes here, so a client's
bytes can never take the broker down."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import trio

from broker.idempotence.producer_state import ProducerStateManager
from broker.replication.messages import FetchAnswer, FollowerFetch, ProposeIsr
from broker.replication.partition import Partition
from broker.replication.producer_states import HostedProducerStates
from broker.replication.purgatory import Purgatory
from broker.replication.results import (
    ACKS_ALL,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchResult,
    OffsetResult,
    ProduceResult,
)
from broker.replication.topic_stats import TopicStats
from clients.errors import ErrorCode, KraftError
from clients.record.batch_header import CorruptBatchError
from clients.record.codec import iter_batches
from kraft.log.log_config import LogConfig
from kraft.log.log_dir_failure import StorageError
from kraft.log.log_manager import LogManager
from kraft.log.log_validator import CorruptRecords
from kraft.log.segment import SegmentCorrupt
from kraft.metadata.image import PartitionRegistration

log = logging.getLogger(__name__)

# Imported from here by the rest of the broker (results.py is where they live).
__all__ = [
    "ACKS_ALL",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "FetchResult",
    "OffsetResult",
    "ProduceResult",
    "ReplicaManager",
]


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


def _has_transactional(records) -> bool:
    return any(h.is_transactional for _, h in iter_batches(records))


def _unknown(topic: str, partition: int) -> KraftError:
    return KraftError(
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"this node hosts no partition {topic}-{partition}"
    )


class ReplicaManager:
    def __init__(
        self,
        log_manager: LogManager,
        node_id: int,
        *,
        replica_lag_time_max_ms: int = 30_000,
        broker_epoch: Callable[[], int] = lambda: -1,
        clock_ms: Callable[[], int] = monotonic_ms,
        purgatory: Purgatory | None = None,
    ) -> None:
        self.log_manager = log_manager
        self.node_id = node_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.broker_epoch = broker_epoch
        self.clock_ms = clock_ms  # replication timing (lag), monotonic
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._producer_states = HostedProducerStates(self._partitions)
        # ISR proposals waiting to go to the controller, the latest per partition.
        self._proposals: dict[tuple[str, int], tuple[Partition, ProposeIsr]] = {}
        self._proposals_ready = trio.Event()
        # Requests parked on a partition: woken when its log end, high watermark, ISR or
        # leadership moves (each Partition reports its own moves). Its waits are this class's.
        self.purgatory = purgatory if purgatory is not None else Purgatory()
        self.topic_stats = TopicStats()  # read by the metrics endpoint, if there is one
        log_manager.on_offline = self.handle_logs_offline
        log_manager.first_unstable_offset = self.first_unstable_offset

    # -- hosting (driven by the metadata image) ----------------------------------------------
    def apply_registration(
        self,
        topic: str,
        partition: int,
        topic_id: str,
        config: LogConfig,
        reg: PartitionRegistration,
        *,
        config_changed: bool = False,
        now_ms: int | None = None,
    ) -> Partition | None:
        """Host the replica (creating its log if needed) and tell its core the partition's
        leader, epochs and ISR as the metadata log says them. None: offline on this broker."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            try:
                log_ = self.log_manager.get_or_create_log(topic, partition, config, topic_id)
            except StorageError:
                return None  # offline here (logged once); the heartbeat reports it
            log_.update_config(config)
            hosted = Partition(
                topic,
                partition,
                topic_id,
                log_,
                self.node_id,
                self.replica_lag_time_max_ms,
                self.broker_epoch(),
                producer_states=self._producer_states,
                purgatory=self.purgatory,
                propose_isr=self._propose_isr,
                stats=self.topic_stats,
            )
            self._partitions[(topic, partition)] = hosted
            self._preload_producer_state(hosted)
        elif config_changed:
            hosted.update_config(config)
        hosted.set_broker_epoch(self.broker_epoch())
        try:
            hosted.apply_registration(reg, self.clock_ms() if now_ms is None else now_ms)
        except (OSError, SegmentCorrupt) as exc:
            self.log_manager.log_failed(topic, partition, exc, "applying the registration of")
            return None
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
            self.purgatory.moved(*tp)  # parked requests answer KAFKA_STORAGE_ERROR now

    def _storage_error(
        self, topic: str, partition: int, exc: BaseException, during: str
    ) -> KraftError:
        return KraftError(
            ErrorCode.KAFKA_STORAGE_ERROR,
            self.log_manager.log_failed(topic, partition, exc, during),
        )

    def read_failed(self, topic: str, partition: int, exc: OSError) -> None:
        """Reading a FileSlice this manager handed out failed: the log goes offline as for any
        read error, so the fetch answers KAFKA_STORAGE_ERROR when it reads again."""
        self._storage_error(topic, partition, exc, "reading")

    def get(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def _hosted(self, topic: str, partition: int) -> Partition:
        """The hosted replica; KAFKA_STORAGE_ERROR if its log is offline here, else
        UNKNOWN_TOPIC_OR_PARTITION if it is not hosted."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            offline = self.log_manager.offline_reason(topic, partition)
            if offline is not None:
                raise KraftError(ErrorCode.KAFKA_STORAGE_ERROR, offline)
            raise _unknown(topic, partition)
        return hosted

    def _leader(self, topic: str, partition: int, current_leader_epoch: int) -> Partition:
        hosted = self._hosted(topic, partition)
        hosted.check_leader(current_leader_epoch)
        return hosted

    # -- produce -----------------------------------------------------------------------------
    def append(
        self,
        topic: str,
        partition: int,
        records: bytes,
        acks: int,
        now_ms: int,
        *,
        coordinator: bool = False,
    ) -> ProduceResult:
        """Partition.append_records_to_leader, its errors answered. `coordinator`: a group
        coordinator's own append (Kafka's AppendOrigin.COORDINATOR)."""
        try:
            return self._hosted(topic, partition).append_records_to_leader(
                records, acks, now_ms, coordinator=coordinator
            )
        except KraftError as exc:
            return ProduceResult(exc.code, exc.message)
        except CorruptBatchError as exc:
            return ProduceResult(ErrorCode.CORRUPT_MESSAGE, str(exc))
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "appending to")
            return ProduceResult(failed.code, failed.message)

    def append_txn_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> ProduceResult:
        """Write a transaction's COMMIT or ABORT marker as this partition's leader (Kafka's
        WriteTxnMarkers; the caller waits for acks=all)."""
        try:
            return self._hosted(topic, partition).append_txn_marker(
                producer_id, producer_epoch, committed, coordinator_epoch, now_ms
            )
        except KraftError as exc:
            return ProduceResult(exc.code, exc.message)
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "writing a marker to")
            return ProduceResult(failed.code, failed.message)

    def acks_satisfied(
        self, topic: str, partition: int, offset: int, leader_epoch: int
    ) -> ErrorCode | None:
        """For an acks=all append: None while waiting, NONE once committed, else the error."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return hosted.acks_satisfied(offset, leader_epoch)

    # -- the waits (Kafka's DelayedProduce and DelayedFetch) ---------------------------------
    async def wait_committed(
        self, topic: str, partition: int, offset: int, leader_epoch: int, deadline: float
    ) -> ErrorCode | None:
        """The one acks=all rule: wait until `offset` (appended at `leader_epoch`) is committed
        (NONE), the wait fails (the error: leadership moved, the ISR fell below
        min.insync.replicas), or trio's clock passes `deadline` (None)."""
        return await self.purgatory.wait_until(
            [(topic, partition)],
            lambda: self.acks_satisfied(topic, partition, offset, leader_epoch),
            deadline,
        )

    async def wait_readable(
        self, partitions: list[tuple[str, int]], deadline: float, *, follower: bool = False
    ) -> set[tuple[str, int]]:
        """A parked fetch's wait: until one of `partitions` moves (its high watermark,
        leadership, ISR; for a `follower`, its log end too) or trio's clock passes `deadline`.
        The partitions that moved (empty at the deadline): read those again."""
        return await self.purgatory.wait_which_moved(partitions, deadline, log_end=follower)

    # -- fetch -------------------------------------------------------------------------------
    def read(
        self,
        topic: str,
        partition: int,
        fetch_offset: int,
        max_bytes: int,
        *,
        current_leader_epoch: int = -1,
        min_one_batch: bool = True,
        unread: bool = False,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> FetchResult:
        """A consumer's read (Partition.read_records). `unread`: the records come as a FileSlice
        to read before anything else runs."""
        try:
            return self._leader(topic, partition, current_leader_epoch).read_records(
                fetch_offset,
                max_bytes,
                min_one_batch=min_one_batch,
                unread=unread,
                isolation_level=isolation_level,
            )
        except KraftError as exc:
            hosted = self._partitions.get((topic, partition))
            return FetchResult(
                exc.code,
                exc.message,
                hosted.log.high_watermark if hosted else -1,
                hosted.log.log_start_offset if hosted else -1,
            )
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "reading")
            return FetchResult(failed.code, failed.message)

    def read_for_follower(
        self,
        topic: str,
        partition: int,
        replica_id: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        current_leader_epoch: int,
        max_bytes: int,
        now_ms: int,
        *,
        broker_epoch: int = -1,
        min_one_batch: bool = True,
        unread: bool = False,
    ) -> FetchResult:
        """A follower's fetch on the leader (Partition.read_for_follower)."""
        try:
            hosted = self._hosted(topic, partition)
        except KraftError as exc:
            return FetchResult(exc.code, exc.message)
        try:
            return hosted.read_for_follower(
                replica_id,
                fetch_offset,
                last_fetched_epoch,
                current_leader_epoch,
                max_bytes,
                now_ms,
                broker_epoch=broker_epoch,
                min_one_batch=min_one_batch,
                unread=unread,
            )
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "reading")
            return FetchResult(failed.code, failed.message)

    def last_stable_offset(self, topic: str, partition: int) -> int:
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            raise _unknown(topic, partition)
        return hosted.last_stable_offset()

    def first_unstable_offset(self, topic: str, partition: int) -> int | None:
        """The cleaner's bound (any replica's); None if not hosted here."""
        hosted = self._partitions.get((topic, partition))
        return None if hosted is None else hosted.first_unstable_offset()

    # -- list offsets ------------------------------------------------------------------------
    def list_offset(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        current_leader_epoch: int = -1,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> OffsetResult:
        try:
            return self._leader(topic, partition, current_leader_epoch).list_offset(
                timestamp, isolation_level
            )
        except KraftError as exc:
            return OffsetResult(exc.code, exc.message)
        except (OSError, SegmentCorrupt) as exc:
            failed = self._storage_error(topic, partition, exc, "listing offsets of")
            return OffsetResult(failed.code, failed.message)

    # -- follower side -----------------------------------------------------------------------
    def leaders_followed(self) -> set[int]:
        return {
            p.leader_id for p in self._partitions.values() if not p.is_leader and p.leader_id >= 0
        }

    def followed_from(self, leader_id: int) -> list[tuple[Partition, FollowerFetch]]:
        out = []
        epoch = self.broker_epoch()
        for p in self._partitions.values():
            p.set_broker_epoch(epoch)
            fetch = p.follower_fetch()
            if fetch is not None and fetch.leader_id == leader_id:
                out.append((p, fetch))
        return out

    def apply_fetch_response(
        self, hosted: Partition, fetch: FollowerFetch, answer: FetchAnswer, now_ms: int
    ) -> None:
        if self._partitions.get((hosted.topic, hosted.partition)) is not hosted:
            return  # dropped or replaced while the fetch was out
        try:
            hosted.append_records_as_follower(fetch, answer, now_ms)
        except (CorruptRecords, CorruptBatchError) as exc:
            log.error(
                "%s-%d: the leader sent batches this replica cannot append (%s); fetching again",
                hosted.topic,
                hosted.partition,
                exc,
            )
            return
        except (OSError, SegmentCorrupt) as exc:
            self.log_manager.log_failed(hosted.topic, hosted.partition, exc, "appending to")
            return
        if answer.records and _has_transactional(answer.records):
            # The follower's .txnindex and producer state follow its log now, not at its next
            # checkpoint: it may lead (and serve read_committed fetches) any moment.
            try:
                hosted.producer_state()
            except (OSError, SegmentCorrupt) as exc:
                self.log_manager.log_failed(
                    hosted.topic, hosted.partition, exc, "indexing the transactions of"
                )

    # -- ISR (leader side) -------------------------------------------------------------------
    def tick(self, now_ms: int | None = None) -> None:
        """Periodic: shrink lagging replicas out of ISRs, resend unanswered proposals."""
        now = self.clock_ms() if now_ms is None else now_ms
        for hosted in list(self._partitions.values()):
            if hosted.is_leader:
                hosted.tick(now)

    def _propose_isr(self, hosted: Partition, proposal: ProposeIsr) -> None:
        self._proposals[(hosted.topic, hosted.partition)] = (hosted, proposal)
        self._proposals_ready.set()

    async def wait_isr_proposals(self) -> None:
        await self._proposals_ready.wait()
        self._proposals_ready = trio.Event()

    def take_isr_proposals(self) -> list[tuple[Partition, ProposeIsr]]:
        out = list(self._proposals.values())
        self._proposals.clear()
        return out

    def on_alter_partition_result(
        self,
        hosted: Partition,
        proposal: ProposeIsr,
        error: ErrorCode,
        leader_epoch: int,
        partition_epoch: int,
        isr: tuple[int, ...],
        now_ms: int,
    ) -> None:
        if self._partitions.get((hosted.topic, hosted.partition)) is hosted:
            hosted.on_alter_partition_result(
                proposal, error, leader_epoch, partition_epoch, isr, now_ms
            )

    # -- idempotent producers -----------------------------------------------------------------
    def producer_state(self, topic: str, partition: int) -> ProducerStateManager:
        """The partition's producer state, describing all of its log (producer_states.py)."""
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
            raise _unknown(topic, partition)
        return hosted.producer_state()

    def producer_state_managers(self) -> list[ProducerStateManager]:
        return self._producer_states.loaded()

    def _preload_producer_state(self, hosted: Partition) -> None:
        try:
            hosted.producer_state()
        except (OSError, ValueError):
            # Hosting must not fail on it: the first produce tries again and answers the error.
            log.exception(
                "loading the producer state of %s-%d failed", hosted.topic, hosted.partition
            )

    def on_log_truncated(self, topic: str, partition: int) -> None:
        self._producer_states.on_log_truncated((topic, partition))

    def checkpoint_producer_states(self) -> None:
        """Snapshot every partition's producer state that changed since its last snapshot, all
        inline (shutdown), so a restart replays only the log after it."""
        self.producer_snapshots_written(
            self.write_producer_snapshots(self.due_producer_snapshots())
        )

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
