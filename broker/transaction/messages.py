"""Frozen dataclasses the TransactionCoordinator takes and hands out: its config, the transaction
RPCs' requests and responses (protobuf stays in the servicer), and the effects a driver carries
out (append records, send markers, answer a parked request)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Union

from clients.errors import ErrorCode
from clients.types import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@dataclass(frozen=True)
class TransactionConfig:
    """Kafka's broker settings (names in PROPERTIES), with Kafka's defaults."""

    max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    abort_timed_out_cleanup_interval_ms: int = 10_000
    state_log_num_partitions: int = 50
    state_log_replication_factor: int = 3
    state_log_min_isr: int = 2
    state_log_segment_bytes: int = 104_857_600
    # How long to wait before writing a Complete* record again after its append failed.
    retry_backoff_ms: int = 100


PROPERTIES = {
    "transaction.max.timeout.ms": "max_timeout_ms",
    "transactional.id.expiration.ms": "transactional_id_expiration_ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "abort_timed_out_cleanup_interval_ms",
    "transaction.state.log.num.partitions": "state_log_num_partitions",
    "transaction.state.log.replication.factor": "state_log_replication_factor",
    "transaction.state.log.min.isr": "state_log_min_isr",
    "transaction.state.log.segment.bytes": "state_log_segment_bytes",
}


# -- requests -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InitProducerIdRequest:
    """`producer_id`/`producer_epoch` (KIP-360): a producer that had an id asks for the next
    epoch of it; -1 for a fresh start."""

    transactional_id: str
    transaction_timeout_ms: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class AddPartitionsRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartition]
    verify_only: bool = False


@dataclass(frozen=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


# -- responses ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InitProducerIdResponse:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    message: str = ""


@dataclass(frozen=True)
class AddPartitionsResponse:
    """`error` for the whole request; else one code per partition."""

    error: ErrorCode
    partitions: tuple[tuple[TopicPartition, ErrorCode], ...] = ()
    message: str = ""


@dataclass(frozen=True)
class TxnResponse:
    """AddOffsetsToTxn's and EndTxn's answer."""

    error: ErrorCode
    message: str = ""


@dataclass(frozen=True)
class DescribedTransaction:
    transactional_id: str
    error: ErrorCode
    state: str = "Dead"
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 0
    txn_start_ms: int = -1
    partitions: tuple[TopicPartition, ...] = ()


# -- effects --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AppendRecords:
    """Append these (key, value) records to the coordinator's partition with acks=all and report
    the result with `on_append_result(append_id, ...)`, in append order."""

    append_id: int
    records: tuple[tuple[bytes, bytes | None], ...]


@dataclass(frozen=True)
class SendMarkers:
    """Write a COMMIT (or ABORT) marker for the producer into every partition, retrying until
    each has it (or its topic is gone), then call `on_markers_written(transactional_id,
    producer_id, producer_epoch)`."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True)
class Respond:
    handle: Hashable
    response: object


Effect = Union[AppendRecords, SendMarkers, Respond]
