"""The partitions this node hosts and the data path through them: append (produce), read (fetch),
list offsets. Synchronous; the servicer adds the long-poll waiting. Log errors become Kafka error
codes here, so a client's bytes can never take the broker down."""
from __future__ import annotations

import dataclasses
import logging

from clients.errors import ErrorCode, KraftError
from clients.record.batch_header import CorruptBatchError
from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
CONSUMER_REPLICA_ID = -1
ACKS_ALL = -1


@dataclasses.dataclass(frozen=True)
class ProduceResult:
    error_code: int = 0
    error_message: str = ""
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1


@dataclasses.dataclass(frozen=True)
class FetchResult:
    error_code: int = 0
    error_message: str = ""
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""


@dataclasses.dataclass(frozen=True)
class OffsetResult:
    error_code: int = 0
    error_message: str = ""
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass
class Partition:
    topic: str
    partition: int
    log: Log
    leader_epoch: int = 0
    leader_id: int = -1           # as the metadata log says; -1: none
    is_leader: bool = True

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark


def _unknown(topic: str, partition: int) -> KraftError:
    return KraftError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      f"this node hosts no partition {topic}-{partition}")


class ReplicaManager:
    def __init__(self, log_manager: LogManager, node_id: int) -> None:
        self.log_manager = log_manager
        self.node_id = node_id
        self._partitions: dict[tuple[str, int], Partition] = {}

    # -- hosting -----------------------------------------------------------------------------
    def become_leader(self, topic: str, partition: int, config: LogConfig, topic_id: str,
                      leader_epoch: int = 0) -> Partition:
        log_ = self.log_manager.get_or_create_log(topic, partition, config, topic_id)
        log_.update_config(config)
        hosted = Partition(topic, partition, log_, leader_epoch, self.node_id, True)
        # Until followers replicate (issue 4) the leader's log is all there is: what is on its
        # disk counts as committed.
        log_.high_watermark = log_.log_end_offset
        self._partitions[(topic, partition)] = hosted
        return hosted

    def become_follower(self, topic: str, partition: int, config: LogConfig, topic_id: str,
                        leader_epoch: int, leader_id: int) -> Partition:
        """Host the replica's log without serving it: clients go to the leader."""
        log_ = self.log_manager.get_or_create_log(topic, partition, config, topic_id)
        log_.update_config(config)
        hosted = Partition(topic, partition, log_, leader_epoch, leader_id, False)
        self._partitions[(topic, partition)] = hosted
        return hosted

    def remove_partition(self, topic: str, partition: int) -> None:
        if self._partitions.pop((topic, partition), None) is not None:
            self.log_manager.delete_log(topic, partition)

    def get(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def _checked(self, topic: str, partition: int, current_leader_epoch: int) -> Partition:
        hosted = self._partitions.get((topic, partition))
        if hosted is None:
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
    def append(self, topic: str, partition: int, records: bytes, acks: int, now_ms: int) -> ProduceResult:
        try:
            hosted = self._checked(topic, partition, -1)
            if not records:
                raise KraftError(ErrorCode.CORRUPT_MESSAGE, "the request carries no record batch")
            min_isr = hosted.log.config.min_insync_replicas
            if acks == ACKS_ALL and min_isr > 1:
                raise KraftError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"{topic}-{partition} has 1 in-sync replica; min.insync.replicas is {min_isr}")
            info = hosted.log.append_as_leader(records, hosted.leader_epoch, now_ms)
            hosted.log.high_watermark = hosted.log.log_end_offset
            return ProduceResult(base_offset=info.first_offset, log_append_time=info.log_append_time,
                                 log_start_offset=hosted.log.log_start_offset)
        except KraftError as exc:
            return ProduceResult(exc.code, exc.message)
        except CorruptBatchError as exc:
            return ProduceResult(ErrorCode.CORRUPT_MESSAGE, str(exc))
        except OSError as exc:
            log.exception("append to %s-%d failed", topic, partition)
            return ProduceResult(ErrorCode.KAFKA_STORAGE_ERROR, f"disk error: {exc}")

    # -- fetch -------------------------------------------------------------------------------
    def read(self, topic: str, partition: int, fetch_offset: int, max_bytes: int, *,
             replica_id: int = CONSUMER_REPLICA_ID, current_leader_epoch: int = -1,
             min_one_batch: bool = True) -> FetchResult:
        try:
            hosted = self._checked(topic, partition, current_leader_epoch)
            log_ = hosted.log
            # Consumers see only committed records; followers read up to the log end.
            limit = log_.high_watermark if replica_id == CONSUMER_REPLICA_ID else None
            if replica_id == CONSUMER_REPLICA_ID and log_.high_watermark < fetch_offset <= log_.log_end_offset:
                data = b""
            else:
                data = log_.read(fetch_offset, max_bytes, max_offset=limit,
                                 min_one_batch=min_one_batch).records
            return FetchResult(high_watermark=log_.high_watermark,
                               log_start_offset=log_.log_start_offset, records=data)
        except KraftError as exc:
            hosted = self._partitions.get((topic, partition))
            return FetchResult(exc.code, exc.message,
                               hosted.log.high_watermark if hosted else -1,
                               hosted.log.log_start_offset if hosted else -1)
        except OSError as exc:
            log.exception("read from %s-%d failed", topic, partition)
            return FetchResult(ErrorCode.KAFKA_STORAGE_ERROR, f"disk error: {exc}")

    # -- list offsets ------------------------------------------------------------------------
    def list_offset(self, topic: str, partition: int, timestamp: int,
                    current_leader_epoch: int = -1) -> OffsetResult:
        try:
            hosted = self._checked(topic, partition, current_leader_epoch)
            log_ = hosted.log
            if timestamp == EARLIEST_TIMESTAMP:
                return OffsetResult(offset=log_.log_start_offset, leader_epoch=hosted.leader_epoch)
            if timestamp == LATEST_TIMESTAMP:
                return OffsetResult(offset=log_.high_watermark, leader_epoch=hosted.leader_epoch)
            if timestamp < 0:
                raise KraftError(ErrorCode.INVALID_REQUEST,
                                 f"timestamp {timestamp}: use -1 (latest), -2 (earliest) or a time in ms")
            found = log_.offset_for_timestamp(timestamp)
            if found is None or found[0] >= log_.high_watermark:
                return OffsetResult(leader_epoch=hosted.leader_epoch)
            return OffsetResult(offset=found[0], timestamp=found[1], leader_epoch=hosted.leader_epoch)
        except KraftError as exc:
            return OffsetResult(exc.code, exc.message)
