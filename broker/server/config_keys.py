"""The server.properties key table: each key's attribute, parser and default (Kafka's unless
noted), the value parsers whose errors name their key, and the broker-wide topic defaults."""

from __future__ import annotations

from collections.abc import Callable

from kraft.security.authorizer import parse_super_users


class ServerConfigError(ValueError):
    """A config value that cannot be used; the message names the key and what is valid."""


INT_MAX = 2**31 - 1
MAX_SHORT = 2**15 - 1


def _int(key: str, text: str, allowed: str = "a whole number") -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ServerConfigError(f"{key}: {text!r} is not a whole number; use {allowed}") from None


def _bool(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ServerConfigError(f"{key}: {text!r} is not true or false")
    return value == "true"


def int_in(low: int, high: int | None = None) -> Callable[[str, str], int]:
    allowed = f"{low} to {high}" if high is not None else f"at least {low}"

    def parse(key: str, text: str) -> int:
        value = _int(key, text, allowed)
        if value < low or (high is not None and value > high):
            raise ServerConfigError(f"{key}: {value} is out of range; use {allowed}")
        return value

    return parse


def _roles(key: str, text: str) -> tuple[str, ...]:
    roles = tuple(r.strip() for r in text.split(",") if r.strip())
    bad = [r for r in roles if r not in ("broker", "controller")]
    if not roles or bad:
        raise ServerConfigError(
            f"{key}: {text!r} must be 'broker', 'controller' or 'broker,controller'"
        )
    return roles


def parse_listener(key: str, text: str) -> tuple[str, int]:
    """`PLAINTEXT://host:port` (or plain `host:port`; the first listener wins) -> (host, port)."""
    first = text.split(",")[0].strip()
    address = first.split("://", 1)[-1]
    host, sep, port = address.rpartition(":")
    if not sep:
        raise ServerConfigError(
            f"{key}: {text!r} is not host:port (e.g. PLAINTEXT://127.0.0.1:9092)"
        )
    return host or "0.0.0.0", int_in(0, 65535)(key, port)


def parse_listeners(key: str, text: str) -> dict[str, tuple[str, int]]:
    """`PLAINTEXT://h:p,CONTROLLER://h:p` -> {"PLAINTEXT": (h, p), "CONTROLLER": (h, p)}, in order;
    a listener without a name (plain `host:port`) is PLAINTEXT."""
    out: dict[str, tuple[str, int]] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, _ = part.partition("://")
        name = name.strip().upper() if sep else "PLAINTEXT"
        if name in out:
            raise ServerConfigError(f"{key}: listener name {name} appears twice in {text!r}")
        out[name] = parse_listener(key, part)
    if not out:
        raise ServerConfigError(f"{key}: no listener given (e.g. PLAINTEXT://127.0.0.1:9092)")
    return out


def parse_voters(key: str, text: str) -> dict[int, str]:
    """Kafka's `1@host:port,2@host:port,3@host:port` -> {1: "host:port", ...}; empty -> {}."""
    voters: dict[int, str] = {}
    example = "e.g. 1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095"
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        node, sep, address = part.partition("@")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not host or not node.strip().isdigit() or not port.isdigit():
            raise ServerConfigError(f"{key}: {part!r} is not id@host:port ({example})")
        node_id = int(node)
        if node_id in voters:
            raise ServerConfigError(f"{key}: voter {node_id} appears twice in {text!r}")
        voters[node_id] = f"{host}:{int(port)}"
    return voters


def _names(key: str, text: str) -> tuple[str, ...]:
    names = tuple(n.strip().upper() for n in text.split(",") if n.strip())
    if not names:
        raise ServerConfigError(f"{key}: no listener name given (e.g. CONTROLLER)")
    return names


def _names_or_none(key: str, text: str) -> tuple[str, ...]:
    return tuple(n.strip().upper() for n in text.split(",") if n.strip())


# The smallest socket.request.max.bytes that still lets a client say hello (ApiVersions).
MIN_REQUEST_BYTES = 1024


def _super_users(key: str, text: str) -> frozenset[str]:
    try:
        return parse_super_users(text)
    except ValueError as exc:
        raise ServerConfigError(str(exc)) from None


def parse_metrics_listener(key: str, text: str) -> tuple[str, int] | None:
    """`http://host:port` -> (host, port); empty -> None (no metrics endpoint)."""
    text = text.strip()
    if not text:
        return None
    example = "e.g. http://127.0.0.1:9404, or port 0 for a free one"
    scheme, sep, address = text.partition("://")
    if not sep or scheme.lower() != "http":
        raise ServerConfigError(
            f"{key}: {text!r} is not http://host:port ({example}); the "
            "endpoint speaks plain HTTP only"
        )
    host, colon, port = address.rpartition(":")
    if not colon or not host or "/" in address:
        raise ServerConfigError(f"{key}: {text!r} is not http://host:port ({example})")
    return host.strip("[]"), int_in(0, 65535)(key, port)


# server.properties key -> (attribute, parser, default text). Kafka's defaults unless noted.
SERVER_KEYS: dict[str, tuple[str, Callable[[str, str], object], str]] = {
    "node.id": ("node_id", int_in(0, INT_MAX), "1"),
    "process.roles": ("process_roles", _roles, "broker,controller"),
    "listeners": ("listeners", parse_listeners, "PLAINTEXT://127.0.0.1:9092"),
    "controller.listener.names": ("controller_listener_names", _names, "CONTROLLER"),
    # kraft's own key: the listeners that speak Kafka's wire protocol instead of gRPC.
    "kafka.listener.names": ("kafka_listener_names", _names_or_none, "KAFKA"),
    "socket.request.max.bytes": (
        "socket_request_max_bytes",
        int_in(MIN_REQUEST_BYTES),
        "104857600",
    ),
    "log.dirs": (
        "log_dirs",
        lambda k, v: tuple(p.strip() for p in v.split(",") if p.strip()),
        "./kraft-data",
    ),
    "num.partitions": ("num_partitions", int_in(1, INT_MAX), "1"),
    "default.replication.factor": ("default_replication_factor", int_in(1, MAX_SHORT), "1"),
    "auto.create.topics.enable": ("auto_create_topics_enable", _bool, "true"),
    "delete.topic.enable": ("delete_topic_enable", _bool, "true"),
    "broker.rack": ("rack", lambda k, v: v.strip(), ""),
    "log.retention.check.interval.ms": ("retention_check_interval_ms", int_in(1), "300000"),
    "log.flush.scheduler.interval.ms": ("flush_scheduler_interval_ms", int_in(1), "1000"),
    "log.cleaner.backoff.ms": ("cleaner_backoff_ms", int_in(1), "15000"),
    "log.flush.offset.checkpoint.interval.ms": ("checkpoint_interval_ms", int_in(1), "60000"),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", int_in(1), "30000"),
    "broker.heartbeat.interval.ms": ("broker_heartbeat_interval_ms", int_in(1), "2000"),
    "broker.session.timeout.ms": ("broker_session_timeout_ms", int_in(1), "9000"),
    "controller.quorum.fetch.timeout.ms": ("quorum_fetch_timeout_ms", int_in(1), "2000"),
    "controller.quorum.voters": ("quorum_voters", parse_voters, ""),
    "controller.quorum.election.timeout.ms": ("quorum_election_timeout_ms", int_in(1), "1000"),
    "controller.quorum.election.backoff.max.ms": (
        "quorum_election_backoff_max_ms",
        int_in(1),
        "1000",
    ),
    "controller.quorum.request.timeout.ms": ("quorum_request_timeout_ms", int_in(1), "2000"),
    "controller.quorum.retry.backoff.ms": ("quorum_retry_backoff_ms", int_in(1), "20"),
    # Not a Kafka key (Kafka counts bytes): take a metadata snapshot every this many records.
    "metadata.log.snapshot.interval.records": (
        "metadata_snapshot_interval_records",
        int_in(1),
        "20000",
    ),
    # The active controller moves leadership back to preferred replicas (Kafka's names, defaults).
    "auto.leader.rebalance.enable": ("auto_leader_rebalance_enable", _bool, "true"),
    "leader.imbalance.check.interval.seconds": (
        "leader_imbalance_check_interval_seconds",
        int_in(1),
        "300",
    ),
    "leader.imbalance.per.broker.percentage": (
        "leader_imbalance_per_broker_percentage",
        int_in(0, 100),
        "10",
    ),
    # Consumer groups and __consumer_offsets (Kafka's names and defaults).
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", int_in(1), "6000"),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", int_in(1), "1800000"),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", int_in(0), "3000"),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", int_in(0), "4096"),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", int_in(1), "50"),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", int_in(1), "3"),
    "offsets.topic.segment.bytes": ("offsets_topic_segment_bytes", int_in(1024), "104857600"),
    "offsets.commit.timeout.ms": ("offsets_commit_timeout_ms", int_in(1), "5000"),
    # Transactions and __transaction_state (Kafka's names and defaults).
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", int_in(1, INT_MAX), "900000"),
    "transactional.id.expiration.ms": (
        "transactional_id_expiration_ms",
        int_in(1, INT_MAX),
        "604800000",
    ),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        "transaction_abort_cleanup_interval_ms",
        int_in(1, INT_MAX),
        "10000",
    ),
    "transaction.state.log.num.partitions": (
        "transaction_state_log_num_partitions",
        int_in(1),
        "50",
    ),
    "transaction.state.log.replication.factor": (
        "transaction_state_log_replication_factor",
        int_in(1, MAX_SHORT),
        "3",
    ),
    "transaction.state.log.min.isr": ("transaction_state_log_min_isr", int_in(1), "2"),
    "transaction.state.log.segment.bytes": (
        "transaction_state_log_segment_bytes",
        int_in(1024),
        "104857600",
    ),
    # Authorization (Kafka's names): any authorizer.class.name turns on ACLs from the metadata
    # log (StandardAuthorizer); super.users ("User:admin;User:broker") bypass them.
    "authorizer.class.name": ("authorizer_class_name", lambda k, v: v.strip(), ""),
    "super.users": ("super_users", _super_users, ""),
    "allow.everyone.if.no.acl.found": ("allow_everyone_if_no_acl_found", _bool, "false"),
    # Idempotent producers idle this long are forgotten (Kafka's names and defaults: 1 day, 10 min).
    "producer.id.expiration.ms": ("producer_id_expiration_ms", int_in(1), "86400000"),
    "producer.id.expiration.check.interval.ms": (
        "producer_id_expiration_check_interval_ms",
        int_in(1),
        "600000",
    ),
    # Not a Kafka key (Kafka's metrics go to JMX and metric.reporters): where this node serves
    # Prometheus text. Named as Kafka names its metrics settings (metrics.num.samples,
    # metrics.recording.level), its value written as a `listeners` entry. Empty: off.
    "metrics.listener": ("metrics_listener", parse_metrics_listener, ""),
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
    "compression.type": "compression.type",
}
# Kafka's coarser spellings, converted to the ms key.
# Kafka's precedence: ms, then minutes, then hours (the first present wins).
SCALED_KEYS = {
    "log.retention.minutes": ("log.retention.ms", 60_000),
    "log.retention.hours": ("log.retention.ms", 3_600_000),
    "log.roll.hours": ("log.roll.ms", 3_600_000),
}
