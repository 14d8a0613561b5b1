"""Fetch, wire-neutral: consumers' and followers' reads, with who may read what, and the long poll
(until min_bytes arrive, a partition fails or max_wait_ms passes, woken by the replica manager's
`wait_readable`). Records come back unread, as FileSlices: the wire renders them, synchronously."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import trio

from broker.edge.request_limits import Refused
from broker.handlers import request_checks as checks
from broker.replication.replica_manager import FetchResult, ReplicaManager
from broker.security.node_trust import refuse_unless_node
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from clients.errors import ErrorCode
from clients.grpc_server import ANONYMOUS, RequestContext
from kraft.log.file_slice import FileSlice
from kraft.log.transaction_index import AbortedTxn
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R

MAX_WAIT_MS_LIMIT = 60_000
DEFAULT_MAX_BYTES = 50 * 1024 * 1024  # Kafka's fetch.max.bytes

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int = 0  # 0: up to the request's max_bytes
    current_leader_epoch: int = -1  # -1: not checked
    last_fetched_epoch: int = -1  # a follower's (KIP-101); -1: none


@dataclass(frozen=True, slots=True)
class FetchTopic:
    topic: str
    partitions: Sequence[FetchPartition]


@dataclass(frozen=True, slots=True)
class FetchRequest:
    topics: Sequence[FetchTopic]
    replica_id: int = -1  # a follower's node id; -1 for a consumer
    replica_epoch: int = -1  # a follower's broker epoch
    max_wait_ms: int = 0
    min_bytes: int = 0
    max_bytes: int = 0  # 0: DEFAULT_MAX_BYTES
    isolation_level: int = 0  # 0 read_uncommitted, 1 read_committed


@dataclass(frozen=True, slots=True)
class FetchPartitionResponse:
    partition: int
    error_code: int = 0
    error_message: str = ""
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: tuple[AbortedTxn, ...] = ()  # read_committed only
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset): followers only
    # Whole batches. A FileSlice (segment fd, position, size) is not read yet: read it (or
    # os.sendfile it) before the next await, while no task can truncate or delete its segment.
    records: bytes | FileSlice = b""


@dataclass(frozen=True, slots=True)
class FetchTopicResponse:
    topic: str
    partitions: list[FetchPartitionResponse]


@dataclass(frozen=True, slots=True)
class FetchResponse:
    topics: list[FetchTopicResponse]
    error_code: int = 0  # the whole request refused (then no topics)
    error_message: str = ""


# What a read found: (the answers, bytes, whether a partition failed, the (topic, partition) of
# each FileSlice to read).
_Read = tuple[list[FetchTopicResponse], int, bool, list[tuple[str, int]]]


class FetchHandler:
    def __init__(
        self,
        replicas: ReplicaManager,
        *,
        authorizer: RequestAuthorizer = OPEN,
        monotonic_ms: Callable[[], int],
    ) -> None:
        """`monotonic_ms`: replication timing (a follower's lag), immune to wall-clock steps."""
        self.replicas = replicas
        self.authz = authorizer
        self.monotonic_ms = monotonic_ms

    async def handle(
        self,
        request: FetchRequest,
        render: Callable[[FetchResponse], T],
        who: RequestContext = ANONYMOUS,
    ) -> T:
        """`render(response)`: what the wire sends, made from the answer with its FileSlices
        read; called with no await after the read, so no task can truncate or delete a segment
        before its slices are read. An OSError out of `render` (a slice that cannot be read)
        takes that log offline; the partition is read again and answers KAFKA_STORAGE_ERROR."""
        try:
            checks.Fetch(request)
        except Refused as refused:
            return render(FetchResponse([], refused.code, refused.message))
        follower = request.replica_id >= 0
        if follower:
            problem = refuse_unless_node(request.replica_id, "fetch as a follower", who)
            if problem is not None:
                return render(FetchResponse([], ErrorCode.CLUSTER_AUTHORIZATION_FAILED, problem))
        max_wait_s = min(max(request.max_wait_ms, 0), MAX_WAIT_MS_LIMIT) / 1000
        deadline = trio.current_time() + max_wait_s
        partitions = [(t.topic, p.partition) for t in request.topics for p in t.partitions]
        if follower:  # only nodes may replicate
            denials = dict.fromkeys(
                {t.topic for t in request.topics}, self.authz.node_call_denial(who)
            )
        else:
            denials = {
                t.topic: self.authz.denial(Op.READ, R.TOPIC, t.topic, who) for t in request.topics
            }
        denials = {topic: d for topic, d in denials.items() if d is not None}
        read_failed = False
        moved = None
        topics, size = None, 0
        while True:
            # After a wake by some of the partitions, with nothing read before, only those are
            # read again: the others' answers (no records; their high watermark, leadership and
            # log end would have woken us) still hold. A follower fetching dozens of partitions
            # (__consumer_offsets) otherwise re-read every one of them on each append it waited
            # for, on the acks=all path. The deadline, or any data, reads everything again.
            reuse = topics if moved and size == 0 else None
            topics, size, failed, slices = self._read(request, denials, reuse, moved)
            if size >= max(request.min_bytes, 1) or failed or trio.current_time() >= deadline:
                try:
                    return render(FetchResponse(topics))
                except OSError as exc:
                    if read_failed:
                        raise
                    read_failed = True
                    for topic, partition in slices:
                        self.replicas.read_failed(topic, partition, exc)
                    continue  # the failed log is offline now: answered KAFKA_STORAGE_ERROR
            moved = await self.replicas.wait_readable(partitions, deadline, follower=follower)

    def _read(
        self,
        request: FetchRequest,
        denials: dict[str, tuple[int, str]],
        reuse: list[FetchTopicResponse] | None = None,
        moved: set | None = None,
    ) -> _Read:
        """`reuse`: the answers of a read that found nothing, kept for every partition not in
        `moved`."""
        remaining = request.max_bytes if request.max_bytes > 0 else DEFAULT_MAX_BYTES
        total, failed = 0, False
        topics, slices = [], []
        follower = request.replica_id >= 0
        now_ms = self.monotonic_ms()
        for t, topic in enumerate(request.topics):
            answers = []
            for i, part in enumerate(topic.partitions):
                if reuse is not None and (topic.topic, part.partition) not in moved:
                    answers.append(reuse[t].partitions[i])
                    continue
                limit = min(part.partition_max_bytes or remaining, remaining)
                if topic.topic in denials:
                    code, text = denials[topic.topic]
                    answers.append(FetchPartitionResponse(part.partition, code, text))
                    failed = True
                    continue
                if follower:
                    result = self.replicas.read_for_follower(
                        topic.topic,
                        part.partition,
                        request.replica_id,
                        part.fetch_offset,
                        part.last_fetched_epoch,
                        part.current_leader_epoch,
                        limit,
                        now_ms,
                        broker_epoch=request.replica_epoch,
                        min_one_batch=total == 0,
                        unread=True,
                    )
                else:
                    result = self.replicas.read(
                        topic.topic,
                        part.partition,
                        part.fetch_offset,
                        limit,
                        current_leader_epoch=part.current_leader_epoch,
                        min_one_batch=total == 0,  # Kafka: only the first partition may overshoot
                        unread=True,
                        isolation_level=request.isolation_level,
                    )
                failed |= result.error_code != 0 or result.diverging_epoch is not None
                total += len(result.records)
                remaining = max(remaining - len(result.records), 0)
                answers.append(_answer(part.partition, result))
                if isinstance(result.records, FileSlice) and result.records.size:
                    slices.append((topic.topic, part.partition))
            topics.append(FetchTopicResponse(topic.topic, answers))
        return topics, total, failed, slices


def _answer(partition: int, result: FetchResult) -> FetchPartitionResponse:
    return FetchPartitionResponse(
        partition,
        result.error_code,
        result.error_message,
        result.high_watermark,
        # Kafka's LSO with no transaction open (or none known, a follower's): the high watermark.
        result.last_stable_offset if result.last_stable_offset >= 0 else result.high_watermark,
        result.log_start_offset,
        result.aborted_transactions,
        result.diverging_epoch,
        result.records,
    )
