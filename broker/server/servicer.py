"""The Broker gRPC service (Metadata, Produce, Fetch, ListOffsets; WriteTxnMarkers is
txn_markers.py's): protobuf in and out at this edge, the replica manager inside. Fetch long-polls
until min_bytes arrive or max_wait_ms passes."""
from __future__ import annotations

import logging
import time
from typing import Callable

import trio

from broker.metadata.publisher import BrokerMetadata
from broker.controller.channel import ControllerChannel
from broker.replication.describe_partitions import describe_partitions
from broker.idempotence.producer_ids import ProducerIdBlocks, init_producer_id
from broker.replication.replica_manager import ACKS_ALL, ReplicaManager
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.security.node_trust import refuse_unless_node
from broker.server import request_checks as checks
from broker.server.request_limits import MAX_NAME_LENGTH, Refused, check_length, checked
from broker.server.fetch_response import serialize_fetch_response
from broker.transaction.servicer import TransactionServicer
from broker.transaction.verification import (TxnVerifier, is_transactional, refusal,
                                             verify_openings)
from broker.transaction.wire import message as txn_message
from broker.server.txn_markers import TxnMarkerWriter
from broker.server.produce_request import ProduceData, parse_produce_request
from clients.errors import ErrorCode, KraftError
from clients.grpc_server import parses_request, request_context
from clients.topics import INTERNAL_TOPICS, creatable_topic_problem, topic_name_problem
from clients.wire import broker_pb2 as pb
from kraft.controller.messages import CreatableTopic, CreateTopicsRequest
from kraft.log.file_slice import FileSlice
from kraft.metadata.image import MetadataImage
from kraft.security.acl import Operation as Op, ResourceType as R

log = logging.getLogger(__name__)

