"""The broker's view of the cluster: the metadata image replayed from the committed metadata log,
and what each new image means for this broker's replicas (host a log, lead it, follow, drop it).
Metadata answers, auto-creation and forwarded admin calls read and wait on it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import trio

from broker.metadata.quorum import CommittedRecord
from broker.replication.replica_manager import ReplicaManager
from kraft.log.log_config import ConfigError, LogConfig
from kraft.metadata.delta import MetadataDelta, MetadataReplayError
from kraft.metadata.image import EMPTY_IMAGE, MetadataImage, TopicImage

log = logging.getLogger(__name__)


class BrokerMetadata:
    def __init__(
        self, node_id: int, replicas: ReplicaManager, topic_defaults: Mapping[str, str]
    ) -> None:
        self.node_id = node_id
        self.replicas = replicas
        self.broker_defaults = LogConfig.from_props(dict(topic_defaults))
        self.image: MetadataImage = EMPTY_IMAGE
        self._changed = trio.Event()

    @property
    def offset(self) -> int:
        """The last metadata log offset replayed here (-1: none)."""
        return self.image.offset

    # -- MetadataListener
    def replay_committed(self, records: Sequence[CommittedRecord]) -> None:
        if not records:
            return
        delta = MetadataDelta(self.image)
        for offset, epoch, record in records:
            try:
                delta.replay(record, offset, epoch)
            except MetadataReplayError as exc:
                log.error(
                    "metadata offset %d not applied on broker %d: %s", offset, self.node_id, exc
                )
                delta.offset, delta.epoch = offset, epoch
        self._publish(delta.apply())

    def load_snapshot(self, image: MetadataImage) -> None:
        self._publish(image)

    # -- waiting on the image
    async def wait_for(self, ready: Callable[[MetadataImage], bool], timeout_s: float) -> bool:
        """Wait until `ready(image)` holds; False if it still does not after `timeout_s`."""
        with trio.move_on_after(timeout_s):
            while not ready(self.image):
                await self._changed.wait()
            return True
        return False

    async def wait_for_offset(self, offset: int, timeout_s: float) -> bool:
        return await self.wait_for(lambda image: image.offset >= offset, timeout_s)

    # -- publishing
    def log_config(self, image: MetadataImage, topic: str) -> LogConfig:
        try:
            return LogConfig.from_props(
                dict(image.topic_configs(topic)), defaults=self.broker_defaults
            )
        except ConfigError as exc:
            # The controller validated it; a value only a newer kraft reads keeps the defaults.
            log.error("topic %s config not usable here (%s); using the broker defaults", topic, exc)
            return self.broker_defaults

    def _publish(self, image: MetadataImage) -> None:
        old, self.image = self.image, image
        for topic_id, topic in image.topics_by_id.items():
            before = old.topics_by_id.get(topic_id)
            configs_changed = old.topic_configs(topic.name) != image.topic_configs(topic.name)
            if before is not topic or configs_changed:
                self._apply_topic(image, topic, configs_changed)
        for (name, p), _hosted in list(self._hosted().items()):
            reg = image.partition(name, p)
            if reg is None or self.node_id not in reg.replicas:
                log.info(
                    "dropping replica %s-%d: the metadata log no longer places it here", name, p
                )
                self.replicas.remove_partition(name, p)
        for name, p in self.replicas.log_manager.offline_partitions():
            if self._placed_here(old, name, p) and not self._placed_here(image, name, p):
                self.replicas.log_manager.delete_log(name, p)  # its damaged files go too
        self._changed.set()
        self._changed = trio.Event()

    def _hosted(self) -> dict:
        return {(h.topic, h.partition): h for h in self.replicas.partitions()}

    def _apply_topic(self, image: MetadataImage, topic: TopicImage, configs_changed: bool) -> None:
        config = self.log_config(image, topic.name)
        for p, reg in topic.partitions.items():
            if self.node_id not in reg.replicas:
                continue
            existing = self.replicas.log_manager.get_log(topic.name, p)
            if existing is not None and existing.topic_id and existing.topic_id != topic.topic_id:
                # The topic was deleted and re-created while this broker was away.
                log.info(
                    "replacing %s-%d: its log belongs to an older topic %s",
                    topic.name,
                    p,
                    existing.topic_id,
                )
                self.replicas.remove_partition(topic.name, p)
                self.replicas.log_manager.delete_log(topic.name, p)
            # The replication core ignores what it already knows (same epochs) and stale news.
            self.replicas.apply_registration(
                topic.name, p, topic.topic_id, config, reg, config_changed=configs_changed
            )

    def offline_replicas(self) -> tuple[tuple[str, int], ...]:
        """(topic_id, partition) of this broker's replicas the log manager took offline, for the
        heartbeat (the controller moves their leadership away)."""
        out = []
        for name, p in self.replicas.log_manager.offline_partitions():
            topic = self.image.topic(name)
            if topic is not None and p in topic.partitions:
                out.append((topic.topic_id, p))
        return tuple(out)

    def _placed_here(self, image: MetadataImage, name: str, p: int) -> bool:
        reg = image.partition(name, p)
        return reg is not None and self.node_id in reg.replicas

    def remove_strays(self) -> list[tuple[str, int]]:
        """Delete logs on disk that the metadata log no longer places here (topics deleted while
        this broker was down). Call only once caught up: the controller unfences a broker only
        after it has replayed its own registration, so every earlier deletion is in the image."""
        removed = []
        for (name, p), log_ in self.replicas.log_manager.logs().items():
            reg = self.image.partition(name, p)
            topic = self.image.topic(name)
            if (
                reg is None
                or self.node_id not in reg.replicas
                or (log_.topic_id and topic is not None and log_.topic_id != topic.topic_id)
            ):
                self.replicas.remove_partition(name, p)
                self.replicas.log_manager.delete_log(name, p)
                removed.append((name, p))
        for name, p in self.replicas.log_manager.offline_partitions():
            if not self._placed_here(self.image, name, p):
                self.replicas.log_manager.delete_log(name, p)  # offline, of a deleted topic
                removed.append((name, p))
        if removed:
            log.info("deleted stray replicas no longer in the metadata log: %s", removed)
        return removed
