"""WriteTxnMarkers, the partition side of ending a transaction: a transaction coordinator (some
node) has each partition's leader append the COMMIT or ABORT marker and waits for acks=all.

As Kafka: only a node may send it (ClusterAction on the cluster); each partition is answered on
its own (NOT_LEADER_OR_FOLLOWER and the like: the coordinator retries where the leader moved).
A marker committed into `__consumer_offsets` also ends the producer's pending transactional
offset commits: the group coordinators hear of it through `on_offsets_marker`.

How long the answer waits: each marker until its partition commits it. A partition whose
in-sync replicas include one that stopped fetching commits nothing until replica.lag.time.max.ms
(30 s) drops that replica, and the request used to wait that long (up to 30 s, the coordinator's
own request timeout, which could expire first and lose every partition's answer). So the wait is
bounded by MARKER_TIMEOUT_MS, well under the coordinator's request timeout: the partitions
committed by then answer NONE, the others REQUEST_TIMED_OUT, which the coordinator retries
(markers.py). The retry does not write a second marker while the first is still waiting to
commit: it waits for that one, and answers as soon as it is committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from broker.group.records import OFFSETS_TOPIC
from broker.replication.replica_manager import ProduceResult, ReplicaManager
from broker.security.request_authorizer import RequestAuthorizer
from clients.errors import ErrorCode
from clients.wire import broker_pb2 as pb

log = logging.getLogger(__name__)

# The longest one WriteTxnMarkers waits for its markers' acks=all: well under the coordinator's
# request timeout (markers.REQUEST_TIMEOUT_S), so its answer always arrives.
MARKER_TIMEOUT_MS = 5_000
# Markers written but not committed when their request was answered, kept for the retry: a
# bound, so a coordinator that never retries (it moved) cannot grow this without end.
MAX_UNANSWERED = 10_000

# (topic, partition, producer id, producer epoch, committed, coordinator epoch): one marker.
MarkerKey = tuple[str, int, int, int, bool, int]

# (partition of __consumer_offsets, producer id, producer epoch, committed, marker offset)
OffsetsMarkerHook = Callable[[int, int, int, bool, int], None]


class TxnMarkerWriter:
    def __init__(
        self,
        replicas: ReplicaManager,
        authorizer: RequestAuthorizer,
        on_offsets_marker: OffsetsMarkerHook,
        *,
        clock_ms: Callable[[], int],
        timeout_ms: int = MARKER_TIMEOUT_MS,
    ) -> None:
        self.replicas = replicas
        self.authz = authorizer
        self.on_offsets_marker = on_offsets_marker
        self.clock_ms = clock_ms
        self.timeout_ms = timeout_ms
        # Markers answered REQUEST_TIMED_OUT: where they are (ProduceResult), for the retry.
        self._unanswered: dict[MarkerKey, ProduceResult] = {}

    async def write_txn_markers(
        self, request: pb.WriteTxnMarkersRequest
    ) -> pb.WriteTxnMarkersResponse:
        response = pb.WriteTxnMarkersResponse()
        denial = self.authz.node_call_denial()
        now_ms = self.clock_ms()
        waiting = []
        for marker in request.markers:
            answers = response.markers.add(producer_id=marker.producer_id).partitions
            for tp in marker.topics:
                for partition in tp.partitions:
                    # add(): the answer is filled in place after the acks=all wait.
                    answer = answers.add(topic=tp.topic, partition=partition)
                    if denial is not None:
                        answer.error_code, answer.error_message = denial
                        continue
                    key = (
                        tp.topic,
                        partition,
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.committed,
                        marker.coordinator_epoch,
                    )
                    result = self._written_before(key) or self.replicas.append_txn_marker(
                        *key, now_ms
                    )
                    if result.error_code != ErrorCode.NONE:
                        answer.error_code = result.error_code
                        answer.error_message = result.error_message
                        continue
                    waiting.append((key, marker, answer, result))
        if waiting:
            deadline = trio.current_time() + self.timeout_ms / 1000
            async with trio.open_nursery() as nursery:
                for key, marker, answer, result in waiting:
                    nursery.start_soon(self._wait, key, marker, answer, result, deadline)
        return response

    def _written_before(self, key: MarkerKey) -> ProduceResult | None:
        """The same marker, written for an earlier request answered before it committed: still
        this leader's to commit (or committed since), so the retry waits for it rather than
        write it again. None: write it (never written, or the leader moved since)."""
        result = self._unanswered.pop(key, None)
        if result is None:
            return None
        topic, partition = key[0], key[1]
        state = self.replicas.acks_satisfied(
            topic, partition, result.last_offset, result.leader_epoch
        )
        return result if state in (None, ErrorCode.NONE) else None

    async def _wait(
        self,
        key: MarkerKey,
        marker: pb.TxnMarker,
        answer: pb.TxnMarkerPartitionResult,
        result: ProduceResult,
        deadline: float,
    ) -> None:
        where = f"{answer.topic}-{answer.partition}"
        code = await self.replicas.wait_committed(
            answer.topic, answer.partition, result.last_offset, result.leader_epoch, deadline
        )
        if code is None:
            if len(self._unanswered) >= MAX_UNANSWERED:
                self._unanswered.pop(next(iter(self._unanswered)))  # the oldest
            self._unanswered[key] = result
            answer.error_code = ErrorCode.REQUEST_TIMED_OUT
            answer.error_message = (
                f"{where}: the marker at offset {result.base_offset} was not "
                f"replicated to every in-sync replica within "
                f"{self.timeout_ms} ms; retry (the retry waits for this marker)"
            )
            return
        if code != ErrorCode.NONE:
            answer.error_code = code
            answer.error_message = (
                f"{where}: the marker at offset {result.base_offset} was "
                f"written but not committed ({code.name}); retry"
            )
            return
        if answer.topic == OFFSETS_TOPIC:
            try:
                self.on_offsets_marker(
                    answer.partition,
                    marker.producer_id,
                    marker.producer_epoch,
                    marker.committed,
                    result.base_offset,
                )
            except Exception as exc:  # the marker stands; the coordinator retries it
                log.exception(
                    "%s: applying the marker of producer %d to the group coordinator failed",
                    where,
                    marker.producer_id,
                )
                answer.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
                answer.error_message = (
                    f"{where}: the marker is committed but the group "
                    f"coordinator failed to apply it ({exc}); retry"
                )