MAX_WAIT_MS_LIMIT = 60_000
AUTO_CREATE_TIMEOUT_S = 10.0
DEFAULT_PRODUCE_TIMEOUT_MS = 30_000     # Kafka's request.timeout.ms


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class BrokerServicer:
    def __init__(self, replicas: ReplicaManager, metadata: BrokerMetadata, channel: ControllerChannel,
                 *, cluster_id: str, producer_ids: ProducerIdBlocks | None = None,
                 auto_create: bool = True, controller_id: Callable[[], int | None] = lambda: None,
                 clock_ms: Callable[[], int] = wall_clock_ms,
                 monotonic_ms: Callable[[], int] = lambda: int(time.monotonic() * 1000),
                 authorizer: RequestAuthorizer = OPEN,
                 transactions: TransactionServicer | None = None,
                 txn_markers: TxnMarkerWriter | None = None,
                 verifier: TxnVerifier | None = None) -> None:
        """`transactions` answers InitProducerId with a transactional id (none: refused).
        `verifier` checks a transaction's first batch on a partition with its coordinator
        (broker/transaction/verification.py; none: not checked)."""
        self.replicas = replicas
        self.transactions = transactions
        self.verifier = verifier
        self.txn_markers = txn_markers
        self.authz = authorizer
        self.monotonic_ms = monotonic_ms   # replication timing: immune to wall-clock steps
        self.metadata = metadata
        self.channel = channel
        self.producer_ids = producer_ids
        self.cluster_id = cluster_id
        self.auto_create = auto_create
        self.controller_id = controller_id
        self.clock_ms = clock_ms

    # -- Metadata ----------------------------------------------------------------------------
    async def Metadata(self, request: pb.MetadataRequest) -> pb.MetadataResponse:
        image = self.metadata.image
        authz = self.authz
        if request.all_topics or not request.topics:
            # Kafka lists only the topics the principal may Describe.
            names = [n for n in sorted(image.topics_by_name)
                     if authz.allowed(Op.DESCRIBE, R.TOPIC, n)]
        else:
            names = list(request.topics)
        refused = {}
        for n in names:
            denial = authz.denial(Op.DESCRIBE, R.TOPIC, n)
            if denial is None and image.topic(n) is None and request.allow_auto_topic_creation \
                    and self.auto_create and not authz.allowed(Op.CREATE, R.CLUSTER):
                denial = authz.denial(Op.CREATE, R.TOPIC, n)
            if denial is not None:
                refused[n] = pb.TopicMetadata(name=n, error_code=denial[0], error_message=denial[1])
        if request.allow_auto_topic_creation and self.auto_create:
            missing = [n for n in names if image.topic(n) is None
                       and not creatable_topic_problem(n) and n not in refused]
            created = await self._auto_create(missing) if missing else {}
        else:
            created = {}
        created.update(refused)
        image = self.metadata.image
        topics = [created.get(name) or self._topic_metadata(image, name) for name in names]
        # Kafka's rule: a client learns each broker's endpoint on the listener it came in on.
        listener = request_context().listener
        brokers = [pb.BrokerNode(node_id=b.broker_id, rack=b.rack or "",
                                 **dict(zip(("host", "port"),
                                            b.endpoint(listener) or (b.host, b.port))))
                   for b in image.live_brokers()]
        controller = self.controller_id()
        return pb.MetadataResponse(brokers=brokers,
                                   controller_id=-1 if controller is None else controller,
                                   cluster_id=self.cluster_id, topics=topics)

    async def _auto_create(self, names: list[str]) -> dict[str, pb.TopicMetadata]:
        """Create missing topics with the cluster's defaults (Kafka's auto.create.topics.enable)
        and wait until this broker's image has them; failures become per-topic errors."""
        request = CreateTopicsRequest(tuple(CreatableTopic(n) for n in names))
        try:
            response, offset = await self.channel.send_with_offset(request, AUTO_CREATE_TIMEOUT_S)
        except KraftError as exc:
            return {n: pb.TopicMetadata(name=n, error_code=exc.code, error_message=exc.message)
                    for n in names}
        failed = {}
        for result in response.topics:
            if result.error_code == ErrorCode.NONE:
                # A typo in a producer's topic name lands here too: say so, once per topic
                # (only the request that created it sees NONE), with how to turn it off.
                log.warning("created topic '%s' because a client asked for it and "
                            "auto.create.topics.enable=true; set auto.create.topics.enable=false "
                            "to refuse unknown topics instead", result.name)
            elif result.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                failed[result.name] = pb.TopicMetadata(name=result.name, error_code=result.error_code,
                                                       error_message=result.error_message)
        await self.metadata.wait_for(lambda image: all(image.topic(n) is not None
                                                       for n in names if n not in failed),
                                     AUTO_CREATE_TIMEOUT_S)
        return failed

    def _topic_metadata(self, image: MetadataImage, name: str) -> pb.TopicMetadata:
        problem = topic_name_problem(name)
        if problem:
            return pb.TopicMetadata(name=name, error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, error_message=problem)
        topic = image.topic(name)
        if topic is None and creatable_topic_problem(name):
            return pb.TopicMetadata(
                name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message=f"topic '{name}' does not exist; {creatable_topic_problem(name)}")
        if topic is None:
            return pb.TopicMetadata(
                name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message=f"topic '{name}' does not exist; create it with: kraft topic create {name}")
        partitions = []
        for p, reg in sorted(topic.partitions.items()):
            partitions.append(pb.PartitionMetadata(
                partition=p, leader=reg.leader, leader_epoch=reg.leader_epoch,
                replicas=list(reg.replicas), isr=list(reg.isr),
                offline_replicas=[b for b in reg.replicas
                                  if not image.can_serve(b, topic.topic_id, p)],
                error_code=0 if reg.has_leader else ErrorCode.LEADER_NOT_AVAILABLE,
                error_message="" if reg.has_leader else
                f"{name}-{p} has no live leader (replicas {list(reg.replicas)} are fenced, down "
                "or offline)"))
        return pb.TopicMetadata(name=name, topic_id=topic.topic_id, is_internal=name.startswith("__"),
                                partitions=partitions)

    # -- Produce -----------------------------------------------------------------------------
    async def Produce(self, request: pb.ProduceRequest) -> pb.ProduceResponse:
        """The message, for in-process callers; the gRPC server serves `produce_serialized`."""
        return await self._produce(ProduceData.from_message(request))

    @parses_request(parse_produce_request)
    async def produce_serialized(self, request: ProduceData) -> bytes:
        """Produce from the request's wire bytes: each partition's records reach the log as a
        view of the request (produce_request.py), not as protobuf's two copies."""
        return (await self._produce(request)).SerializeToString()

    async def produce(self, request: ProduceData, *,
                      appended: Callable[[], None] = lambda: None) -> pb.ProduceResponse:
        """For another wire (the Kafka listener): `appended()` is called once every partition's
        append is done, before any acks=all wait, so a connection may read its next request
        knowing this one's records are in the log in the order sent."""
        return await self._produce(request, appended)

    async def _produce(self, request: ProduceData,
                       appended: Callable[[], None] = lambda: None) -> pb.ProduceResponse:
        acks = request.acks
        txn_id = request.transactional_id
        txn_denial = self._transactional_denial(request)
        checked = {} if not txn_id or txn_denial or self.verifier is None else await verify_openings(
            self.verifier, self.replicas, txn_id, request.topics,
            lambda topic: (topic not in INTERNAL_TOPICS
                           and self.authz.denial(Op.WRITE, R.TOPIC, topic) is None))
        # No await from here to the appends: a verdict above holds only until a marker is met.
        now_ms = self.clock_ms()
        response = pb.ProduceResponse()
        waiting = []     # acks=all answers still waiting for the high watermark
        for topic in request.topics:
            # Answers are made in place with add(): protobuf copies a message handed to a
            # constructor or append, so an error set on the original after the acks=all wait
            # would never reach the producer (it would read success at an offset since lost).
            answers = response.topics.add(name=topic.name).partitions
            denial = self.authz.denial(Op.WRITE, R.TOPIC, topic.name)
            for part in topic.partitions:
                if topic.name in INTERNAL_TOPICS:
                    # Only the brokers write them, by their own paths; a client's bytes in
                    # __consumer_offsets would be replayed as group state by every future
                    # coordinator. Refused whatever the ACLs say.
                    answers.add(partition=part.partition,
                                error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
                                error_message=f"{topic.name} is internal: only brokers write it "
                                              "(commit offsets through a consumer group)")
                    continue
                if denial is not None or txn_denial is not None:
                    code, message = denial or txn_denial
                    answers.add(partition=part.partition, error_code=code, error_message=message)
                    continue
                if acks not in (0, 1, ACKS_ALL):
                    answers.add(partition=part.partition, error_code=ErrorCode.INVALID_REQUIRED_ACKS,
                                error_message=f"acks={acks}: use 0, 1 or -1 (all)")
                    continue
                verdict = checked.get((topic.name, part.partition))
                refused = verdict and refusal(self.replicas, txn_id, topic.name, part.partition,
                                              verdict)
                if refused:
                    answers.add(partition=part.partition, error_code=refused[0],
                                error_message=refused[1])
                    continue
                result = self.replicas.append(topic.name, part.partition, part.records, acks, now_ms)
                answer = answers.add(
                    partition=part.partition, error_code=result.error_code,
                    error_message=result.error_message, base_offset=result.base_offset,
                    log_append_time_ms=result.log_append_time, log_start_offset=result.log_start_offset)
                if result.error_code == 0 and acks == ACKS_ALL and result.last_offset >= 0:
                    waiting.append((topic.name, result, answer))
        appended()
        if waiting:
            timeout_ms = request.timeout_ms if request.timeout_ms > 0 else DEFAULT_PRODUCE_TIMEOUT_MS
            async with trio.open_nursery() as nursery:
                for topic, result, answer in waiting:
                    nursery.start_soon(self._wait_for_acks, topic, result, answer, timeout_ms)
        else:
            # One scheduling round before the answer: the fetches this append woke (consumers'
            # long polls, followers') get to answer first, so the record reaches them sooner and
            # the producer's acks=1 answer waits a round (bench e2e at 2,000 records/s, one
            # node: p50 3.01 -> 2.83 ms, four pairs). Shielded: the append is done either way.
            await trio.lowlevel.cancel_shielded_checkpoint()
        return response

    def _transactional_denial(self, request: ProduceData) -> tuple[int, str] | None:
        """Kafka's check of a Produce carrying transactional records: Write on its transactional
        id (without it a producer could slip batches into another's transaction). With ACLs on,
        transactional records with no transactional id are refused too; with none, they are
        taken as before (tests write transactions by hand that way). An id longer than any a
        coordinator takes is refused whatever the records."""
        if not request.transactional_id and not self.authz.enabled:
            return None     # the common case: no batch header need be looked at
        try:
            check_length("transactional_id", request.transactional_id, MAX_NAME_LENGTH)
        except Refused as exc:
            return exc.code, exc.message
        if not any(is_transactional(p.records) for t in request.topics for p in t.partitions):
            return None
        if request.transactional_id:
            return self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, request.transactional_id)
        if self.authz.enabled:
            return (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "transactional records need their producer's transactional id in the "
                    "Produce request (a transactional producer sends it): refused")
        return None

    async def _wait_for_acks(self, topic: str, result, answer, timeout_ms: int) -> None:
        """acks=all: answer the batch once the high watermark has passed it (every ISR member
        has it), with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR fell below
        min.insync.replicas, or REQUEST_TIMED_OUT after the producer's timeout."""
        deadline = trio.current_time() + min(timeout_ms, MAX_WAIT_MS_LIMIT) / 1000
        code = await self.replicas.wait_committed(topic, answer.partition, result.last_offset,
                                                  result.leader_epoch, deadline)
        if code is None:
            answer.error_code = ErrorCode.REQUEST_TIMED_OUT
            answer.error_message = (
                f"{topic}-{answer.partition}: the in-sync replicas did not all fetch offset "
                f"{result.last_offset} within {timeout_ms} ms; retry")
        elif code != ErrorCode.NONE:
            answer.error_code = code
            answer.error_message = (
                f"{topic}-{answer.partition}: written at offset {result.base_offset} but "
                f"not acknowledged by every in-sync replica ({code.name}); it may or may "
                "not be committed: retry (an idempotent producer makes the retry safe)")

    # -- Fetch -------------------------------------------------------------------------------
    async def Fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        """The message, for in-process callers; the gRPC server serves `fetch_serialized`."""
        return pb.FetchResponse.FromString(await self.fetch_serialized(request))

    @checked(checks.Fetch, lambda _, refused: pb.FetchResponse(
        error_code=refused.code, error_message=refused.message).SerializeToString())
    async def fetch_serialized(self, request: pb.FetchRequest) -> bytes:
        """The serialized FetchResponse, its records read from the segment files straight into
        it (fetch_response.py): a fetched byte is copied once in user space, not four times."""
        return await self.fetch_with(request, serialize_fetch_response)

    async def fetch_with(self, request: pb.FetchRequest, serialize: Callable[[list], object]):
        """The Fetch, its answer made by `serialize(topics)` (topics as serialize_fetch_response
        takes them), called with no await since the read, so its FileSlices are still valid;
        another wire (the Kafka listener) makes its own answer there. Unchecked: callers run
        request_checks.Fetch first. An OSError from `serialize` takes the logs read offline."""
        if request.replica_id >= 0:
            problem = refuse_unless_node(request.replica_id, "fetch as a follower")
            if problem is not None:
                return pb.FetchResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                        error_message=problem).SerializeToString()
        max_wait_s = min(max(request.max_wait_ms, 0), MAX_WAIT_MS_LIMIT) / 1000
        deadline = trio.current_time() + max_wait_s
        partitions = [(t.topic, p.partition) for t in request.topics for p in t.partitions]
        if request.replica_id >= 0:     # a follower: only nodes may replicate
            denials = dict.fromkeys({t.topic for t in request.topics},
                                    self.authz.node_call_denial())
        else:
            denials = {t.topic: self.authz.denial(Op.READ, R.TOPIC, t.topic)
                       for t in request.topics}
        denials = {topic: d for topic, d in denials.items() if d is not None}
        read_failed = False
        moved = None
        topics = None
        while True:
            # After a wake by some of the partitions, with nothing read before, only those are
            # read again: the others' answers (no records; their high watermark, leadership and
            # log end would have woken us) still hold. A follower fetching dozens of partitions
            # (__consumer_offsets) otherwise re-read every one of them on each append it waited
            # for, on the acks=all path. The deadline, or any data, reads everything again.
            reuse = topics if moved and size == 0 else None
            topics, size, failed, slices = self._read(request, denials, reuse, moved)
            if size >= max(request.min_bytes, 1) or failed or trio.current_time() >= deadline:
                # No await between the read and here: no task can truncate or delete a segment
                # before its FileSlices are read.
                try:
                    return serialize(topics)
                except OSError as exc:
                    if read_failed:
                        raise
                    read_failed = True
                    for topic, partition in slices:
                        self.replicas.read_failed(topic, partition, exc)
                    continue    # the failed log is offline now: answered KAFKA_STORAGE_ERROR
            moved = await self.replicas.purgatory.wait_which_moved(
                partitions, deadline, log_end=request.replica_id >= 0)

    def _read(self, request: pb.FetchRequest, denials: dict[str, tuple[int, str]],
              reuse: list | None = None, moved: set | None = None) -> tuple[list, int, bool, list]:
        """(what serialize_fetch_response takes, bytes, whether a partition failed, the
        (topic, partition) of each FileSlice to read: the ones to take offline if reading fails).
        `reuse`: the answers of a read that found nothing, kept for every partition not in
        `moved`."""
        remaining = request.max_bytes if request.max_bytes > 0 else 50 * 1024 * 1024
        total, failed = 0, False
        topics, slices = [], []
        follower = request.replica_id >= 0
        now_ms = self.monotonic_ms()
        for t, topic in enumerate(request.topics):
            answers = []
            for i, part in enumerate(topic.partitions):
                if reuse is not None and (topic.topic, part.partition) not in moved:
                    answers.append(reuse[t][1][i])
                    continue
                limit = min(part.partition_max_bytes or remaining, remaining)
                if topic.topic in denials:
                    code, text = denials[topic.topic]
                    answers.append((pb.FetchPartitionResponse(
                        partition=part.partition, error_code=code,
                        error_message=text).SerializeToString(), b""))
                    failed = True
                    continue
                if follower:
                    result = self.replicas.read_for_follower(
                        topic.topic, part.partition, request.replica_id, part.fetch_offset,
                        part.last_fetched_epoch, part.current_leader_epoch, limit, now_ms,
                        broker_epoch=request.replica_epoch,
                        min_one_batch=total == 0, unread=True)
                else:
                    result = self.replicas.read(
                        topic.topic, part.partition, part.fetch_offset, limit,
                        current_leader_epoch=part.current_leader_epoch,
                        min_one_batch=total == 0,   # Kafka: only the first partition may overshoot
                        unread=True, isolation_level=request.isolation_level)
                failed |= result.error_code != 0 or result.diverging_epoch is not None
                total += len(result.records)
                remaining = max(remaining - len(result.records), 0)
                # Serialized without its records: fetch_response.py appends them in place.
                answer = pb.FetchPartitionResponse(
                    partition=part.partition, error_code=result.error_code,
                    error_message=result.error_message, high_watermark=result.high_watermark,
                    last_stable_offset=(result.last_stable_offset if result.last_stable_offset >= 0
                                        else result.high_watermark),
                    log_start_offset=result.log_start_offset,
                    aborted_transactions=[pb.AbortedTransaction(producer_id=t.producer_id,
                                                                first_offset=t.first_offset)
                                          for t in result.aborted_transactions])
                if result.diverging_epoch is not None:
                    answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset = \
                        result.diverging_epoch
                answers.append((answer.SerializeToString(), result.records))
                if isinstance(result.records, FileSlice) and result.records.size:
                    slices.append((topic.topic, part.partition))
            topics.append((pb.FetchTopicResponse(topic=topic.topic).SerializeToString(), answers))
        return topics, total, failed, slices

    # -- ListOffsets -------------------------------------------------------------------------
    @checked(checks.ListOffsets, checks.refuse_list_offsets)
    async def ListOffsets(self, request: pb.ListOffsetsRequest) -> pb.ListOffsetsResponse:
        topics = []
        for topic in request.topics:
            answers = []
            denial = self.authz.denial(Op.DESCRIBE, R.TOPIC, topic.name)
            for part in topic.partitions:
                if denial is not None:
                    answers.append(pb.ListOffsetsPartitionResponse(
                        partition=part.partition, error_code=denial[0], error_message=denial[1],
                        offset=-1))
                    continue
                r = self.replicas.list_offset(topic.name, part.partition, part.timestamp,
                                              part.current_leader_epoch, request.isolation_level)
                answers.append(pb.ListOffsetsPartitionResponse(
                    partition=part.partition, error_code=r.error_code, error_message=r.error_message,
                    timestamp=r.timestamp, offset=r.offset, leader_epoch=r.leader_epoch))
            topics.append(pb.ListOffsetsTopicResponse(name=topic.name, partitions=answers))
        return pb.ListOffsetsResponse(topics=topics)

    # -- InitProducerId (idempotent producers) ------------------------------------------------
    @checked(checks.InitProducerId, checks.refuse_init_producer_id)
    async def InitProducerId(self, request: pb.InitProducerIdRequest) -> pb.InitProducerIdResponse:
        if request.transactional_id:
            denial = self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, request.transactional_id)
        elif self.authz.allowed(Op.IDEMPOTENT_WRITE, R.CLUSTER) \
                or self.authz.allowed_any(Op.WRITE, R.TOPIC):
            denial = None       # Kafka: IdempotentWrite on the cluster, or Write on any topic
        else:
            denial = self.authz.denial(Op.IDEMPOTENT_WRITE, R.CLUSTER)
        if denial is not None:
            return pb.InitProducerIdResponse(error_code=denial[0], error_message=denial[1],
                                             producer_id=-1, producer_epoch=-1)
        if request.transactional_id:
            return await self._init_transactional(request)
        try:
            pid, epoch = await init_producer_id(
                self.producer_ids,
                request.producer_id if request.HasField("producer_id") else None,
                request.producer_epoch if request.HasField("producer_epoch") else None)
        except KraftError as exc:
            return pb.InitProducerIdResponse(error_code=exc.code, error_message=exc.message,
                                             producer_id=-1, producer_epoch=-1)
        return pb.InitProducerIdResponse(producer_id=pid, producer_epoch=epoch)

    async def _init_transactional(self, request: pb.InitProducerIdRequest
                                  ) -> pb.InitProducerIdResponse:
        """To the transaction coordinator of the id (NOT_COORDINATOR if it is not this broker)."""
        if self.transactions is None:
            return pb.InitProducerIdResponse(
                error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1, producer_epoch=-1,
                error_message="this node coordinates no transactions")

        async def new_producer_id() -> int:
            return (await init_producer_id(self.producer_ids, None, None))[0]
        try:
            answer = await self.transactions.init_producer_id(
                request.transactional_id, request.transaction_timeout_ms,
                request.producer_id if request.HasField("producer_id") else -1,
                request.producer_epoch if request.HasField("producer_epoch") else -1,
                new_producer_id)
        except KraftError as exc:       # no producer id block from the controller right now
            return pb.InitProducerIdResponse(error_code=exc.code, error_message=exc.message,
                                             producer_id=-1, producer_epoch=-1)
        return pb.InitProducerIdResponse(error_code=answer.error,
                                         error_message=txn_message(answer.error, answer.message),
                                         producer_id=answer.producer_id,
                                         producer_epoch=answer.producer_epoch)

    # -- WriteTxnMarkers (from a transaction coordinator) ----------------------------------------
    @checked(checks.WriteTxnMarkers, checks.refuse_write_txn_markers)
    async def WriteTxnMarkers(self, request: pb.WriteTxnMarkersRequest
                              ) -> pb.WriteTxnMarkersResponse:
        if self.txn_markers is not None:
            return await self.txn_markers.write_txn_markers(request)
        response = pb.WriteTxnMarkersResponse()
        for marker in request.markers:
            answers = response.markers.add(producer_id=marker.producer_id).partitions
            for tp in marker.topics:
                for partition in tp.partitions:
                    answers.add(topic=tp.topic, partition=partition,
                                error_code=ErrorCode.UNSUPPORTED_VERSION,
                                error_message="this broker writes no transaction markers")
        return response

    # -- DescribePartitions (kraft topic describe: high watermarks and replica log ends) ---------
    async def DescribePartitions(self, request: pb.DescribePartitionsRequest
                                 ) -> pb.DescribePartitionsResponse:
        out = describe_partitions(self.replicas, request)
        if self.authz.enabled:      # only the partitions of topics the caller may Describe
            kept = [p for p in out.partitions if self.authz.allowed(Op.DESCRIBE, R.TOPIC, p.topic)]
            del out.partitions[:]
            out.partitions.extend(kept)
        return out

