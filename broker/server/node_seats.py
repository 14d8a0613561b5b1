"""What a node opens before it serves: the check that its log dirs are formatted, the broker's
storage (logs, replicas, image) and its seat on the metadata quorum, with the controller's."""

from __future__ import annotations

import dataclasses
import pathlib
import random

from broker.controller.active import ActiveController
from broker.metadata.publisher import BrokerMetadata
from broker.metadata.quorum import MetadataQuorum, QuorumConfig
from broker.replication.replica_manager import ReplicaManager
from broker.server.config import ServerConfig, ServerConfigError
from broker.server.lifecycle import BrokerEpoch
from kraft.controller.controller import QuorumController
from kraft.controller.controller_config import ControllerConfig
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager, read_meta_properties
from kraft.raft import RaftConfig
from kraft.raft.disk import quorum_state_path


class NodeStartError(RuntimeError):
    """The node cannot start; the message says why and what to do."""


def check_formatted(config: ServerConfig) -> str:
    """The cluster id shared by every log dir; refuses unformatted or mismatched dirs."""
    cluster_ids = set()
    for d in config.log_dirs:
        meta = read_meta_properties(pathlib.Path(d))
        if meta is None:
            raise NodeStartError(
                f"log dir {d} is not formatted; run: kraft format --config <server.properties>"
            )
        if int(meta.get("node.id", -1)) != config.node_id:
            raise NodeStartError(
                f"log dir {d} belongs to node {meta.get('node.id')}, but node.id is "
                f"{config.node_id}; fix node.id or point log.dirs elsewhere"
            )
        cluster_ids.add(meta.get("cluster.id", ""))
    if len(cluster_ids) != 1:
        raise NodeStartError(f"log dirs disagree on cluster.id ({', '.join(sorted(cluster_ids))})")
    if config.runs_quorum and not quorum_state_path(metadata_dir(config)).exists():
        raise NodeStartError(
            f"log dir {metadata_dir(config)} has no quorum-state; "
            f"run: kraft format --config <server.properties> --ignore-formatted"
        )
    return cluster_ids.pop()


def controller_config(config: ServerConfig) -> ControllerConfig:
    return ControllerConfig(
        num_partitions=config.num_partitions,
        default_replication_factor=config.default_replication_factor,
        broker_session_timeout_ms=config.broker_session_timeout_ms,
        delete_topic_enable=config.delete_topic_enable,
        topic_defaults=dict(config.topic_defaults),
        auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_seconds=(config.leader_imbalance_check_interval_seconds),
        leader_imbalance_per_broker_percentage=(config.leader_imbalance_per_broker_percentage),
    )


def metadata_dir(config: ServerConfig) -> pathlib.Path:
    """Kafka's metadata.log.dir defaults to the first of log.dirs; so does ours."""
    return pathlib.Path(config.log_dirs[0])


def quorum_config(config: ServerConfig) -> QuorumConfig:
    return QuorumConfig(
        config.node_id, config.voters, config.runs_quorum, metadata_dir(config), raft_config(config)
    )


def raft_config(config: ServerConfig) -> RaftConfig:
    fetch_timeout = config.quorum_fetch_timeout_ms
    try:
        # The leader parks an idle Fetch for at most a quarter of the fetch timeout, so a follower
        # always hears back well before it would give up on the leader.
        return RaftConfig(
            election_timeout_ms=config.quorum_election_timeout_ms,
            fetch_timeout_ms=fetch_timeout,
            election_backoff_max_ms=config.quorum_election_backoff_max_ms,
            request_timeout_ms=config.quorum_request_timeout_ms,
            retry_backoff_ms=config.quorum_retry_backoff_ms,
            fetch_max_wait_ms=max(1, min(500, fetch_timeout // 4)),
            snapshot_interval_entries=max(0, config.metadata_snapshot_interval_records),
        )
    except ValueError as exc:
        raise ServerConfigError(f"controller.quorum.*: {exc}") from None


@dataclasses.dataclass(frozen=True)
class BrokerStorage:
    """A broker's logs and what is built on them before the quorum (which replays into them)."""

    log_manager: LogManager
    epoch: BrokerEpoch
    replicas: ReplicaManager
    metadata: BrokerMetadata


def open_broker_storage(config: ServerConfig, now_ms: int) -> BrokerStorage:
    """The partition logs and the replicas and image over them: opened (logs recovered)
    before the metadata quorum, which replays into the image from its first entry."""
    log_dirs = [pathlib.Path(d) for d in config.log_dirs]
    log_manager = LogManager(log_dirs, LogConfig.from_props(config.topic_defaults), now_ms=now_ms)
    epoch = BrokerEpoch()  # the lifecycle writes it; replication and producer ids read it
    replicas = ReplicaManager(
        log_manager,
        config.node_id,
        broker_epoch=epoch,
        replica_lag_time_max_ms=config.replica_lag_time_max_ms,
    )
    return BrokerStorage(
        log_manager,
        epoch,
        replicas,
        BrokerMetadata(config.node_id, replicas, config.topic_defaults),
    )


def open_quorum(
    config: ServerConfig, cluster_id: str, to_controllers, broker_metadata: BrokerMetadata | None
) -> MetadataQuorum:
    """The node's seat on the metadata log, wired whole: on a controller the active controller
    (made from the quorum's driver) replays first and is what snapshots are taken of; on a
    broker its image follows (and is the snapshot source of a broker-only node)."""

    def controller(driver) -> ActiveController:
        return ActiveController(
            QuorumController(controller_config(config), rng=random.Random()), driver
        )

    listeners = (broker_metadata,) if broker_metadata is not None else ()
    return MetadataQuorum(
        quorum_config(config),
        cluster_id,
        to_controllers,
        listeners=listeners,
        controller=controller if config.runs_quorum else None,
        snapshot_source=(lambda: broker_metadata.image) if broker_metadata is not None else None,
    )
