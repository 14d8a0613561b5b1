"""What is wrong with a cluster, in plain words: a pure function from what the cluster reports
(Metadata: controller, live brokers, partitions; groups with their lag) to problems and hints."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    kind: str  # no_active_controller, broker_not_live, offline_partition, ...
    message: str  # what is wrong and what to do, one sentence or two
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int  # -1: no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str
    members: int
    lag_by_partition: dict[str, int]  # "topic-partition" -> records behind


def diagnose(
    controller_id: int | None,
    live_brokers: Iterable[int],
    partitions: Sequence[PartitionView],
    groups: Sequence[GroupView],
    max_lag: int = 0,
) -> list[Problem]:
    """Every problem found, the most serious first: no active controller, brokers that hold
    replicas but are not live (fenced or down), partitions with no leader, under-replicated
    partitions, groups more than `max_lag` records behind."""
    live = set(live_brokers)
    problems: list[Problem] = []
    if controller_id is None or controller_id < 0:
        problems.append(
            Problem(
                "no_active_controller",
                "no active controller: the controllers have no elected leader, so no topic can be "
                "created and no failed broker replaced; check that a majority of the controllers run "
                "and reach each other (kraft quorum describe --bootstrap-controller HOST:PORT)",
            )
        )
    assigned = sorted({r for p in partitions for r in p.replicas} - live)
    for broker in assigned:
        held = [p for p in partitions if broker in p.replicas]
        problems.append(
            Problem(
                "broker_not_live",
                f"broker {broker} holds replicas of {_count(held, 'partition')} but is not live "
                f"(fenced or down); start it again (kraft dev --restart {broker} in a kraft dev "
                f"cluster) or look at its log",
                {"broker": broker, "partitions": [_name(p) for p in held]},
            )
        )
    offline = [p for p in partitions if p.leader < 0]
    if offline:
        problems.append(
            Problem(
                "offline_partitions",
                f"{_count(offline, 'partition')} {'has' if len(offline) == 1 else 'have'} no leader "
                f"and can be neither written nor read ({_list(offline)}); start a broker of their "
                f"replicas, or as a last resort allow an out-of-sync leader: kraft topic alter TOPIC "
                f"--set unclean.leader.election.enable=true (may lose records)",
                {"partitions": [_name(p) for p in offline]},
            )
        )
    under = [p for p in partitions if p.leader >= 0 and len(p.isr) < len(p.replicas)]
    if under:
        problems.append(
            Problem(
                "under_replicated_partitions",
                f"{_count(under, 'partition')} {'is' if len(under) == 1 else 'are'} under-replicated "
                f"({_list(under)}): fewer replicas are in sync than assigned, so one more failure "
                f"may stop acks=all writes; they recover once the missing brokers run and catch up",
                {
                    "partitions": [
                        {"partition": _name(p), "replicas": list(p.replicas), "isr": list(p.isr)}
                        for p in under
                    ]
                },
            )
        )
    for g in groups:
        lag = sum(v for v in g.lag_by_partition.values() if v > 0)
        if lag <= max_lag:
            continue
        behind = sorted((k for k, v in g.lag_by_partition.items() if v > 0))
        who = (
            "no member is consuming (the group is empty): start a consumer with "
            f"--group {g.group_id}"
            if g.members == 0
            else f"its {g.members} member{'s' * (g.members != 1)} are behind"
        )
        problems.append(
            Problem(
                "group_lag",
                f"group '{g.group_id}' is {lag} record{'s' * (lag != 1)} behind on "
                f"{', '.join(behind[:5])}{' ...' if len(behind) > 5 else ''}; {who}",
                {
                    "group": g.group_id,
                    "state": g.state,
                    "members": g.members,
                    "lag": lag,
                    "lag_by_partition": dict(sorted(g.lag_by_partition.items())),
                },
            )
        )
    return problems


def _name(p: PartitionView) -> str:
    return f"{p.topic}-{p.partition}"


def _count(items: Sequence, noun: str) -> str:
    return f"{len(items)} {noun}{'s' * (len(items) != 1)}"


def _list(parts: Sequence[PartitionView], shown: int = 5) -> str:
    names = [_name(p) for p in parts[:shown]]
    return ", ".join(names) + (f" and {len(parts) - shown} more" if len(parts) > shown else "")
