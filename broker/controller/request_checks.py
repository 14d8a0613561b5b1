"""The Controller service's requests (as kraft/controller/messages.py dataclasses) checked before
they reach the controller: strings within Kafka's STRING type, ids, ports and partitions within
theirs (limits in broker/edge/request_limits.py); `check` raises Refused."""

from __future__ import annotations

from broker.edge.request_limits import (
    INT16_MAX,
    INT32_MAX,
    MAX_NAME_LENGTH,
    Refused,
    check_length,
    check_not_negative,
    check_range,
)
from clients.errors import ErrorCode
from kraft.controller import messages as m
from kraft.controller.controller_config import MAX_PARTITIONS

E = ErrorCode
# Kafka's STRING is int16-length-prefixed: no string in its protocol is longer. Config values
# and host names are the strings here that a client may legitimately make long.
MAX_STRING_LENGTH = INT16_MAX
MAX_HOST_LENGTH = 255  # a DNS name
# Partitions one request may create in all: the controller's per-topic limit (max_partitions).
# Each costs a log directory and files on every replica; without a cap one CreateTopics of 60
# topics could ask for 600,000 and hold the node for minutes (Kafka throttles such requests
# with its controller mutation quota instead).
MAX_PARTITIONS_PER_REQUEST = MAX_PARTITIONS
# Brokers one heartbeat may report unreachable: an honest broker names only leaders it follows.
MAX_REPORTED_BROKERS = 1_000


def _create_topics(req: m.CreateTopicsRequest) -> None:
    for t in req.topics:
        where = f"topic {t.name[:60]!r}"
        check_range(
            f"{where}: num_partitions",
            t.num_partitions,
            -1,
            INT32_MAX,
            E.INVALID_PARTITIONS,
            "-1 for num.partitions",
        )
        # Kafka's replication factor is an int16.
        check_range(
            f"{where}: replication_factor",
            t.replication_factor,
            -1,
            INT16_MAX,
            E.INVALID_REPLICATION_FACTOR,
            "-1 for default.replication.factor",
        )
        _configs(where, t.configs.items())
    _partitions_in_all(sum(max(t.num_partitions, 1) for t in req.topics))


def _partitions_in_all(total: int) -> None:
    if total > MAX_PARTITIONS_PER_REQUEST:
        raise Refused(
            E.INVALID_PARTITIONS,
            f"the request creates {total} partitions in all; the limit is "
            f"{MAX_PARTITIONS_PER_REQUEST} per request: send several requests",
        )


def _configs(where: str, items) -> None:
    for key, value in items:
        check_length(f"{where}: config name", key, MAX_NAME_LENGTH, E.INVALID_CONFIG)
        if value is not None:
            check_length(f"{where}: {key[:60]}", value, MAX_STRING_LENGTH, E.INVALID_CONFIG)


def _alter_configs(req: m.IncrementalAlterConfigsRequest) -> None:
    for r in req.resources:
        _configs(
            f"{r.resource_type} {r.resource_name[:60]!r}", ((op.name, op.value) for op in r.ops)
        )


def _create_partitions(req: m.CreatePartitionsRequest) -> None:
    for t in req.topics:
        check_range(
            f"topic {t.name[:60]!r}: count",
            t.count,
            1,
            INT32_MAX,
            E.INVALID_PARTITIONS,
            "the new total number of partitions",
        )


def _register_broker(req: m.RegisterBrokerRequest) -> None:
    check_range("broker_id", req.broker_id, 0, INT32_MAX, hint="the broker's node.id")
    check_length("host", req.host, MAX_HOST_LENGTH, required=True)
    check_range("port", req.port, 1, 65_535)
    check_length("rack", req.rack or "", MAX_NAME_LENGTH)
    check_length("incarnation_id", req.incarnation_id, MAX_NAME_LENGTH, required=True)


def _broker_heartbeat(req: m.BrokerHeartbeatRequest) -> None:
    reported = req.unreachable_brokers
    if len(reported) > MAX_REPORTED_BROKERS:
        raise Refused(
            E.INVALID_REQUEST,
            f"unreachable_brokers names {len(reported)} brokers; the limit is "
            f"{MAX_REPORTED_BROKERS}",
        )
    for broker_id in reported:
        check_range("unreachable_brokers", broker_id, 0, INT32_MAX, hint="a broker's node.id")


def _alter_partition(req: m.AlterPartitionRequest) -> None:
    for change in req.partitions:
        check_not_negative(
            f"{change.topic_id[:60]}-{change.partition}: partition",
            change.partition,
            E.UNKNOWN_TOPIC_OR_PARTITION,
        )


def _elect_leaders(req: m.ElectLeadersRequest) -> None:
    for topic, partition in req.partitions or ():
        check_not_negative(
            f"{topic[:60]}-{partition}: partition",
            partition,
            E.UNKNOWN_TOPIC_OR_PARTITION,
            "partitions are numbered from 0",
        )


_CHECKS = {
    m.CreateTopicsRequest: _create_topics,
    m.CreatePartitionsRequest: _create_partitions,
    m.IncrementalAlterConfigsRequest: _alter_configs,
    m.RegisterBrokerRequest: _register_broker,
    m.BrokerHeartbeatRequest: _broker_heartbeat,
    m.AlterPartitionRequest: _alter_partition,
    m.ElectLeadersRequest: _elect_leaders,
}


def check(request) -> None:
    """Raises Refused when `request` (a Controller request dataclass) is out of bounds."""
    found = _CHECKS.get(type(request))
    if found is not None:
        found(request)
