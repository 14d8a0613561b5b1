"""The Broker gRPC service (Metadata, Produce, Fetch, ListOffsets): protobuf in and out at this
edge, the replica manager inside. Fetch long-polls until min_bytes arrive or max_wait_ms passes."""
from __future__ import annotations

import time
from typing import Callable

import trio

from broker.replica_manager import ACKS_ALL, ReplicaManager
from broker.topic_admin import TopicAdmin
from clients.errors import ErrorCode, KraftError
from clients.topics import topic_name_problem
from clients.wire import broker_pb2 as pb

METHODS = ["Metadata", "Produce", "Fetch", "ListOffsets"]
MAX_WAIT_MS_LIMIT = 60_000


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class BrokerServicer:
    def __init__(self, replicas: ReplicaManager, admin: TopicAdmin, *, node_id: int, host: str,
                 port: int, cluster_id: str, rack: str = "", auto_create: bool = True,
                 clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        self.replicas = replicas
        self.admin = admin
        self.node = pb.BrokerNode(node_id=node_id, host=host, port=port, rack=rack)
        self.cluster_id = cluster_id
        self.auto_create = auto_create
        self.clock_ms = clock_ms
        # Fetches waiting for data park here; every successful append wakes them to re-check.
        self._appended = trio.lowlevel.ParkingLot()

    # -- Metadata ----------------------------------------------------------------------------
    async def Metadata(self, request: pb.MetadataRequest) -> pb.MetadataResponse:
        names = self.admin.store.names() if request.all_topics or not request.topics else list(request.topics)
        topics = [self._topic_metadata(name, request.allow_auto_topic_creation) for name in names]
        return pb.MetadataResponse(brokers=[self.node], controller_id=self.node.node_id,
                                   cluster_id=self.cluster_id, topics=topics)

    def _topic_metadata(self, name: str, allow_auto_create: bool) -> pb.TopicMetadata:
        problem = topic_name_problem(name)
        if problem:
            return pb.TopicMetadata(name=name, error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, error_message=problem)
        info = self.admin.store.get(name)
        if info is None and allow_auto_create and self.auto_create:
            try:
                info = self.admin.create_topic(name)
            except KraftError as exc:
                return pb.TopicMetadata(name=name, error_code=exc.code, error_message=exc.message)
        if info is None:
            return pb.TopicMetadata(
                name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message=f"topic '{name}' does not exist; create it with: kraft topic create {name}")
        node_id = self.node.node_id
        partitions = []
        for p in range(info.num_partitions):
            hosted = self.replicas.get(name, p)
            partitions.append(pb.PartitionMetadata(
                partition=p, leader=node_id if hosted else -1,
                leader_epoch=hosted.leader_epoch if hosted else -1, replicas=[node_id],
                isr=[node_id] if hosted else []))
        return pb.TopicMetadata(name=name, is_internal=name.startswith("__"), partitions=partitions)

    # -- Produce -----------------------------------------------------------------------------
    async def Produce(self, request: pb.ProduceRequest) -> pb.ProduceResponse:
        acks = request.acks
        now_ms = self.clock_ms()
        appended = False
        topics = []
        for topic in request.topics:
            answers = []
            for part in topic.partitions:
                if acks not in (0, 1, ACKS_ALL):
                    answers.append(pb.PartitionProduceResponse(
                        partition=part.partition, error_code=ErrorCode.INVALID_REQUIRED_ACKS,
                        error_message=f"acks={acks}: use 0, 1 or -1 (all)"))
                    continue
                result = self.replicas.append(topic.name, part.partition, part.records, acks, now_ms)
                appended |= result.error_code == 0
                answers.append(pb.PartitionProduceResponse(
                    partition=part.partition, error_code=result.error_code,
                    error_message=result.error_message, base_offset=result.base_offset,
                    log_append_time_ms=result.log_append_time, log_start_offset=result.log_start_offset))
            topics.append(pb.TopicProduceResponse(name=topic.name, partitions=answers))
        if appended:
            self._appended.unpark_all()
        return pb.ProduceResponse(topics=topics)

    # -- Fetch -------------------------------------------------------------------------------
    async def Fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        max_wait_s = min(max(request.max_wait_ms, 0), MAX_WAIT_MS_LIMIT) / 1000
        deadline = trio.current_time() + max_wait_s
        while True:
            response, size, failed = self._read(request)
            if size >= max(request.min_bytes, 1) or failed or trio.current_time() >= deadline:
                return response
            with trio.move_on_at(deadline):
                await self._appended.park()

    def _read(self, request: pb.FetchRequest) -> tuple[pb.FetchResponse, int, bool]:
        remaining = request.max_bytes if request.max_bytes > 0 else 50 * 1024 * 1024
        total, failed = 0, False
        topics = []
        for topic in request.topics:
            answers = []
            for part in topic.partitions:
                limit = min(part.partition_max_bytes or remaining, remaining)
                result = self.replicas.read(
                    topic.topic, part.partition, part.fetch_offset, limit,
                    replica_id=request.replica_id, current_leader_epoch=part.current_leader_epoch,
                    min_one_batch=total == 0)   # Kafka: only the first partition may overshoot
                failed |= result.error_code != 0
                total += len(result.records)
                remaining = max(remaining - len(result.records), 0)
                answers.append(pb.FetchPartitionResponse(
                    partition=part.partition, error_code=result.error_code,
                    error_message=result.error_message, high_watermark=result.high_watermark,
                    last_stable_offset=result.high_watermark, log_start_offset=result.log_start_offset,
                    records=result.records))
            topics.append(pb.FetchTopicResponse(topic=topic.topic, partitions=answers))
        return pb.FetchResponse(topics=topics), total, failed

    # -- ListOffsets -------------------------------------------------------------------------
    async def ListOffsets(self, request: pb.ListOffsetsRequest) -> pb.ListOffsetsResponse:
        topics = []
        for topic in request.topics:
            answers = []
            for part in topic.partitions:
                r = self.replicas.list_offset(topic.name, part.partition, part.timestamp,
                                              part.current_leader_epoch)
                answers.append(pb.ListOffsetsPartitionResponse(
                    partition=part.partition, error_code=r.error_code, error_message=r.error_message,
                    timestamp=r.timestamp, offset=r.offset, leader_epoch=r.leader_epoch))
            topics.append(pb.ListOffsetsTopicResponse(name=topic.name, partitions=answers))
        return pb.ListOffsetsResponse(topics=topics)
