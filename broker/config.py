"""A node's configuration: Kafka's server.properties key names, parsed and checked, each
overridable with `--override key=value`. A bad value is an error that names its key."""
from __future__ import annotations

import dataclasses
import pathlib
from typing import Callable, Mapping


class ServerConfigError(ValueError):
    """A config value that cannot be used; the message names the key and what is valid."""


def _int(key: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ServerConfigError(f"{key}: {text!r} is not a whole number") from None


def _bool(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ServerConfigError(f"{key}: {text!r} is not true or false")
    return value == "true"


def _roles(key: str, text: str) -> tuple[str, ...]:
    roles = tuple(r.strip() for r in text.split(",") if r.strip())
    bad = [r for r in roles if r not in ("broker", "controller")]
    if not roles or bad:
        raise ServerConfigError(f"{key}: {text!r} must be 'broker', 'controller' or 'broker,controller'")
    return roles


def parse_listener(key: str, text: str) -> tuple[str, int]:
    """`PLAINTEXT://host:port` (or plain `host:port`; the first listener wins) -> (host, port)."""
    first = text.split(",")[0].strip()
    address = first.split("://", 1)[-1]
    host, sep, port = address.rpartition(":")
    if not sep:
        raise ServerConfigError(f"{key}: {text!r} is not host:port (e.g. PLAINTEXT://127.0.0.1:9092)")
    return host or "0.0.0.0", _int(key, port)


# server.properties key -> (attribute, parser, default text). Kafka's defaults unless noted.
_SERVER_KEYS: dict[str, tuple[str, Callable[[str, str], object], str]] = {
    "node.id": ("node_id", _int, "1"),
    "process.roles": ("process_roles", _roles, "broker,controller"),
    "listeners": ("listener", parse_listener, "PLAINTEXT://127.0.0.1:9092"),
    "log.dirs": ("log_dirs", lambda k, v: tuple(p.strip() for p in v.split(",") if p.strip()), "./kraft-data"),
    "num.partitions": ("num_partitions", _int, "1"),
    "default.replication.factor": ("default_replication_factor", _int, "1"),
    "auto.create.topics.enable": ("auto_create_topics_enable", _bool, "true"),
    "delete.topic.enable": ("delete_topic_enable", _bool, "true"),
    "broker.rack": ("rack", lambda k, v: v.strip(), ""),
    "log.retention.check.interval.ms": ("retention_check_interval_ms", _int, "300000"),
    "log.flush.scheduler.interval.ms": ("flush_scheduler_interval_ms", _int, "1000"),
    "log.flush.offset.checkpoint.interval.ms": ("checkpoint_interval_ms", _int, "60000"),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", _int, "30000"),
    "broker.heartbeat.interval.ms": ("broker_heartbeat_interval_ms", _int, "2000"),
    "broker.session.timeout.ms": ("broker_session_timeout_ms", _int, "9000"),
    "controller.quorum.fetch.timeout.ms": ("quorum_fetch_timeout_ms", _int, "2000"),
    "controller.quorum.voters": ("quorum_voters", lambda k, v: v.strip(), ""),
}

# Broker-wide defaults for topic configs: server key -> topic key (Kafka's naming).
BROKER_TO_TOPIC_KEYS = {
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "message.max.bytes": "max.message.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.cleanup.policy": "cleanup.policy",
    "log.message.timestamp.type": "message.timestamp.type",
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
}
# Kafka's coarser spellings, converted to the ms key.
_SCALED = {"log.retention.hours": ("log.retention.ms", 3_600_000),
           "log.retention.minutes": ("log.retention.ms", 60_000),
           "log.roll.hours": ("log.roll.ms", 3_600_000)}


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    node_id: int
    process_roles: tuple[str, ...]
    listener: tuple[str, int]
    log_dirs: tuple[str, ...]
    num_partitions: int
    default_replication_factor: int
    auto_create_topics_enable: bool
    delete_topic_enable: bool
    rack: str
    retention_check_interval_ms: int
    flush_scheduler_interval_ms: int
    checkpoint_interval_ms: int
    replica_lag_time_max_ms: int
    broker_heartbeat_interval_ms: int
    broker_session_timeout_ms: int
    quorum_fetch_timeout_ms: int
    quorum_voters: str
    topic_defaults: Mapping[str, str]   # topic-level keys, e.g. {"retention.ms": "..."}
    unknown_keys: tuple[str, ...] = ()

    @property
    def host(self) -> str:
        return self.listener[0]

    @property
    def port(self) -> int:
        return self.listener[1]


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties, the subset server.properties files use: `key=value` or `key: value`,
    `#`/`!` comments, blank lines."""
    props: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep < 0:
            raise ServerConfigError(f"line {number}: {raw!r} is not key=value")
        props[line[:sep].strip()] = line[sep + 1:].strip()
    return props


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ServerConfigError(f"--override {pair!r} is not key=value (e.g. --override num.partitions=3)")
        out[key.strip()] = value.strip()
    return out


def build_config(props: Mapping[str, str]) -> ServerConfig:
    props = dict(props)
    for coarse, (fine, scale) in _SCALED.items():
        if coarse in props and fine not in props:
            props[fine] = str(_int(coarse, props[coarse]) * scale)
    if "log.dir" in props and "log.dirs" not in props:
        props["log.dirs"] = props["log.dir"]
    values = {attr: parse(key, props.get(key, default)) for key, (attr, parse, default) in _SERVER_KEYS.items()}
    if not values["log_dirs"]:
        raise ServerConfigError("log.dirs: no directory given (e.g. log.dirs=/var/lib/kraft)")
    topic_defaults = {topic_key: props[key] for key, topic_key in BROKER_TO_TOPIC_KEYS.items() if key in props}
    known = set(_SERVER_KEYS) | set(BROKER_TO_TOPIC_KEYS) | set(_SCALED) | {"log.dir"}
    unknown = tuple(sorted(k for k in props if k not in known))
    return ServerConfig(**values, topic_defaults=topic_defaults, unknown_keys=unknown)


def load_config(path: str | None, overrides: list[str]) -> ServerConfig:
    props: dict[str, str] = {}
    if path:
        file = pathlib.Path(path)
        if not file.is_file():
            raise ServerConfigError(f"config file {path} does not exist")
        props = parse_properties(file.read_text())
    props.update(parse_overrides(overrides))
    return build_config(props)
