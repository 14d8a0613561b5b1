"""Leader election and ISR changes for one partition, and the partition changes that follow a
broker being fenced or unfenced. Rules (Kafka's, without ELR):
- the leader stays while it is live and in the ISR;
- otherwise the new leader is the first replica (in assignment order, so the preferred leader
  wins ties) that is in the ISR and live;
- with none, and unclean.leader.election.enable for the topic, the first live replica becomes
  leader with an ISR of itself (acknowledged writes may be lost);
- else the partition has no leader (-1) until an ISR member comes back;
- the ISR never becomes empty: the last member stays, so it may lead again when it returns."""

from __future__ import annotations

from collections.abc import Callable

from kraft.controller.result import PendingRecords
from kraft.metadata.image import MetadataImage, PartitionRegistration
from kraft.metadata.records import NO_LEADER, BrokerRegistrationChangeRecord, PartitionChangeRecord

UncleanPolicy = Callable[[str], bool]  # topic name -> unclean.leader.election.enable


def partition_change(
    image: MetadataImage,
    topic_id: str,
    partition: int,
    reg: PartitionRegistration,
    target_isr: tuple[int, ...] | None = None,
    unclean: bool = False,
) -> PartitionChangeRecord | None:
    """The record moving `reg` to `target_isr` (default: unchanged) with a leader elected by
    the rules above; None when nothing would change."""
    isr = reg.isr if target_isr is None else tuple(target_isr)
    leader = reg.leader

    def can_lead(b: int) -> bool:
        return image.can_serve(b, topic_id, partition)

    if not (leader in isr and can_lead(leader)):
        leader = next((b for b in reg.replicas if b in isr and can_lead(b)), NO_LEADER)
        if leader == NO_LEADER and unclean:
            leader = next((b for b in reg.replicas if can_lead(b)), NO_LEADER)
            if leader != NO_LEADER:
                isr = (leader,)
    new_isr = None if isr == reg.isr else isr
    new_leader = None if leader == reg.leader else leader
    if new_isr is None and new_leader is None:
        return None
    return PartitionChangeRecord(topic_id, partition, isr=new_isr, leader=new_leader)


def fence_broker(pending: PendingRecords, broker_id: int, unclean_for: UncleanPolicy) -> None:
    """Fence a registered broker (if not fenced yet), drop it from every ISR and move leadership
    away from it."""
    broker = pending.image.broker(broker_id)
    if broker is not None and not broker.fenced:
        pending.append(BrokerRegistrationChangeRecord(broker_id, broker.broker_epoch, fenced=True))
    remove_from_isrs(pending, broker_id, unclean_for)


def remove_from_isrs(pending: PendingRecords, broker_id: int, unclean_for: UncleanPolicy) -> None:
    """Partition changes for a broker that may no longer lead or count as in sync (fenced, or
    registered again by a new process that may have lost unflushed data)."""
    image = pending.image
    for tp in image.partitions_replicated_on(broker_id):
        reg = tp.registration
        if broker_id not in reg.isr and reg.leader != broker_id:
            continue
        isr = tuple(b for b in reg.isr if b != broker_id) or reg.isr
        record = partition_change(image, tp.topic_id, tp.partition, reg, isr, unclean_for(tp.topic))
        if record is not None:
            pending.append(record)


def take_replicas_offline(
    pending: PendingRecords,
    broker_id: int,
    replicas: tuple[tuple[str, int], ...],
    unclean_for: UncleanPolicy,
) -> None:
    """Kafka's handleDirectoriesOffline, per replica (partitions here carry no log dir): record
    the broker's newly reported offline replicas (topic_id, partition), drop it from those ISRs
    and move their leadership away, as fencing does for all of a broker's partitions."""
    image = pending.image
    broker = image.broker(broker_id)
    if broker is None:
        return
    reported = {tp for tp in replicas if image.topic_by_id(tp[0]) is not None}
    new = reported - broker.offline_replicas
    if not new:
        return
    still = {tp for tp in broker.offline_replicas if image.topic_by_id(tp[0]) is not None}
    pending.append(
        BrokerRegistrationChangeRecord(
            broker_id, broker.broker_epoch, broker.fenced, tuple(sorted(still | new))
        )
    )
    image = pending.image
    for topic_id, partition in sorted(new):
        topic = image.topic_by_id(topic_id)
        reg = topic.partitions.get(partition)
        if reg is None or (broker_id not in reg.isr and reg.leader != broker_id):
            continue
        isr = tuple(b for b in reg.isr if b != broker_id) or reg.isr
        record = partition_change(image, topic_id, partition, reg, isr, unclean_for(topic.name))
        if record is not None:
            pending.append(record)


def unfence_broker(pending: PendingRecords, broker_id: int, unclean_for: UncleanPolicy) -> None:
    """Unfence a broker and give leaderless partitions it can lead a leader again."""
    broker = pending.image.broker(broker_id)
    if broker is None or not broker.fenced:
        return
    pending.append(BrokerRegistrationChangeRecord(broker_id, broker.broker_epoch, fenced=False))
    image = pending.image
    for tp in image.partitions_replicated_on(broker_id):
        if tp.registration.leader == NO_LEADER:
            record = partition_change(
                image, tp.topic_id, tp.partition, tp.registration, unclean=unclean_for(tp.topic)
            )
            if record is not None:
                pending.append(record)
