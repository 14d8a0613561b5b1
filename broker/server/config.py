"""A node's configuration: Kafka's server.properties key names, parsed and checked, each
overridable with `--override key=value`. A bad value is an error that names its key. The key
table and the value parsers are in config_keys.py."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Mapping

from broker.group.messages import GroupConfig
from broker.security.config import (
    SECURITY_KEYS,
    SecurityConfig,
    SecurityConfigError,
    build_security,
)
from broker.server.config_keys import (
    BROKER_TO_TOPIC_KEYS,
    SCALED_KEYS,
    SERVER_KEYS,
    ServerConfigError,
    int_in,
    parse_listeners,
)
from broker.transaction.messages import TransactionConfig
from kraft.log.log_config import ConfigError, LogConfig
from kraft.security.authorizer import AuthorizerConfig


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    node_id: int
    process_roles: tuple[str, ...]
    listeners: Mapping[str, tuple[str, int]]  # listener name -> (host, port), in order
    controller_listener_names: tuple[str, ...]
    kafka_listener_names: tuple[str, ...]  # listeners speaking Kafka's wire protocol
    socket_request_max_bytes: int  # the largest Kafka request frame taken
    log_dirs: tuple[str, ...]
    num_partitions: int
    default_replication_factor: int
    auto_create_topics_enable: bool
    delete_topic_enable: bool
    rack: str
    retention_check_interval_ms: int
    flush_scheduler_interval_ms: int
    cleaner_backoff_ms: int
    checkpoint_interval_ms: int
    replica_lag_time_max_ms: int
    broker_heartbeat_interval_ms: int
    broker_session_timeout_ms: int
    quorum_fetch_timeout_ms: int
    quorum_voters: Mapping[int, str]  # voter node id -> "host:port"
    quorum_election_timeout_ms: int
    quorum_election_backoff_max_ms: int
    quorum_request_timeout_ms: int
    quorum_retry_backoff_ms: int
    metadata_snapshot_interval_records: int
    auto_leader_rebalance_enable: bool
    leader_imbalance_check_interval_seconds: int
    leader_imbalance_per_broker_percentage: int
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_initial_rebalance_delay_ms: int
    offset_metadata_max_bytes: int
    offsets_topic_num_partitions: int
    offsets_topic_replication_factor: int
    offsets_topic_segment_bytes: int
    offsets_commit_timeout_ms: int
    transaction_max_timeout_ms: int
    transactional_id_expiration_ms: int
    transaction_abort_cleanup_interval_ms: int
    transaction_state_log_num_partitions: int
    transaction_state_log_replication_factor: int
    transaction_state_log_min_isr: int
    transaction_state_log_segment_bytes: int
    authorizer_class_name: str
    super_users: frozenset[str]
    allow_everyone_if_no_acl_found: bool
    producer_id_expiration_ms: int
    producer_id_expiration_check_interval_ms: int
    topic_defaults: Mapping[str, str]  # topic-level keys, e.g. {"retention.ms": "..."}
    unknown_keys: tuple[str, ...] = ()
    security: SecurityConfig | None = None  # listener protocols, TLS files, SASL
    metrics_listener: tuple[str, int] | None = None  # (host, port) of the metrics endpoint

    @property
    def authorizer_config(self) -> AuthorizerConfig | None:
        """None when no authorizer.class.name is set: every request is allowed (Kafka's
        default), internal topics stay protected."""
        if not self.authorizer_class_name:
            return None
        return AuthorizerConfig(self.super_users, self.allow_everyone_if_no_acl_found)

    @property
    def listener(self) -> tuple[str, int]:
        """The broker listener: the first one not named in controller.listener.names (a node
        without one, i.e. a controller-only node, gets its first listener)."""
        brokers = [
            a
            for n, a in self.listeners.items()
            if n not in self.controller_listener_names and n not in self.kafka_listener_names
        ]
        return brokers[0] if brokers else next(iter(self.listeners.values()))

    @property
    def controller_listener(self) -> tuple[str, int] | None:
        """Where this node serves the Quorum service, if it has a controller listener."""
        for name in self.controller_listener_names:
            if name in self.listeners:
                return self.listeners[name]
        return None

    @property
    def runs_quorum(self) -> bool:
        """A controller is a voter of the Raft quorum; a broker-only node observes it."""
        return "controller" in self.process_roles

    @property
    def voters(self) -> Mapping[int, str]:
        """The quorum's voters. A controller with no controller.quorum.voters is a quorum of one
        (the single-node default): nobody ever dials it, so its address may be a placeholder."""
        if self.quorum_voters or not self.runs_quorum:
            return self.quorum_voters
        host, port = self.controller_listener or (self.host, 0)
        return {self.node_id: f"{host}:{port}"}

    @property
    def group_config(self) -> GroupConfig:
        return GroupConfig(
            min_session_timeout_ms=self.group_min_session_timeout_ms,
            max_session_timeout_ms=self.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=self.group_initial_rebalance_delay_ms,
            offset_metadata_max_bytes=self.offset_metadata_max_bytes,
            offsets_topic_num_partitions=self.offsets_topic_num_partitions,
            offsets_topic_replication_factor=self.offsets_topic_replication_factor,
        )

    @property
    def transaction_config(self) -> TransactionConfig:
        return TransactionConfig(
            max_timeout_ms=self.transaction_max_timeout_ms,
            transactional_id_expiration_ms=self.transactional_id_expiration_ms,
            abort_timed_out_cleanup_interval_ms=self.transaction_abort_cleanup_interval_ms,
            state_log_num_partitions=self.transaction_state_log_num_partitions,
            state_log_replication_factor=self.transaction_state_log_replication_factor,
            state_log_min_isr=self.transaction_state_log_min_isr,
            state_log_segment_bytes=self.transaction_state_log_segment_bytes,
        )

    @property
    def broker_listener_name(self) -> str:
        """The name of `listener` (see there)."""
        names = [
            n
            for n in self.listeners
            if n not in self.controller_listener_names and n not in self.kafka_listener_names
        ]
        return names[0] if names else next(iter(self.listeners))

    @property
    def kafka_listeners(self) -> dict[str, tuple[str, int]]:
        """The listeners speaking Kafka's wire protocol (kafka.listener.names), in order."""
        return {n: a for n, a in self.listeners.items() if n in self.kafka_listener_names}

    @property
    def controller_listener_name(self) -> str | None:
        return next((n for n in self.controller_listener_names if n in self.listeners), None)

    @property
    def host(self) -> str:
        return self.listener[0]

    @property
    def port(self) -> int:
        return self.listener[1]


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties, the subset server.properties files use: `key=value` or `key: value`,
    `#`/`!` comments, blank lines, and a line ending in a backslash continued on the next (how
    Kafka's PEM keys, ssl.keystore.key and the like, are written)."""
    props: dict[str, str] = {}
    lines = iter(enumerate(text.splitlines(), 1))
    for number, raw in lines:
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and (len(line) - len(line.rstrip("\\"))) % 2:
            line = line[:-1] + next(lines, (0, ""))[1].strip()
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep < 0:
            raise ServerConfigError(f"line {number}: {raw!r} is not key=value")
        props[line[:sep].strip()] = line[sep + 1 :].strip()
    return props


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ServerConfigError(
                f"--override {pair!r} is not key=value (e.g. --override num.partitions=3)"
            )
        out[key.strip()] = value.strip()
    return out


def build_config(props: Mapping[str, str]) -> ServerConfig:
    props = dict(props)
    given_as = {}  # the ms key -> the coarser key the user wrote, for errors
    for coarse, (fine, scale) in SCALED_KEYS.items():
        if coarse in props and fine not in props:
            coarse_value = int_in(-1)(coarse, props[coarse])
            props[fine] = str(-1 if coarse_value < 0 else coarse_value * scale)  # -1: unlimited
            given_as[fine] = coarse
    if "log.dir" in props and "log.dirs" not in props:
        props["log.dirs"] = props["log.dir"]
    values = {
        attr: parse(key, props.get(key, default))
        for key, (attr, parse, default) in SERVER_KEYS.items()
    }
    if not values["log_dirs"]:
        raise ServerConfigError("log.dirs: no directory given (e.g. log.dirs=/var/lib/kraft)")
    topic_defaults = {
        topic_key: props[key] for key, topic_key in BROKER_TO_TOPIC_KEYS.items() if key in props
    }
    for key, topic_key in BROKER_TO_TOPIC_KEYS.items():
        if key in props:
            _check_topic_default(given_as.get(key, key), topic_key, props[key])
    known = (
        set(SERVER_KEYS)
        | set(BROKER_TO_TOPIC_KEYS)
        | set(SCALED_KEYS)
        | {"log.dir"}
        | SECURITY_KEYS
    )
    unknown = tuple(
        sorted(
            k
            for k in props
            if k not in known
            and not (k.startswith("listener.name.") and k.endswith(".ssl.client.auth"))
        )
    )
    try:
        security = build_security(props, values["listeners"], parse_listeners)
    except SecurityConfigError as exc:
        raise ServerConfigError(str(exc)) from None
    config = ServerConfig(
        **values, topic_defaults=topic_defaults, unknown_keys=unknown, security=security
    )
    _check_quorum(config)
    _check_kafka_listeners(config)
    if config.group_min_session_timeout_ms > config.group_max_session_timeout_ms:
        raise ServerConfigError(
            f"group.min.session.timeout.ms: {config.group_min_session_timeout_ms} is above "
            f"group.max.session.timeout.ms ({config.group_max_session_timeout_ms}); lower it"
        )
    if config.transaction_state_log_min_isr > config.transaction_state_log_replication_factor:
        raise ServerConfigError(
            f"transaction.state.log.min.isr: {config.transaction_state_log_min_isr} is above "
            f"transaction.state.log.replication.factor "
            f"({config.transaction_state_log_replication_factor}): no transaction could ever be "
            "written; lower it"
        )
    return config


def _check_topic_default(key: str, topic_key: str, text: str) -> None:
    """A broker-wide topic default is checked as the topic key it stands for, but the error
    names the key the user wrote (log.retention.ms, not retention.ms)."""
    try:
        LogConfig.from_props({topic_key: text})
    except ConfigError as exc:
        reason = str(exc).split(": ", 1)[1]
        raise ServerConfigError(f"{key}: {reason}") from None


def _check_quorum(config: ServerConfig) -> None:
    if not config.runs_quorum:
        if not config.quorum_voters:
            raise ServerConfigError(
                "controller.quorum.voters: a broker-only node reads the metadata log from the "
                "controllers; list them, e.g. 1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095"
            )
        if config.node_id in config.quorum_voters:
            raise ServerConfigError(
                f"controller.quorum.voters names node.id {config.node_id}, but process.roles has no "
                f"controller; add it or use another node.id"
            )
        return
    if not config.quorum_voters:
        return  # a quorum of one: no listener needed, nobody calls it
    voters = ",".join(f"{i}@{a}" for i, a in config.quorum_voters.items())
    if config.node_id not in config.quorum_voters:
        raise ServerConfigError(
            f"controller.quorum.voters: node.id {config.node_id} is a controller "
            f"but not one of the voters ({voters}); add it or fix node.id"
        )
    if config.controller_listener is None:
        names = ",".join(config.controller_listener_names)
        raise ServerConfigError(
            f"listeners: a controller needs a listener named in controller.listener.names ({names}), "
            f"e.g. listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://{config.quorum_voters[config.node_id]}"
        )
    if "broker" in config.process_roles and len(config.listeners) < 2:
        raise ServerConfigError(
            "listeners: a broker,controller node needs a broker listener too, "
            "e.g. PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
        )


def _check_kafka_listeners(config: ServerConfig) -> None:
    both = set(config.kafka_listener_names) & set(config.controller_listener_names)
    if both:
        raise ServerConfigError(
            f"kafka.listener.names: {', '.join(sorted(both))} is also a "
            "controller listener; the controllers speak gRPC only"
        )
    for name in config.kafka_listeners:
        protocol = config.security.protocol(name) if config.security else "PLAINTEXT"
        if protocol != "PLAINTEXT":
            raise ServerConfigError(
                f"listener.security.protocol.map: the Kafka wire listener {name} serves "
                f"PLAINTEXT only so far, not {protocol}; map it {name}:PLAINTEXT (the gRPC "
                "listeners serve SSL and SASL)"
            )
    if config.kafka_listeners and config.broker_listener_name in config.kafka_listener_names:
        raise ServerConfigError(
            "listeners: a broker with a Kafka listener needs a gRPC one too (the other nodes and "
            "kraft's own clients use it), e.g. listeners=PLAINTEXT://127.0.0.1:9095,"
            "KAFKA://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
        )


def load_config(path: str | None, overrides: list[str]) -> ServerConfig:
    props: dict[str, str] = {}
    if path:
        file = pathlib.Path(path)
        if not file.is_file():
            raise ServerConfigError(f"config file {path} does not exist")
        props = parse_properties(file.read_text())
    props.update(parse_overrides(overrides))
    return build_config(props)
