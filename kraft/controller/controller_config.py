"""The settings the quorum controller needs, under Kafka's names, taken from the node's
server.properties by the caller (the controller does not read files)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

MAX_PARTITIONS = 10_000
PRODUCER_ID_BLOCK_SIZE = 1000


@dataclass(frozen=True)
class ControllerConfig:
    num_partitions: int = 1  # num.partitions
    default_replication_factor: int = 1  # default.replication.factor
    broker_session_timeout_ms: int = 9000  # broker.session.timeout.ms
    delete_topic_enable: bool = True  # delete.topic.enable
    # Broker-level topic defaults under topic key names, e.g. {"retention.ms": "1000"}.
    topic_defaults: Mapping[str, str] = field(default_factory=dict)
    max_partitions: int = MAX_PARTITIONS
    # Preferred-leader balancing by the active controller (Kafka's names and defaults).
    auto_leader_rebalance_enable: bool = True  # auto.leader.rebalance.enable
    leader_imbalance_check_interval_seconds: int = 300  # leader.imbalance.check.interval.seconds
    leader_imbalance_per_broker_percentage: int = 10  # leader.imbalance.per.broker.percentage
