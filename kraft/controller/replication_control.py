"""Topics and partitions: create and delete topics, add partitions, leader elections asked for by
an admin, and ISR changes from partition leaders (AlterPartition), checked against epochs."""

from __future__ import annotations

import random
import uuid

from clients.errors import ErrorCode
from clients.topics import creatable_topic_problem
from kraft.controller.cluster_control import check_broker_epoch
from kraft.controller.config_control import (
    TopicConfigs,
    internal_topic_problem,
    unknown_topic_message,
)
from kraft.controller.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResult,
    CreateTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ElectionType,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResult,
)
from kraft.controller.partition_change import UncleanPolicy, partition_change
from kraft.controller.placement import PlacementError, UsableBroker, place_replicas
from kraft.controller.result import ControllerResult, PendingRecords
from kraft.log.log_config import ConfigError
from kraft.metadata.image import TOPIC_RESOURCE, MetadataImage
from kraft.metadata.records import (
    NO_LEADER,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    return [UsableBroker(b.broker_id, b.rack) for b in image.live_brokers()]


def _place(
    image: MetadataImage, rng: random.Random, count: int, rf: int, first_partition: int = 0
) -> list[tuple[int, ...]]:
    brokers = _usable_brokers(image)
    try:
        return place_replicas(
            brokers, count, rf, rng.randrange(max(len(brokers), 1)), first_partition
        )
    except PlacementError as exc:
        raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None


def _colliding_topic(image: MetadataImage, name: str) -> str | None:
    # Kafka's rule: '.' and '_' collide in metric names, so 'a.b' and 'a_b' cannot both exist.
    key = name.replace(".", "_")
    return next((t for t in image.topics_by_name if t.replace(".", "_") == key), None)


def create_topics(
    image: MetadataImage, configs: TopicConfigs, req: CreateTopicsRequest, rng: random.Random
) -> ControllerResult[CreateTopicsResponse]:
    pending = PendingRecords(image)
    names = [t.name for t in req.topics]
    results = []
    for topic in req.topics:
        try:
            if names.count(topic.name) > 1:
                raise _Refused(
                    ErrorCode.INVALID_REQUEST,
                    f"topic '{topic.name}' appears more than once in the request",
                )
            results.append(_create_topic(pending, configs, topic, req, rng))
        except _Refused as refused:
            results.append(CreateTopicResult(topic.name, refused.code, refused.message))
    return ControllerResult(pending.records, CreateTopicsResponse(tuple(results)))


def _create_topic(
    pending: PendingRecords,
    configs: TopicConfigs,
    topic,
    req: CreateTopicsRequest,
    rng: random.Random,
) -> CreateTopicResult:
    image, config, name = pending.image, configs.config, topic.name
    problem = creatable_topic_problem(name, req.internal)
    if problem:
        raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    if image.topic(name) is not None:
        raise _Refused(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic '{name}' already exists")
    other = _colliding_topic(image, name)
    if other is not None:
        raise _Refused(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic '{name}' collides with existing topic '{other}' ('.' and '_' "
            "are the same in metric names); choose another name",
        )
    count = config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    if not 1 <= count <= config.max_partitions:
        raise _Refused(
            ErrorCode.INVALID_PARTITIONS,
            f"{count} partitions: use 1 to {config.max_partitions} (or -1 for "
            f"num.partitions, {config.num_partitions})",
        )
    rf = (
        config.default_replication_factor
        if topic.replication_factor == -1
        else topic.replication_factor
    )
    if rf < 1:
        raise _Refused(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {rf} must be at least 1 (or -1 for "
            f"default.replication.factor, {config.default_replication_factor})",
        )
    overrides = {k: str(v) for k, v in topic.configs.items()}
    try:
        configs.validate(overrides)
    except ConfigError as exc:
        raise _Refused(ErrorCode.INVALID_CONFIG, str(exc)) from None
    assignment = _place(image, rng, count, rf)
    topic_id = uuid.UUID(int=rng.getrandbits(128), version=4).hex
    result = CreateTopicResult(
        name, topic_id=topic_id, num_partitions=count, replication_factor=rf, configs=overrides
    )
    if req.validate_only:
        return result
    pending.append(TopicRecord(name, topic_id))
    for key, value in sorted(overrides.items()):
        pending.append(ConfigRecord(TOPIC_RESOURCE, name, key, value))
    for p, replicas in enumerate(assignment):
        pending.append(PartitionRecord(topic_id, p, replicas, isr=replicas, leader=replicas[0]))
    return result


def delete_topics(
    image: MetadataImage, configs: TopicConfigs, req: DeleteTopicsRequest
) -> ControllerResult[DeleteTopicsResponse]:
    records, results, deleted = [], [], {}
    for name in req.names:
        if not configs.config.delete_topic_enable:
            results.append(
                DeleteTopicResult(
                    name,
                    ErrorCode.POLICY_VIOLATION,
                    "topic deletion is off (delete.topic.enable=false)",
                )
            )
            continue
        internal = internal_topic_problem(name, "deleted")
        if internal:
            results.append(DeleteTopicResult(name, ErrorCode.POLICY_VIOLATION, internal))
            continue
        if name in deleted:  # named twice: deleted once
            results.append(DeleteTopicResult(name, topic_id=deleted[name]))
            continue
        topic = image.topic(name)
        if topic is None:
            results.append(
                DeleteTopicResult(
                    name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, unknown_topic_message(name)
                )
            )
            continue
        deleted[name] = topic.topic_id
        records.append(RemoveTopicRecord(topic.topic_id))
        results.append(DeleteTopicResult(name, topic_id=topic.topic_id))
    return ControllerResult(records, DeleteTopicsResponse(tuple(results)))


def create_partitions(
    image: MetadataImage, configs: TopicConfigs, req: CreatePartitionsRequest, rng: random.Random
) -> ControllerResult[CreatePartitionsResponse]:
    records, results = [], []
    names = [t.name for t in req.topics]
    max_partitions = configs.config.max_partitions
    for t in req.topics:
        try:
            if names.count(t.name) > 1:
                raise _Refused(
                    ErrorCode.INVALID_REQUEST,
                    f"topic '{t.name}' appears more than once in the request",
                )
            internal = internal_topic_problem(t.name, "resized")
            if internal:
                raise _Refused(ErrorCode.POLICY_VIOLATION, internal)
            topic = image.topic(t.name)
            if topic is None:
                raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, unknown_topic_message(t.name))
            current = len(topic.partitions)
            if t.count <= current or t.count > max_partitions:
                raise _Refused(
                    ErrorCode.INVALID_PARTITIONS,
                    f"topic '{t.name}' has {current} partitions; the new count must "
                    f"be larger (up to {max_partitions}), got {t.count}",
                )
            rf = len(topic.partitions[0].replicas) if current else 1
            assignment = _place(image, rng, t.count - current, rf, first_partition=current)
            if not req.validate_only:
                records.extend(
                    PartitionRecord(
                        topic.topic_id, current + i, replicas, isr=replicas, leader=replicas[0]
                    )
                    for i, replicas in enumerate(assignment)
                )
            results.append(CreatePartitionsResult(t.name))
        except _Refused as refused:
            results.append(CreatePartitionsResult(t.name, refused.code, refused.message))
    return ControllerResult(records, CreatePartitionsResponse(tuple(results)))


def elect_leaders(
    image: MetadataImage, req: ElectLeadersRequest, unclean_for: UncleanPolicy | None = None
) -> ControllerResult[ElectLeadersResponse]:
    """Kafka's ElectLeaders. PREFERRED moves leadership to the first replica when it is live and
    in the ISR. UNCLEAN gives a leaderless partition a leader: a live ISR member if there is one,
    else the first live replica, with an ISR of itself (acknowledged writes may be lost).

    An UNCLEAN request is the operator's explicit consent, so, as in Kafka, it does not consult
    unclean.leader.election.enable (`unclean_for` is accepted for a uniform command signature).
    With `partitions` None every partition is tried and, as in Kafka, those already as asked
    (ELECTION_NOT_NEEDED) are left out of the response; failures are still reported."""
    if req.election_type not in tuple(ElectionType):
        return ControllerResult(
            [],
            ElectLeadersResponse(
                (),
                ErrorCode.INVALID_REQUEST,
                f"election type {req.election_type} is unknown; use 0 (PREFERRED) or 1 (UNCLEAN)",
            ),
        )
    every = req.partitions is None
    wanted = _every_partition(image) if every else list(dict.fromkeys(req.partitions))
    pending = PendingRecords(image)
    results = []
    for topic, partition in wanted:
        try:
            _elect_one(pending, req.election_type, topic, partition)
            results.append(ElectLeadersResult(topic, partition))
        except _Refused as refused:
            if not (every and refused.code == ErrorCode.ELECTION_NOT_NEEDED):
                results.append(ElectLeadersResult(topic, partition, refused.code, refused.message))
    return ControllerResult(pending.records, ElectLeadersResponse(tuple(results)))


def _every_partition(image: MetadataImage) -> list[tuple[str, int]]:
    return [
        (name, p)
        for name, topic in sorted(image.topics_by_name.items())
        for p in sorted(topic.partitions)
    ]


def _elect_one(
    pending: PendingRecords, election_type: int, topic_name: str, partition: int
) -> None:
    image = pending.image
    topic = image.topic(topic_name)
    if topic is None:
        raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, unknown_topic_message(topic_name))
    reg = topic.partitions.get(partition)
    if reg is None:
        raise _Refused(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"topic '{topic_name}' has no partition {partition} (it has {len(topic.partitions)})",
        )
    where = f"{topic_name}-{partition}"
    if election_type == ElectionType.PREFERRED:
        preferred = reg.replicas[0]
        if reg.leader == preferred:
            raise _Refused(
                ErrorCode.ELECTION_NOT_NEEDED,
                f"{where}: the preferred replica {preferred} already leads",
            )
        if preferred not in reg.isr or not image.can_serve(preferred, topic.topic_id, partition):
            state = (
                "is not in the ISR"
                if image.can_serve(preferred, topic.topic_id, partition)
                else "is fenced or offline"
            )
            raise _Refused(
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                f"{where}: the preferred replica {preferred} {state}; retry once it "
                f"has caught up (ISR {list(reg.isr)})",
            )
        pending.append(PartitionChangeRecord(topic.topic_id, partition, leader=preferred))
        return
    if reg.leader != NO_LEADER:
        raise _Refused(
            ErrorCode.ELECTION_NOT_NEEDED,
            f"{where}: broker {reg.leader} leads; unclean election is only for "
            "partitions without a leader",
        )
    # The partition-change rules elect a live ISR member first, then (unclean) any live replica.
    record = partition_change(image, topic.topic_id, partition, reg, unclean=True)
    if record is None:
        raise _Refused(
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            f"{where}: none of the replicas {list(reg.replicas)} is live; restart one of them",
        )
    pending.append(record)


def imbalanced_partitions(image: MetadataImage, percentage: int) -> list[tuple[str, int]]:
    """The partitions to hand back to their preferred replica (the first), by Kafka's automatic
    rebalance rule (KafkaController.checkAndTriggerAutoLeaderRebalance): group partitions by
    preferred replica; a broker led elsewhere on more than `percentage` % of its group gets
    those partitions back, each one where it is live and in the ISR (else the election would
    only refuse). Leaderless partitions count as led elsewhere. In (topic, partition) order."""
    groups: dict[int, list] = {}
    for name, topic in sorted(image.topics_by_name.items()):
        for partition, reg in sorted(topic.partitions.items()):
            if reg.replicas:
                groups.setdefault(reg.replicas[0], []).append((name, partition, reg))
    out = []
    for broker, group in groups.items():
        elsewhere = [(name, p, reg) for name, p, reg in group if reg.leader != broker]
        # Integers, not a ratio: 1 of 10 at 10 % is not over the threshold (Kafka's `>`).
        if len(elsewhere) * 100 <= percentage * len(group) or not image.is_live(broker):
            continue
        out.extend((name, p) for name, p, reg in elsewhere if broker in reg.isr)
    return sorted(out)


def alter_partition(
    image: MetadataImage, req: AlterPartitionRequest
) -> ControllerResult[AlterPartitionResponse]:
    """ISR changes from a partition leader. The leader sends the leader and partition epochs it
    knows; a mismatch means the controller changed the partition since, and the leader must
    refresh its metadata first."""
    problem = check_broker_epoch(image, req.broker_id, req.broker_epoch)
    if problem:
        return ControllerResult([], AlterPartitionResponse(*problem))
    pending = PendingRecords(image)
    results = []
    for change in req.partitions:
        try:
            results.append(_alter_one(pending, req.broker_id, change))
        except _Refused as refused:
            reg = _registration(pending.image, change)
            results.append(_state(change, reg, refused.code, refused.message))
    return ControllerResult(pending.records, AlterPartitionResponse(partitions=tuple(results)))


def _registration(image, change):
    topic = image.topic_by_id(change.topic_id)
    return None if topic is None else topic.partitions.get(change.partition)


def _state(change, reg, code=0, message="") -> AlterPartitionResult:
    if reg is None:
        return AlterPartitionResult(change.topic_id, change.partition, code, message)
    return AlterPartitionResult(
        change.topic_id,
        change.partition,
        code,
        message,
        reg.leader,
        reg.leader_epoch,
        reg.isr,
        reg.partition_epoch,
    )


def _alter_one(pending: PendingRecords, broker_id: int, change) -> AlterPartitionResult:
    image = pending.image
    topic = image.topic_by_id(change.topic_id)
    if topic is None:
        raise _Refused(
            ErrorCode.UNKNOWN_TOPIC_ID,
            f"no topic has id {change.topic_id}; it may have been deleted",
        )
    reg = topic.partitions.get(change.partition)
    where = f"{topic.name}-{change.partition}"
    if reg is None:
        raise _Refused(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"topic '{topic.name}' has no partition {change.partition}",
        )
    if change.leader_epoch != reg.leader_epoch:
        raise _Refused(
            ErrorCode.FENCED_LEADER_EPOCH,
            f"{where}: leader epoch {change.leader_epoch} is not the current "
            f"{reg.leader_epoch}; refresh metadata",
        )
    if broker_id != reg.leader:
        raise _Refused(
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            f"{where}: broker {broker_id} is not the leader (the leader is {reg.leader})",
        )
    if change.partition_epoch != reg.partition_epoch:
        raise _Refused(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"{where}: partition epoch {change.partition_epoch} is not the current "
            f"{reg.partition_epoch}; the partition changed since, refresh metadata",
        )
    new_isr = tuple(change.new_isr)
    if not new_isr or len(set(new_isr)) != len(new_isr) or reg.leader not in new_isr:
        raise _Refused(
            ErrorCode.INVALID_REQUEST,
            f"{where}: ISR {list(new_isr)} must list distinct replicas including the "
            f"leader {reg.leader}",
        )
    strangers = [b for b in new_isr if b not in reg.replicas]
    if strangers:
        raise _Refused(
            ErrorCode.INVALID_REQUEST,
            f"{where}: brokers {strangers} in the ISR are not replicas {list(reg.replicas)}",
        )
    fenced = [b for b in new_isr if not image.is_live(b)]
    if fenced:
        raise _Refused(
            ErrorCode.INELIGIBLE_REPLICA,
            f"{where}: brokers {fenced} are fenced or not registered and cannot join "
            "the ISR until they heartbeat again",
        )
    offline = [b for b in new_isr if not image.can_serve(b, change.topic_id, change.partition)]
    if offline:
        raise _Refused(
            ErrorCode.INELIGIBLE_REPLICA,
            f"{where}: the replicas on brokers {offline} are offline (a failed log "
            "dir or damaged files) and cannot join the ISR until those brokers restart",
        )
    stale = [
        b
        for b, epoch in zip(new_isr, change.new_isr_broker_epochs)
        if b not in reg.isr and epoch >= 0 and image.broker(b).broker_epoch != epoch
    ]
    if stale:
        raise _Refused(
            ErrorCode.INELIGIBLE_REPLICA,
            f"{where}: brokers {stale} restarted since the leader saw them caught up "
            "(their broker epoch changed); they rejoin once they fetch again",
        )
    if new_isr != reg.isr:
        pending.append(PartitionChangeRecord(change.topic_id, change.partition, isr=new_isr))
    return _state(change, _registration(pending.image, change))
