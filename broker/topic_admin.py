"""Topic administration on a single node: create, delete, add partitions, describe and alter
configs. Answers with KraftError codes as Kafka's controller does; the quorum controller takes
this role over once the metadata log exists."""
from __future__ import annotations

import dataclasses

from broker.config import ServerConfig
from broker.replica_manager import ReplicaManager
from broker.topic_store import TopicInfo, TopicStore
from clients.errors import ErrorCode, KraftError
from clients.topics import topic_name_problem
from kraft.log.log_config import ConfigError, LogConfig

MAX_PARTITIONS = 10_000


@dataclasses.dataclass(frozen=True)
class ConfigValue:
    name: str
    value: str
    is_default: bool
    source: str


def _invalid_config(exc: ValueError) -> KraftError:
    return KraftError(ErrorCode.INVALID_CONFIG, str(exc))


class TopicAdmin:
    def __init__(self, store: TopicStore, replicas: ReplicaManager, config: ServerConfig) -> None:
        self.store = store
        self.replicas = replicas
        self.config = config
        try:
            self.broker_defaults = LogConfig.from_props(config.topic_defaults)
        except ConfigError as exc:
            raise ValueError(f"broker topic defaults: {exc}") from None

    def log_config(self, info: TopicInfo) -> LogConfig:
        return LogConfig.from_props(info.configs, defaults=self.broker_defaults)

    def open_all(self) -> None:
        """Host every partition of every known topic (start-up)."""
        for name in self.store.names():
            info = self.store.get(name)
            for p in range(info.num_partitions):
                self.replicas.become_leader(name, p, self.log_config(info), info.topic_id)

    def require(self, name: str) -> TopicInfo:
        info = self.store.get(name)
        if info is None:
            raise KraftError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"topic '{name}' does not exist; create it with: kraft topic create {name}")
        return info

    def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     configs: dict[str, str] | None = None, validate_only: bool = False) -> TopicInfo:
        problem = topic_name_problem(name)
        if problem:
            raise KraftError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if self.store.get(name) is not None:
            raise KraftError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic '{name}' already exists")
        partitions = self.config.num_partitions if num_partitions == -1 else num_partitions
        if not 1 <= partitions <= MAX_PARTITIONS:
            raise KraftError(ErrorCode.INVALID_PARTITIONS,
                             f"{partitions} partitions: use 1 to {MAX_PARTITIONS}")
        rf = self.config.default_replication_factor if replication_factor == -1 else replication_factor
        if rf < 1:
            raise KraftError(ErrorCode.INVALID_REPLICATION_FACTOR, f"replication factor {rf} must be at least 1")
        if rf > 1:
            raise KraftError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"replication factor {rf} is larger than the 1 available broker")
        overrides = dict(configs or {})
        try:
            log_config = LogConfig.from_props(overrides, defaults=self.broker_defaults)
        except ConfigError as exc:
            raise _invalid_config(exc) from None
        if validate_only:
            return TopicInfo(name, "", partitions, overrides)
        info = self.store.create(name, partitions, overrides)
        for p in range(partitions):
            self.replicas.become_leader(name, p, log_config, info.topic_id)
        return info

    def delete_topic(self, name: str) -> None:
        if not self.config.delete_topic_enable:
            raise KraftError(ErrorCode.POLICY_VIOLATION, "topic deletion is off (delete.topic.enable=false)")
        info = self.require(name)
        self.store.delete(name)
        for p in range(info.num_partitions):
            self.replicas.remove_partition(name, p)

    def create_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        info = self.require(name)
        if count <= info.num_partitions or count > MAX_PARTITIONS:
            raise KraftError(ErrorCode.INVALID_PARTITIONS,
                             f"topic '{name}' has {info.num_partitions} partitions; the new count must "
                             f"be larger (up to {MAX_PARTITIONS}), got {count}")
        if validate_only:
            return
        grown = dataclasses.replace(info, num_partitions=count)
        self.store.replace(grown)
        for p in range(info.num_partitions, count):
            self.replicas.become_leader(name, p, self.log_config(grown), info.topic_id)

    def describe_configs(self, name: str, keys: list[str] | None = None) -> list[ConfigValue]:
        info = self.require(name)
        effective = self.log_config(info).to_props()
        wanted = keys or sorted(effective)
        unknown = [k for k in wanted if k not in effective]
        if unknown:
            raise KraftError(ErrorCode.INVALID_CONFIG, f"unknown topic config {', '.join(unknown)}")
        out = []
        for key in wanted:
            if key in info.configs:
                source = "DYNAMIC_TOPIC_CONFIG"
            elif key in self.config.topic_defaults:
                source = "STATIC_BROKER_CONFIG"
            else:
                source = "DEFAULT_CONFIG"
            out.append(ConfigValue(key, effective[key], source == "DEFAULT_CONFIG", source))
        return out

    def alter_configs(self, name: str, set_: dict[str, str], delete: list[str],
                      validate_only: bool = False) -> None:
        info = self.require(name)
        overrides = {k: v for k, v in info.configs.items() if k not in delete}
        overrides.update(set_)
        try:
            log_config = LogConfig.from_props(overrides, defaults=self.broker_defaults)
        except ConfigError as exc:
            raise _invalid_config(exc) from None
        unknown = [k for k in delete if k not in log_config.to_props()]
        if unknown:
            raise KraftError(ErrorCode.INVALID_CONFIG, f"unknown topic config {', '.join(unknown)}")
        if validate_only:
            return
        self.store.replace(dataclasses.replace(info, configs=overrides))
        for p in range(info.num_partitions):
            hosted = self.replicas.get(name, p)
            if hosted is not None:
                hosted.log.update_config(log_config)
