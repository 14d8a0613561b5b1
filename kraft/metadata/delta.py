"""MetadataDelta: replays metadata records onto a MetadataImage and makes the next image.
The only code that turns records into state, shared by the controllers and the brokers."""

from __future__ import annotations

from clients.scram import ScramCredential
from kraft.metadata import records as r
from kraft.metadata.acl_records import acl_from_record
from kraft.metadata.image import (
    TOPIC_RESOURCE,
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    frozen_map,
)


class MetadataReplayError(ValueError):
    """A record that does not fit the image: the log is corrupt or was replayed out of order."""


class MetadataDelta:
    """Changes on top of `image`. Each state dict is copied on its first change, so an image is
    never touched; apply() can be called any number of times as records keep coming."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.offset = image.offset
        self.epoch = image.epoch
        self._brokers: dict | None = None
        self._topics: dict | None = None  # topic_id -> TopicImage (partitions stale)
        self._names: set[str] | None = None
        self._partitions: dict[str, dict] = {}  # topic_id -> working partitions dict
        self._configs: dict | None = None
        self._next_producer_id = image.next_producer_id
        self._acls: dict | None = None
        self._scram: dict | None = None

    # -- copy on first write
    def _brokers_w(self) -> dict:
        if self._brokers is None:
            self._brokers = dict(self.image.brokers)
        return self._brokers

    def _topics_w(self) -> dict:
        if self._topics is None:
            self._topics = dict(self.image.topics_by_id)
            self._names = set(self.image.topics_by_name)
        return self._topics

    def _partitions_w(self, topic_id: str, what: str) -> dict:
        parts = self._partitions.get(topic_id)
        if parts is None:
            topic = (self._topics or self.image.topics_by_id).get(topic_id)
            if topic is None:
                raise MetadataReplayError(f"{what}: unknown topic id {topic_id}")
            parts = self._partitions[topic_id] = dict(topic.partitions)
        return parts

    def _configs_w(self) -> dict:
        if self._configs is None:
            self._configs = dict(self.image.configs)
        return self._configs

    def _current_broker(self, broker_id: int, epoch: int, what: str) -> BrokerRegistration:
        broker = (self._brokers or self.image.brokers).get(broker_id)
        if broker is None or broker.broker_epoch != epoch:
            raise MetadataReplayError(f"{what}: broker {broker_id} epoch {epoch} is not registered")
        return broker

    # -- replay
    def replay(self, record, offset: int | None = None, epoch: int | None = None) -> None:
        """Apply one record; `offset`/`epoch` say where it sits in the metadata log."""
        handler = _HANDLERS.get(type(record))
        if handler is None:
            raise MetadataReplayError(f"cannot replay {type(record).__name__}")
        handler(self, record)
        if offset is not None:
            self.offset = offset
        if epoch is not None:
            self.epoch = epoch

    def _register_broker(self, rec: r.RegisterBrokerRecord) -> None:
        self._brokers_w()[rec.broker_id] = BrokerRegistration(
            rec.broker_id,
            rec.incarnation_id,
            rec.broker_epoch,
            rec.host,
            rec.port,
            rec.rack,
            rec.fenced,
            listeners=tuple(rec.listeners),
        )

    def _change_broker(self, rec: r.BrokerRegistrationChangeRecord) -> None:
        broker = self._current_broker(rec.broker_id, rec.broker_epoch, "BrokerRegistrationChange")
        offline = (
            broker.offline_replicas
            if rec.offline_replicas is None
            else frozenset(rec.offline_replicas)
        )
        self._brokers_w()[rec.broker_id] = BrokerRegistration(
            broker.broker_id,
            broker.incarnation_id,
            broker.broker_epoch,
            broker.host,
            broker.port,
            broker.rack,
            rec.fenced,
            offline,
            listeners=broker.listeners,
        )

    def _unregister_broker(self, rec: r.UnregisterBrokerRecord) -> None:
        self._current_broker(rec.broker_id, rec.broker_epoch, "UnregisterBroker")
        del self._brokers_w()[rec.broker_id]

    def _topic(self, rec: r.TopicRecord) -> None:
        topics = self._topics_w()
        if rec.topic_id in topics:
            raise MetadataReplayError(f"Topic: topic id {rec.topic_id} already exists")
        if rec.name in self._names:
            raise MetadataReplayError(f"Topic: topic '{rec.name}' already exists")
        topics[rec.topic_id] = TopicImage(rec.name, rec.topic_id)
        self._names.add(rec.name)
        self._partitions[rec.topic_id] = {}

    def _partition(self, rec: r.PartitionRecord) -> None:
        self._partitions_w(rec.topic_id, "Partition")[rec.partition] = PartitionRegistration(
            tuple(rec.replicas), tuple(rec.isr), rec.leader, rec.leader_epoch, rec.partition_epoch
        )

    def _partition_change(self, rec: r.PartitionChangeRecord) -> None:
        parts = self._partitions_w(rec.topic_id, "PartitionChange")
        old = parts.get(rec.partition)
        if old is None:
            raise MetadataReplayError(
                f"PartitionChange: topic id {rec.topic_id} has no partition {rec.partition}"
            )
        leader_changed = rec.leader is not None
        parts[rec.partition] = PartitionRegistration(
            replicas=old.replicas if rec.replicas is None else tuple(rec.replicas),
            isr=old.isr if rec.isr is None else tuple(rec.isr),
            leader=rec.leader if leader_changed else old.leader,
            leader_epoch=old.leader_epoch + 1 if leader_changed else old.leader_epoch,
            partition_epoch=old.partition_epoch + 1,
        )

    def _remove_topic(self, rec: r.RemoveTopicRecord) -> None:
        topics = self._topics_w()
        topic = topics.pop(rec.topic_id, None)
        if topic is None:
            raise MetadataReplayError(f"RemoveTopic: unknown topic id {rec.topic_id}")
        self._partitions.pop(rec.topic_id, None)
        self._names.discard(topic.name)
        # A topic created later under the same name must not inherit the old overrides.
        if (TOPIC_RESOURCE, topic.name) in (self._configs or self.image.configs):
            del self._configs_w()[(TOPIC_RESOURCE, topic.name)]

    def _config(self, rec: r.ConfigRecord) -> None:
        configs = self._configs_w()
        key = (rec.resource_type, rec.resource_name)
        values = dict(configs.get(key, {}))
        if rec.value is None:
            values.pop(rec.name, None)
        else:
            values[rec.name] = rec.value
        if values:
            configs[key] = frozen_map(values)
        else:
            configs.pop(key, None)

    def _producer_ids(self, rec: r.ProducerIdsRecord) -> None:
        if rec.next_producer_id < self._next_producer_id:
            raise MetadataReplayError(
                f"ProducerIds: next producer id {rec.next_producer_id} is below "
                f"{self._next_producer_id}; producer ids would be handed out twice"
            )
        self._next_producer_id = rec.next_producer_id

    def _acls_w(self) -> dict:
        if self._acls is None:
            self._acls = dict(self.image.acls)
        return self._acls

    def _acl(self, rec: r.AccessControlEntryRecord) -> None:
        acls = self._acls_w()
        if rec.id in acls:
            raise MetadataReplayError(f"AccessControlEntry: ACL id {rec.id} already exists")
        try:
            acls[rec.id] = acl_from_record(rec)
        except ValueError as exc:
            raise MetadataReplayError(f"AccessControlEntry {rec.id}: {exc}") from None

    def _remove_acl(self, rec: r.RemoveAccessControlEntryRecord) -> None:
        if self._acls_w().pop(rec.id, None) is None:
            raise MetadataReplayError(f"RemoveAccessControlEntry: unknown ACL id {rec.id}")

    def _scram_w(self) -> dict:
        if self._scram is None:
            self._scram = dict(self.image.scram_credentials)
        return self._scram

    def _user_scram_credential(self, rec: r.UserScramCredentialRecord) -> None:
        self._scram_w()[(rec.name, rec.mechanism)] = ScramCredential(
            rec.mechanism, rec.salt, rec.iterations, rec.stored_key, rec.server_key
        )

    def _remove_user_scram_credential(self, rec: r.RemoveUserScramCredentialRecord) -> None:
        self._scram_w().pop((rec.name, rec.mechanism), None)

    def _nothing(self, rec) -> None:
        pass

    # -- the next image
    def apply(self) -> MetadataImage:
        image = self.image
        brokers = image.brokers if self._brokers is None else frozen_map(dict(self._brokers))
        if self._topics is None and not self._partitions:
            by_id, by_name = image.topics_by_id, image.topics_by_name
        else:
            topics = dict(self._topics if self._topics is not None else image.topics_by_id)
            for topic_id, parts in self._partitions.items():
                t = topics[topic_id]
                topics[topic_id] = TopicImage(t.name, t.topic_id, frozen_map(dict(parts)))
            by_id = frozen_map(topics)
            by_name = frozen_map({t.name: t for t in topics.values()})
        configs = image.configs if self._configs is None else frozen_map(dict(self._configs))
        acls = image.acls if self._acls is None else frozen_map(dict(self._acls))
        return MetadataImage(
            offset=self.offset,
            epoch=self.epoch,
            brokers=brokers,
            topics_by_id=by_id,
            topics_by_name=by_name,
            configs=configs,
            next_producer_id=self._next_producer_id,
            acls=acls,
            scram_credentials=image.scram_credentials
            if self._scram is None
            else frozen_map(dict(self._scram)),
        )


_HANDLERS = {
    r.RegisterBrokerRecord: MetadataDelta._register_broker,
    r.BrokerRegistrationChangeRecord: MetadataDelta._change_broker,
    r.UnregisterBrokerRecord: MetadataDelta._unregister_broker,
    r.TopicRecord: MetadataDelta._topic,
    r.PartitionRecord: MetadataDelta._partition,
    r.PartitionChangeRecord: MetadataDelta._partition_change,
    r.RemoveTopicRecord: MetadataDelta._remove_topic,
    r.ConfigRecord: MetadataDelta._config,
    r.ProducerIdsRecord: MetadataDelta._producer_ids,
    r.AccessControlEntryRecord: MetadataDelta._acl,
    r.RemoveAccessControlEntryRecord: MetadataDelta._remove_acl,
    r.UserScramCredentialRecord: MetadataDelta._user_scram_credential,
    r.RemoveUserScramCredentialRecord: MetadataDelta._remove_user_scram_credential,
    r.LeaderChangeRecord: MetadataDelta._nothing,
    r.NoOpRecord: MetadataDelta._nothing,
}


def replay_all(
    image: MetadataImage, records, last_offset: int | None = None, epoch: int | None = None
) -> MetadataImage:
    """Replay a batch onto `image` with one delta; the new image sits at `last_offset`."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    if last_offset is not None:
        delta.offset = last_offset
    if epoch is not None:
        delta.epoch = epoch
    return delta.apply()
