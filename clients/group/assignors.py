"""Partition assignors a group's leader member runs (Kafka's RangeAssignor, RoundRobinAssignor,
StickyAssignor): pure functions from topics and subscriptions to each member's partitions."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from clients.group.protocol import NO_GENERATION, Subscription
from clients.types import TopicPartition

# All three take `partitions_per_topic` ({topic: partition count}; topics missing from it do not
# exist and are skipped) and `subscriptions` ({member_id: Subscription}), and return
# {member_id: [TopicPartition, ...]} with every member present and each list sorted. The result
# never depends on the order of either mapping. Members are ordered as Kafka's MemberInfo orders
# them: static members (group.instance.id) first by instance id, then the rest by member id, so a
# restarted static member with a new member id gets the same partitions from range and round-robin.

Assignment = dict[str, list[TopicPartition]]


def member_order(member_id: str, sub: Subscription) -> tuple:
    if sub.group_instance_id is not None:
        return (0, sub.group_instance_id, member_id)
    return (1, member_id, member_id)


def _sorted_members(subscriptions: Mapping[str, Subscription]) -> list[str]:
    return sorted(subscriptions, key=lambda m: member_order(m, subscriptions[m]))


def _subscribed_partitions(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> list[TopicPartition]:
    topics = {t for s in subscriptions.values() for t in s.topics if t in partitions_per_topic}
    return [TopicPartition(t, p) for t in sorted(topics) for p in range(partitions_per_topic[t])]


def _finish(result: Assignment) -> Assignment:
    return {m: sorted(tps) for m, tps in result.items()}


def range_assign(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> Assignment:
    """Per topic, consecutive ranges: with n partitions and c subscribers each gets n // c and the
    first n % c one more. Balanced per topic only: the same members get the extras every time."""
    result: Assignment = {m: [] for m in subscriptions}
    members = _sorted_members(subscriptions)
    for topic in sorted({t for s in subscriptions.values() for t in s.topics}):
        if topic not in partitions_per_topic:
            continue
        consumers = [m for m in members if topic in subscriptions[m].topics]
        n, c = partitions_per_topic[topic], len(consumers)
        per, extra = divmod(n, c)
        for i, m in enumerate(consumers):
            start = per * i + min(i, extra)
            length = per + (1 if i < extra else 0)
            result[m].extend(TopicPartition(topic, p) for p in range(start, start + length))
    return _finish(result)


def round_robin_assign(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> Assignment:
    """All partitions in (topic, partition) order dealt to members in turn, skipping members
    not subscribed to the partition's topic."""
    result: Assignment = {m: [] for m in subscriptions}
    members = _sorted_members(subscriptions)
    i = 0
    for tp in _subscribed_partitions(partitions_per_topic, subscriptions):
        while tp.topic not in subscriptions[members[i % len(members)]].topics:
            i += 1
        result[members[i % len(members)]].append(tp)
        i += 1
    return _finish(result)


def _previous_owners(
    subscriptions: Mapping[str, Subscription], members: list[str], existing: set[TopicPartition]
) -> dict[TopicPartition, str]:
    """Kafka's rules: only members of the newest generation any member reports keep what they
    owned; a partition two of them claim is taken from both; a partition that no longer exists
    or that its owner no longer subscribes to is dropped."""
    newest = max((subscriptions[m].generation for m in members), default=NO_GENERATION)
    owner: dict[TopicPartition, str] = {}
    contested: set[TopicPartition] = set()
    for m in members:
        sub = subscriptions[m]
        if sub.generation != newest:
            continue
        for tp in sub.owned_partitions:
            tp = TopicPartition(*tp)
            if tp not in existing or tp.topic not in sub.topics or tp in contested:
                continue
            if tp in owner:
                del owner[tp]
                contested.add(tp)
            else:
                owner[tp] = m
    return owner


