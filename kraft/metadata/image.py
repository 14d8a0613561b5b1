"""MetadataImage: an immutable view of the cluster's metadata at one offset of the metadata
log (brokers, topics, partitions, configs, producer ids), and the queries brokers ask of it."""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field

from clients.scram import ScramCredential
from kraft.metadata.records import NO_LEADER
from kraft.security.acl import AclBinding

TOPIC_RESOURCE = "topic"
BROKER_RESOURCE = "broker"

_EMPTY: Mapping = types.MappingProxyType({})


def frozen_map(d: dict) -> Mapping:
    """A read-only view; the image owns the only reference to the dict behind it."""
    return types.MappingProxyType(d)


@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    host: str
    port: int
    rack: str | None
    fenced: bool
    # (topic_id, partition) replicas this broker reported offline (failed log dir, damaged
    # files): they may neither lead nor be in an ISR until the broker registers again.
    offline_replicas: frozenset[tuple[str, int]] = frozenset()
    listeners: tuple[str, ...] = ()  # "NAME://host:port"

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        """(host, port) of the broker's listener named `listener`, if it registered one."""
        prefix = f"{listener}://"
        for entry in self.listeners:
            if entry.startswith(prefix):
                host, _, port = entry[len(prefix) :].rpartition(":")
                return host, int(port)
        return None


@dataclass(frozen=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: str
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True)
class TopicPartitionRegistration:
    """One partition found by a query, with its topic's name and id."""

    topic: str
    topic_id: str
    partition: int
    registration: PartitionRegistration


@dataclass(frozen=True)
class MetadataImage:
    """Metadata as of `offset`/`epoch` of the metadata log (-1/-1: nothing replayed yet).
    Never changes: a MetadataDelta makes the next image, so readers always see one offset."""

    offset: int = -1
    epoch: int = -1
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=lambda: _EMPTY)
    topics_by_id: Mapping[str, TopicImage] = field(default_factory=lambda: _EMPTY)
    topics_by_name: Mapping[str, TopicImage] = field(default_factory=lambda: _EMPTY, compare=False)
    # (resource_type, resource_name) -> {config name: value}, overrides only.
    configs: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=lambda: _EMPTY)
    next_producer_id: int = 0
    # ACL id -> binding (AccessControlEntryRecord); brokers' authorizers follow it.
    acls: Mapping[str, AclBinding] = field(default_factory=lambda: _EMPTY)
    # (user name, mechanism) -> its SCRAM credential (salt, iterations, StoredKey, ServerKey).
    scram_credentials: Mapping[tuple[str, str], ScramCredential] = field(
        default_factory=lambda: _EMPTY
    )

    # -- brokers
    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def live_brokers(self) -> list[BrokerRegistration]:
        """Registered, unfenced brokers in broker id order."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]

    def is_live(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced

    def can_serve(self, broker_id: int, topic_id: str, partition: int) -> bool:
        """Live, and its replica of this partition is not offline: may lead it and be in its
        ISR (Kafka's leader acceptor: an active broker with the replica's dir online)."""
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and (topic_id, partition) not in b.offline_replicas

    # -- topics and partitions
    def topic(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def topic_by_id(self, topic_id: str) -> TopicImage | None:
        return self.topics_by_id.get(topic_id)

    def partition(self, topic: str, partition: int) -> PartitionRegistration | None:
        t = self.topics_by_name.get(topic)
        return None if t is None else t.partitions.get(partition)

    def _partitions_where(self, keep) -> list[TopicPartitionRegistration]:
        # A scan: fine for the partition counts this project targets; an index per broker would
        # have to be kept in step by the delta.
        out = []
        for name, t in sorted(self.topics_by_name.items()):
            for p, reg in sorted(t.partitions.items()):
                if keep(reg):
                    out.append(TopicPartitionRegistration(name, t.topic_id, p, reg))
        return out

    def partitions_led_by(self, broker_id: int) -> list[TopicPartitionRegistration]:
        return self._partitions_where(lambda reg: reg.leader == broker_id)

    def partitions_replicated_on(self, broker_id: int) -> list[TopicPartitionRegistration]:
        """Partitions with a replica on the broker, including those it leads."""
        return self._partitions_where(lambda reg: broker_id in reg.replicas)

    def partitions_in_isr_of(self, broker_id: int) -> list[TopicPartitionRegistration]:
        return self._partitions_where(lambda reg: broker_id in reg.isr)

    # -- configs
    def resource_configs(self, resource_type: str, resource_name: str) -> Mapping[str, str]:
        return self.configs.get((resource_type, resource_name), _EMPTY)

    def scram_credential(self, name: str, mechanism: str) -> ScramCredential | None:
        return self.scram_credentials.get((name, mechanism))

    def topic_configs(self, name: str) -> Mapping[str, str]:
        """The topic's overrides (not the defaults under them)."""
        return self.resource_configs(TOPIC_RESOURCE, name)


EMPTY_IMAGE = MetadataImage()
