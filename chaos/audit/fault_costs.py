"""What each nemesis may legitimately cost a run, and what it never may: the audit's reading of
faults.jsonl. No fault excuses a violation: every check in checks.CHECKS holds under all of
them (an acknowledged send is never lost, duplicated or moved, whatever the network, the clocks
or the disks did). What a fault may cost is availability and a few file states the checks
already tolerate; the report names, for the faults a run had, which those are, so a reader can
tell an expected effect from a bug."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from chaos.history import FaultWindow


@dataclasses.dataclass(frozen=True)
class Cost:
    may: str  # what the run may show because of this fault
    never: str  # what the checks still hold it to, in this fault's own terms
    crashes: bool  # it can leave a torn tail in a replica's active segment


NEVER = "an acknowledged send lost, duplicated or moved, or a value read at two offsets"
COSTS: dict[str, Cost] = {
    "kill": Cost(
        "sends fail or end unknown (info) while leaders move; the killed nodes' "
        "unflushed tails are cut at restart",
        NEVER,
        crashes=True,
    ),
    "pause": Cost(
        "sends and polls stall, then fail or end unknown; a paused leader is fenced "
        "and its old epoch's writes refused",
        NEVER,
        crashes=False,
    ),
    "partition": Cost(
        "the minority side's sends fail or end unknown; ISRs shrink and leaders move",
        NEVER + "; two leaders acknowledging in the same epoch",
        crashes=False,
    ),
    "net": Cost(
        "sends and polls slow down, time out and end unknown; packets the network "
        "duplicates or reorders reach kraft twice or late",
        NEVER + ": a duplicated or retried batch is written once (idempotence)",
        crashes=False,
    ),
    "clock": Cost(
        "record and index timestamps (LogAppendTime, max timestamps) and log times "
        "on the faked nodes jump forward or back; nothing timed by the monotonic "
        "clock moves",
        NEVER + ": offsets stay in order whatever the timestamps say",
        crashes=False,
    ),
    "disk-full": Cost(
        "the node's appends, index writes and checkpoints fail with ENOSPC; its "
        "log dir goes offline, its partitions move to other replicas until a "
        "restart after the heal; a partial write may be cut at that restart",
        NEVER,
        crashes=True,
    ),
    "corrupt": Cost(
        "the damaged replica's log is cut at the damage at restart and refetched from its leader",
        NEVER + "; a damaged batch served, or left in a replica's log (batch-integrity)",
        crashes=True,
    ),
    "power": Cost(
        "the node comes back with what it had fsynced: a segment shorter, a file as of its "
        "last fsync, creates, renames and deletes since its directory's last fsync undone; "
        "it refetches from the leaders, and sends it alone held, unacknowledged, may be lost",
        NEVER + ": an acks=all send is on the rest of its ISR; a committed metadata record "
        "lost (metadata-agreement), a vote forgotten (one leader per epoch)",
        crashes=True,
    ),
}


def base_nemesis(name: str) -> str:
    """faults.jsonl's name to its nemesis: partition-ring -> partition, clock-bump -> clock."""
    if name in COSTS:
        return name
    head = name.split("-", 1)[0]
    if head in COSTS:
        return head
    raise ValueError(f"fault {name!r} names no nemesis the audit knows ({', '.join(COSTS)})")


def _known(name: str) -> str | None:
    try:
        return base_nemesis(name)
    except ValueError:
        return None


def notices(windows: Iterable[FaultWindow]) -> list[str]:
    """One line per nemesis the run had: how often, what it may cost, what it never may. A fault
    name the audit does not know (another tool's faults.jsonl) gets a line saying so."""
    seen: dict[str, list[FaultWindow]] = {}
    for w in windows:
        seen.setdefault(_known(w.nemesis) or w.nemesis, []).append(w)
    return [
        f"{name} x{len(ws)}: may cost {COSTS[name].may}; never {COSTS[name].never}"
        if name in COSTS
        else f"{name} x{len(ws)}: a fault this audit knows nothing of; "
        f"every check still held it to the same rules"
        for name, ws in seen.items()
    ]


def crashed_replicas(windows: Iterable[FaultWindow]) -> set[int]:
    """Nodes a fault that can tear a write hit: a torn tail there is that fault's doing. An
    unknown fault is taken to be one (a notice must not accuse on a guess)."""
    return {
        t
        for w in windows
        if (_known(w.nemesis) is None or COSTS[_known(w.nemesis)].crashes)
        for t in w.targets
    }
