"""Replica placement for new partitions: round-robin over the usable brokers so leaders spread
evenly, followers shifted per round, and replicas of a partition on distinct racks when possible."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class PlacementError(ValueError):
    """Not enough usable brokers for the replication factor."""


@dataclass(frozen=True)
class UsableBroker:
    broker_id: int
    rack: str | None = None


def rack_alternated(brokers: Sequence[UsableBroker]) -> list[UsableBroker]:
    """Brokers ordered rack by rack (a1, b1, c1, a2, b2, ...), so neighbours in the ring sit on
    different racks. A broker without a rack counts as its own rack, as in Kafka."""
    by_rack: dict[str, list[UsableBroker]] = {}
    for b in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault("" if b.rack is None else "rack:" + b.rack, []).append(b)
    groups = [by_rack[k] for k in sorted(by_rack)]
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def place_replicas(
    brokers: Sequence[UsableBroker],
    num_partitions: int,
    replication_factor: int,
    start_index: int = 0,
    first_partition: int = 0,
) -> list[tuple[int, ...]]:
    """Replica lists for partitions first_partition .. first_partition+num_partitions-1; the
    first replica is the preferred leader. `start_index` (random per topic, from the caller)
    keeps every topic's partition 0 from landing on the same broker."""
    if replication_factor < 1:
        raise PlacementError(f"replication factor {replication_factor} must be at least 1")
    if replication_factor > len(brokers):
        n = len(brokers)
        raise PlacementError(
            f"replication factor {replication_factor} is larger than the "
            f"{n} available broker{'' if n == 1 else 's'}"
        )
    ring = rack_alternated(brokers)
    n = len(ring)
    out = []
    for p in range(first_partition, first_partition + num_partitions):
        leader_pos = (start_index + p) % n
        # The follower offset changes each full round, so partitions led by the same broker do
        # not all share the same followers (which would all catch up from one leader at once).
        shift = 1 + (start_index + p // n) % (n - 1) if n > 1 else 0
        candidates = [ring[(leader_pos + shift + k) % n] for k in range(n)]
        chosen = [ring[leader_pos]]
        racks_used = {ring[leader_pos].rack}
        while len(chosen) < replication_factor:
            free = [b for b in candidates if b not in chosen]
            pick = next((b for b in free if b.rack not in racks_used), None)
            if pick is None:
                # Every rack holds a replica already: start a second round of racks.
                racks_used = set()
                pick = free[0]
            chosen.append(pick)
            racks_used.add(pick.rack)
        out.append(tuple(b.broker_id for b in chosen))
    return out
