"""The admin client: topics, partitions, configs, cluster, offsets and consumer groups. AsyncAdmin
(trio) sends Controller requests to a bootstrap node; Admin is its blocking facade."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clients._sync import SyncRunner
from clients.acl_admin import AclEntry, AclFilter
from clients.admin_coordinators import CoordinatorCalls
from clients.admin_security import SecurityCalls
from clients.cluster import Cluster
from clients.describe_partitions import PartitionReplication, describe_partitions
from clients.errors import ErrorCode, KraftError, raise_first
from clients.group_admin import GroupDescription, GroupListing, GroupOffset, MemberDescription
from clients.list_offsets import list_offsets_until
from clients.scram import DEFAULT_ITERATIONS
from clients.security import client_security
from clients.txn_admin import TransactionDescription, TransactionListing
from clients.types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition
from clients.wire import broker_pb2, controller_pb2


@dataclass
class NewTopic:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


@dataclass
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


@dataclass
class TopicDescription:
    name: str
    partitions: list[PartitionInfo]
    is_internal: bool = False


@dataclass
class ConfigEntry:
    name: str
    value: str
    is_default: bool
    read_only: bool
    source: str


@dataclass
class ElectionResult:
    """One partition's outcome of elect_leaders: error_code 0 when a leader was elected,
    ELECTION_NOT_NEEDED when it already had the leader asked for."""

    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


# Kafka's ElectionType numbering, as the Controller's ElectLeaders takes it.
ELECTION_TYPES = {"preferred": 0, "unclean": 1}


class AsyncAdmin(CoordinatorCalls, SecurityCalls):
    def __init__(
        self,
        bootstrap_servers: str = "127.0.0.1:9092",
        *,
        request_timeout_ms: int = 30000,
        **security: Any,
    ) -> None:
        self._cluster = Cluster(
            bootstrap_servers,
            request_timeout_ms=request_timeout_ms,
            security=client_security(**security),
        )
        self._timeout_ms = request_timeout_ms

    async def _controller(self, method: str, request):
        resp = await self._cluster.call_any(method, request, controller=True)
        if resp.error_code:  # the whole request failed (e.g. no active controller in time)
            raise KraftError(resp.error_code, resp.error_message)
        return resp

    async def create_topics(self, topics: list[NewTopic], validate_only: bool = False) -> None:
        req = controller_pb2.CreateTopicsRequest(
            topics=[
                controller_pb2.CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    configs=dict(t.configs or {}),
                )
                for t in topics
            ],
            timeout_ms=self._timeout_ms,
            validate_only=validate_only,
        )
        resp = await self._controller("CreateTopics", req)
        raise_first(resp.topics, "topic")

    async def delete_topics(self, names: list[str]) -> None:
        req = controller_pb2.DeleteTopicsRequest(names=list(names), timeout_ms=self._timeout_ms)
        resp = await self._controller("DeleteTopics", req)
        raise_first(resp.topics, "topic")

    async def create_partitions(
        self, new_totals: dict[str, int], validate_only: bool = False
    ) -> None:
        req = controller_pb2.CreatePartitionsRequest(
            topics=[
                controller_pb2.CreatePartitionsTopic(name=n, count=c) for n, c in new_totals.items()
            ],
            timeout_ms=self._timeout_ms,
            validate_only=validate_only,
        )
        resp = await self._controller("CreatePartitions", req)
        raise_first(resp.results, "topic")

    async def describe_configs(self, topic: str) -> dict[str, ConfigEntry]:
        req = controller_pb2.DescribeConfigsRequest(
            resources=[
                controller_pb2.ConfigResource(
                    resource_type=controller_pb2.TOPIC, resource_name=topic
                )
            ]
        )
        resp = await self._controller("DescribeConfigs", req)
        raise_first(resp.results, "topic")
        out: dict[str, ConfigEntry] = {}
        for r in resp.results:
            for c in r.configs:
                out[c.name] = ConfigEntry(c.name, c.value, c.is_default, c.read_only, c.source)
        return out

    async def alter_configs(
        self, topic: str, set: dict[str, str] | None = None, delete: list[str] | None = None
    ) -> None:
        ops = [
            controller_pb2.AlterableConfig(name=k, op=controller_pb2.SET, value=str(v))
            for k, v in (set or {}).items()
        ]
        ops += [
            controller_pb2.AlterableConfig(name=k, op=controller_pb2.DELETE) for k in (delete or [])
        ]
        req = controller_pb2.AlterConfigsRequest(
            resources=[
                controller_pb2.AlterConfigsResource(
                    resource_type=controller_pb2.TOPIC, resource_name=topic, configs=ops
                )
            ]
        )
        resp = await self._controller("AlterConfigs", req)
        raise_first(resp.results, "topic")

    async def _metadata(self, names: list[str] | None) -> broker_pb2.MetadataResponse:
        return await self._cluster.refresh(names)

    async def list_topics(self, include_internal: bool = False) -> list[str]:
        resp = await self._metadata(None)
        return sorted(
            t.name
            for t in resp.topics
            if t.error_code == 0 and (include_internal or not t.is_internal)
        )

    async def describe_topics(self, names: list[str] | None = None) -> list[TopicDescription]:
        resp = await self._metadata(list(names) if names else None)
        out = []
        for t in resp.topics:
            if t.error_code:
                message = t.error_message or ""
                if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    message = f"topic '{t.name}' does not exist"
                raise KraftError(t.error_code, message)
            out.append(
                TopicDescription(
                    t.name,
                    [
                        PartitionInfo(
                            p.partition, p.leader, p.leader_epoch, list(p.replicas), list(p.isr)
                        )
                        for p in sorted(t.partitions, key=lambda p: p.partition)
                    ],
                    t.is_internal,
                )
            )
        if names:
            order = {n: i for i, n in enumerate(names)}
            out.sort(key=lambda d: order.get(d.name, len(order)))
        else:
            out.sort(key=lambda d: d.name)
        return out

    async def describe_cluster(self) -> dict:
        resp = await self._cluster.call_any("Metadata", broker_pb2.MetadataRequest())
        return {
            "cluster_id": resp.cluster_id,
            "controller_id": resp.controller_id,
            "brokers": [
                {"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack or None}
                for b in sorted(resp.brokers, key=lambda b: b.node_id)
            ],
        }

    async def list_offsets(self, specs: dict) -> dict[TopicPartition, int]:
        """{tp: "earliest" | "latest" | timestamp_ms} -> {tp: offset} (-1: no such record)."""
        wanted = {}
        for tp, spec in specs.items():
            if spec == "earliest":
                ts = EARLIEST_TIMESTAMP
            elif spec == "latest":
                ts = LATEST_TIMESTAMP
            elif isinstance(spec, int):
                ts = spec
            else:
                raise ValueError(
                    f"offset spec must be 'earliest', 'latest' or a timestamp in ms, not {spec!r}"
                )
            wanted[TopicPartition(*tp)] = ts
        # Retried through a leader change, for up to the request timeout.
        answers = await list_offsets_until(self._cluster, wanted, self._cluster.timeout)
        return {tp: offset for tp, (offset, _ts) in answers.items()}

    async def describe_partitions(
        self, partitions: list
    ) -> dict[TopicPartition, PartitionReplication]:
        """{tp: PartitionReplication}: high watermark, offsets, ISR and each replica's log end
        offset, from each partition's leader; a partition no broker could answer for carries
        its error instead of raising."""
        return await describe_partitions(self._cluster, partitions)

    async def elect_leaders(
        self, election_type: str = "preferred", partitions: list | None = None
    ) -> list[ElectionResult]:
        """Move leadership (Kafka's ElectLeaders): "preferred" to each partition's first replica
        when it is in sync, "unclean" to any live replica of a leaderless partition. `partitions`
        None: every partition, and then those already as asked are left out of the answer."""
        if election_type not in ELECTION_TYPES:
            raise ValueError(f"election type {election_type!r}: use 'preferred' or 'unclean'")
        partitions = None if partitions is None else list(partitions)
        if partitions == []:
            # The wire reads no partitions as all of them: never widen a request by accident.
            raise ValueError("no partitions given; pass None to mean every partition")
        runs: list = []
        for topic, partition in partitions or ():
            if not runs or runs[-1].topic != topic:
                runs.append(controller_pb2.TopicPartitions(topic=topic))
            runs[-1].partitions.append(partition)
        req = controller_pb2.ElectLeadersRequest(
            election_type=ELECTION_TYPES[election_type], topic_partitions=runs
        )
        resp = await self._controller("ElectLeaders", req)
        return [
            ElectionResult(r.topic, r.partition, r.error_code, r.error_message)
            for r in resp.results
        ]

    async def aclose(self) -> None:
        self._cluster.close()

    async def __aenter__(self) -> AsyncAdmin:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()


class Admin:
    """Blocking facade over AsyncAdmin: same methods, each run in the background trio thread."""

    def __init__(
        self,
        bootstrap_servers: str = "127.0.0.1:9092",
        *,
        request_timeout_ms: int = 30000,
        **security: Any,
    ) -> None:
        self._async = AsyncAdmin(
            bootstrap_servers, request_timeout_ms=request_timeout_ms, **security
        )
        self._runner = SyncRunner("kraft-admin")

    def _run(self, name: str, *args, **kwargs):
        method = getattr(self._async, name)
        return self._runner.run(lambda: method(*args, **kwargs))

    def create_topics(self, topics: list[NewTopic], validate_only: bool = False) -> None:
        return self._run("create_topics", topics, validate_only)

    def delete_topics(self, names: list[str]) -> None:
        return self._run("delete_topics", names)

    def create_partitions(self, new_totals: dict[str, int], validate_only: bool = False) -> None:
        return self._run("create_partitions", new_totals, validate_only)

    def describe_configs(self, topic: str) -> dict[str, ConfigEntry]:
        return self._run("describe_configs", topic)

    def alter_configs(
        self, topic: str, set: dict[str, str] | None = None, delete: list[str] | None = None
    ) -> None:
        return self._run("alter_configs", topic, set, delete)

    def list_topics(self, include_internal: bool = False) -> list[str]:
        return self._run("list_topics", include_internal)

    def describe_topics(self, names: list[str] | None = None) -> list[TopicDescription]:
        return self._run("describe_topics", names)

    def describe_cluster(self) -> dict:
        return self._run("describe_cluster")

    def list_offsets(self, specs: dict) -> dict[TopicPartition, int]:
        return self._run("list_offsets", specs)

    def describe_partitions(self, partitions: list) -> dict[TopicPartition, PartitionReplication]:
        return self._run("describe_partitions", partitions)

    def elect_leaders(
        self, election_type: str = "preferred", partitions: list | None = None
    ) -> list[ElectionResult]:
        return self._run("elect_leaders", election_type, partitions)

    def list_groups(self, states: list[str] | None = None) -> list[GroupListing]:
        return self._run("list_groups", states)

    def describe_groups(
        self, group_ids: list[str], include_offsets: bool = True
    ) -> list[GroupDescription]:
        return self._run("describe_groups", group_ids, include_offsets)

    def delete_groups(self, group_ids: list[str]) -> None:
        return self._run("delete_groups", group_ids)

    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        return self._run("list_group_offsets", group_id)

    def alter_group_offsets(self, group_id: str, offsets: dict) -> None:
        return self._run("alter_group_offsets", group_id, offsets)

    def list_transactions(
        self, states: list[str] | None = None, producer_ids: list[int] | None = None
    ) -> list[TransactionListing]:
        return self._run("list_transactions", states, producer_ids)

    def describe_transactions(self, transactional_ids: list[str]) -> list[TransactionDescription]:
        return self._run("describe_transactions", transactional_ids)

    def abort_transaction(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int = 0,
    ) -> None:
        return self._run(
            "abort_transaction", topic, partition, producer_id, producer_epoch, coordinator_epoch
        )

    def create_acls(self, entries: list[AclEntry]) -> None:
        self._run("create_acls", entries)

    def delete_acls(self, filters: list[AclFilter]) -> list[AclEntry]:
        return self._run("delete_acls", filters)

    def describe_acls(self, acl_filter: AclFilter = AclFilter()) -> list[AclEntry]:
        return self._run("describe_acls", acl_filter)

    def upsert_user_scram_credential(
        self,
        user: str,
        password: str,
        mechanism: str = "SCRAM-SHA-256",
        iterations: int = DEFAULT_ITERATIONS,
    ) -> None:
        return self._run("upsert_user_scram_credential", user, password, mechanism, iterations)

    def delete_user_scram_credential(self, user: str, mechanism: str = "SCRAM-SHA-256") -> None:
        return self._run("delete_user_scram_credential", user, mechanism)

    def describe_user_scram_credentials(
        self, users: list[str] | None = None
    ) -> dict[str, list[tuple[str, int]]]:
        return self._run("describe_user_scram_credentials", users)

    def close(self) -> None:
        self._async._cluster.close()
        self._runner.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


__all__ = [
    "Admin",
    "AsyncAdmin",
    "ConfigEntry",
    "ElectionResult",
    "GroupDescription",
    "GroupListing",
    "GroupOffset",
    "MemberDescription",
    "NewTopic",
    "PartitionInfo",
    "TopicDescription",
    "TransactionDescription",
    "TransactionListing",
]


async def broker_views(
    addresses: list[str], timeout_s: float, **security: Any
) -> dict[str, set[int] | None]:
    """The broker ids each broker's Metadata answer lists; None for a broker that did not answer."""
    views: dict[str, set[int] | None] = {}
    for address in addresses:
        try:
            async with AsyncAdmin(
                address, request_timeout_ms=int(timeout_s * 1000), **security
            ) as admin:
                views[address] = {b["id"] for b in (await admin.describe_cluster())["brokers"]}
        except KraftError:
            views[address] = None
    return views