def sticky_assign(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> Assignment:
    """Kafka's StickyAssignor goals, in order: (1) balanced: no member holds two or more
    partitions more than another member that could take one of them (with equal subscriptions:
    counts within one); (2) sticky: as many partitions as possible stay with their previous
    owner. Equal subscriptions take Kafka's quota path; otherwise deal unowned partitions to the
    least-loaded eligible member, then move partitions from the most to the least loaded."""
    members = _sorted_members(subscriptions)
    rank = {m: i for i, m in enumerate(members)}
    partitions = _subscribed_partitions(partitions_per_topic, subscriptions)
    owner = _previous_owners(subscriptions, members, set(partitions))
    topic_sets = {
        frozenset(t for t in s.topics if t in partitions_per_topic) for s in subscriptions.values()
    }
    if len(topic_sets) <= 1:
        held = _by_quota(members, partitions, owner)
    else:
        held = _by_moves(members, partitions, owner, subscriptions, rank)
    return _finish({m: list(held[m]) for m in members})


def _by_quota(members, partitions, owner) -> dict[str, set[TopicPartition]]:
    """Kafka's constrainedAssign: with P partitions and N members, P % N members get P // N + 1
    and the rest P // N. Each member keeps as much of what it owned as its quota allows (the
    larger quota goes first to those who owned that many); the rest is dealt from the pool."""
    low, extra = divmod(len(partitions), len(members)) if members else (0, 0)
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for tp, m in owner.items():
        owned[m].append(tp)
    held: dict[str, set[TopicPartition]] = {}
    pool = [tp for tp in partitions if tp not in owner]
    at_high, under, at_low = 0, [], []
    for m in members:
        mine = sorted(owned[m])
        if len(mine) < low:
            keep = len(mine)
            under.append(m)
        elif len(mine) > low and at_high < extra:
            keep = low + 1
            at_high += 1
        else:
            keep = low
            at_low.append(m)
        held[m] = set(mine[:keep])
        pool.extend(mine[keep:])
    pool.sort(reverse=True)  # pop() deals the lowest partition first
    for m in under:
        while len(held[m]) < low:
            held[m].add(pool.pop())
    for m in at_low + under:
        if at_high == extra:
            break
        held[m].add(pool.pop())
        at_high += 1
    return held


def _by_moves(members, partitions, owner, subscriptions, rank) -> dict[str, set[TopicPartition]]:
    eligible = {
        tp: [m for m in members if tp.topic in subscriptions[m].topics] for tp in partitions
    }
    held: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for tp, m in owner.items():
        held[m].add(tp)
    # Partitions with the fewest candidates first, so the flexible ones fill the gaps they leave.
    for tp in sorted(
        (tp for tp in partitions if tp not in owner), key=lambda tp: (len(eligible[tp]), tp)
    ):
        taker = min(eligible[tp], key=lambda m: (len(held[m]), rank[m]))
        held[taker].add(tp)
    # Each move lowers the sum of squared counts by at least 2, so this ends.
    while True:
        move = _best_move(members, held, subscriptions, owner, rank)
        if move is None:
            return held
        tp, giver, taker = move
        held[giver].discard(tp)
        held[taker].add(tp)


def _best_move(members, held, subscriptions, owner, rank):
    """One partition from a member holding at least two more than an eligible taker: the
    least-loaded taker first, then the most-loaded giver, then a partition the giver did not
    own before (or one the taker did own), else its last."""
    for taker in sorted(members, key=lambda m: (len(held[m]), rank[m])):
        topics = subscriptions[taker].topics
        for giver in sorted(members, key=lambda m: (-len(held[m]), rank[m])):
            if len(held[giver]) < len(held[taker]) + 2:
                break
            movable = [tp for tp in held[giver] if tp.topic in topics]
            if movable:
                best = max(
                    movable, key=lambda tp: (owner.get(tp) == taker, owner.get(tp) != giver, tp)
                )
                return best, giver, taker
    return None


ASSIGNORS: dict[str, Callable[[Mapping[str, int], Mapping[str, Subscription]], Assignment]] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
    "sticky": sticky_assign,
}


def assign(
    name: str, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> Assignment:
    try:
        assignor = ASSIGNORS[name]
    except KeyError:
        raise ValueError(
            f"unknown partition assignor {name!r}; choose one of {', '.join(sorted(ASSIGNORS))}"
        ) from None
    return assignor(partitions_per_topic, subscriptions)
