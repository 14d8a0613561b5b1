"""Metadata, wire-neutral: the live brokers (each at its endpoint on the listener the request came
in on), the controller, and the topics the sender may Describe, created first when asked and
allowed (Kafka's auto.create.topics.enable)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from broker.edge.controller_channel import ControllerChannel
from broker.metadata.publisher import BrokerMetadata
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from clients.errors import ErrorCode, KraftError
from clients.grpc_server import ANONYMOUS, RequestContext
from clients.topics import creatable_topic_problem, topic_name_problem
from kraft.controller.messages import CreatableTopic, CreateTopicsRequest
from kraft.metadata.image import MetadataImage
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R

log = logging.getLogger(__name__)

AUTO_CREATE_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class MetadataRequest:
    topics: Sequence[str] = ()
    all_topics: bool = False  # or no topics named: every topic the sender may see
    allow_auto_topic_creation: bool = False


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str = ""


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    error_code: int = 0
    error_message: str = ""
    topic_id: str = ""
    is_internal: bool = False
    partitions: tuple[PartitionMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class MetadataResponse:
    brokers: list[BrokerNode]
    controller_id: int  # -1: none known
    cluster_id: str
    topics: list[TopicMetadata]


class MetadataHandler:
    def __init__(
        self,
        metadata: BrokerMetadata,
        channel: ControllerChannel,
        *,
        cluster_id: str,
        authorizer: RequestAuthorizer = OPEN,
        auto_create: bool = True,
        controller_id: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.metadata = metadata
        self.channel = channel
        self.cluster_id = cluster_id
        self.authz = authorizer
        self.auto_create = auto_create
        self.controller_id = controller_id

    async def handle(
        self, request: MetadataRequest, who: RequestContext = ANONYMOUS
    ) -> MetadataResponse:
        image = self.metadata.image
        authz = self.authz
        if request.all_topics or not request.topics:
            # Kafka lists only the topics the principal may Describe.
            names = [
                n
                for n in sorted(image.topics_by_name)
                if authz.allowed(Op.DESCRIBE, R.TOPIC, n, who)
            ]
        else:
            names = list(request.topics)
        auto_create = request.allow_auto_topic_creation and self.auto_create
        refused = {}
        for n in names:
            denial = authz.denial(Op.DESCRIBE, R.TOPIC, n, who)
            if (
                denial is None
                and image.topic(n) is None
                and auto_create
                and not authz.allowed(Op.CREATE, R.CLUSTER, who=who)
            ):
                denial = authz.denial(Op.CREATE, R.TOPIC, n, who)
            if denial is not None:
                refused[n] = TopicMetadata(n, *denial)
        if auto_create:
            missing = [
                n
                for n in names
                if image.topic(n) is None and not creatable_topic_problem(n) and n not in refused
            ]
            created = await self.auto_create_topics(missing) if missing else {}
        else:
            created = {}
        created.update(refused)
        image = self.metadata.image
        topics = [created.get(name) or topic_metadata(image, name) for name in names]
        # Kafka's rule: a client learns each broker's endpoint on the listener it came in on.
        brokers = [
            BrokerNode(
                b.broker_id, *(b.endpoint(who.listener) or (b.host, b.port)), rack=b.rack or ""
            )
            for b in image.live_brokers()
        ]
        controller = self.controller_id()
        return MetadataResponse(
            brokers, -1 if controller is None else controller, self.cluster_id, topics
        )

    async def auto_create_topics(self, names: list[str]) -> dict[str, TopicMetadata]:
        """Create missing topics with the cluster's defaults (Kafka's auto.create.topics.enable)
        and wait until this broker's image has them; failures become per-topic errors."""
        request = CreateTopicsRequest(tuple(CreatableTopic(n) for n in names))
        try:
            response, _ = await self.channel.send_with_offset(request, AUTO_CREATE_TIMEOUT_S)
        except KraftError as exc:
            return {n: TopicMetadata(n, exc.code, exc.message) for n in names}
        failed = {}
        for result in response.topics:
            if result.error_code == ErrorCode.NONE:
                # A typo in a producer's topic name lands here too: say so, once per topic
                # (only the request that created it sees NONE), with how to turn it off.
                log.warning(
                    "created topic '%s' because a client asked for it and "
                    "auto.create.topics.enable=true; set auto.create.topics.enable=false "
                    "to refuse unknown topics instead",
                    result.name,
                )
            elif result.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                failed[result.name] = TopicMetadata(
                    result.name, result.error_code, result.error_message
                )
        await self.metadata.wait_for(
            lambda image: all(image.topic(n) is not None for n in names if n not in failed),
            AUTO_CREATE_TIMEOUT_S,
        )
        return failed


def topic_metadata(image: MetadataImage, name: str) -> TopicMetadata:
    problem = topic_name_problem(name)
    if problem:
        return TopicMetadata(name, ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    topic = image.topic(name)
    if topic is None and creatable_topic_problem(name):
        return TopicMetadata(
            name,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"topic '{name}' does not exist; {creatable_topic_problem(name)}",
        )
    if topic is None:
        return TopicMetadata(
            name,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"topic '{name}' does not exist; create it with: kraft topic create {name}",
        )
    partitions = []
    for p, reg in sorted(topic.partitions.items()):
        partitions.append(
            PartitionMetadata(
                p,
                reg.leader,
                reg.leader_epoch,
                tuple(reg.replicas),
                tuple(reg.isr),
                tuple(b for b in reg.replicas if not image.can_serve(b, topic.topic_id, p)),
                0 if reg.has_leader else ErrorCode.LEADER_NOT_AVAILABLE,
                ""
                if reg.has_leader
                else f"{name}-{p} has no live leader (replicas {list(reg.replicas)} are fenced, down "
                "or offline)",
            )
        )
    return TopicMetadata(
        name,
        topic_id=topic.topic_id,
        is_internal=name.startswith("__"),
        partitions=tuple(partitions),
    )
