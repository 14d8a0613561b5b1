"""ListOffsets, wire-neutral: Describe on each topic, then each partition's offset for a timestamp
(-1 latest, -2 earliest) from its leader. Nothing waits: `handle` is synchronous."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker.edge.request_limits import Refused
from broker.handlers import request_checks as checks
from broker.replication.replica_manager import READ_UNCOMMITTED, ReplicaManager
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from clients.grpc_server import ANONYMOUS, RequestContext
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R


@dataclass(frozen=True, slots=True)
class ListOffsetsPartition:
    partition: int
    timestamp: int  # -1 latest, -2 earliest, else a time in ms
    current_leader_epoch: int = -1  # -1: not checked


@dataclass(frozen=True, slots=True)
class ListOffsetsTopic:
    name: str
    partitions: Sequence[ListOffsetsPartition]


@dataclass(frozen=True, slots=True)
class ListOffsetsRequest:
    topics: Sequence[ListOffsetsTopic]
    isolation_level: int = READ_UNCOMMITTED  # read_committed: "latest" is the LSO


@dataclass(frozen=True, slots=True)
class ListOffsetsPartitionResponse:
    partition: int
    error_code: int = 0
    error_message: str = ""
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ListOffsetsTopicResponse:
    name: str
    partitions: list[ListOffsetsPartitionResponse]


@dataclass(frozen=True, slots=True)
class ListOffsetsResponse:
    topics: list[ListOffsetsTopicResponse]


class ListOffsetsHandler:
    def __init__(self, replicas: ReplicaManager, *, authorizer: RequestAuthorizer = OPEN) -> None:
        self.replicas = replicas
        self.authz = authorizer

    def handle(
        self, request: ListOffsetsRequest, who: RequestContext = ANONYMOUS
    ) -> ListOffsetsResponse:
        try:
            checks.ListOffsets(request)
        except Refused as refused:  # every partition answers the refusal
            return ListOffsetsResponse(
                [
                    ListOffsetsTopicResponse(
                        t.name,
                        [
                            ListOffsetsPartitionResponse(p.partition, refused.code, refused.message)
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ]
            )
        topics = []
        for topic in request.topics:
            answers = []
            denial = self.authz.denial(Op.DESCRIBE, R.TOPIC, topic.name, who)
            for part in topic.partitions:
                if denial is not None:
                    answers.append(ListOffsetsPartitionResponse(part.partition, *denial))
                    continue
                r = self.replicas.list_offset(
                    topic.name,
                    part.partition,
                    part.timestamp,
                    part.current_leader_epoch,
                    request.isolation_level,
                )
                answers.append(
                    ListOffsetsPartitionResponse(
                        part.partition,
                        r.error_code,
                        r.error_message,
                        r.timestamp,
                        r.offset,
                        r.leader_epoch,
                    )
                )
            topics.append(ListOffsetsTopicResponse(topic.name, answers))
        return ListOffsetsResponse(topics)
