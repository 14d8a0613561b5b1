"""The nemesis: a pure schedule of faults from a seed (which fault, aimed at which role, when it
starts and ends), the pure resolution of roles to node ids, and the executor that injects them."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from chaos.history import FaultWindow

# One fault at a time: a gap, a fault window, a gap, ... Every window ends by the end of the
# faulty phase (`duration_s`), so the run's heal and quiet period are always fault-free. The time
# is cut into stable periods, as Jepsen's combined nemesis packages do: each period enables a
# random subset of the chosen nemeses and about a quarter enable none, so a run has calm stretches
# and stretches where one kind of fault repeats, not an even mix throughout.
# Dynamic roles (the active controller, a partition's leader) are resolved when the fault starts,
# from a ClusterView the executor reads then; the schedule itself never depends on the cluster.
NEMESES = ("kill", "pause", "partition", "net", "clock", "disk-full", "corrupt", "power")
DEFAULT_NEMESES = ("kill", "pause", "partition")
PERIOD_INTERVALS = (3.0, 6.0)  # a period lasts this many mean intervals
# No two fault-free periods in a row (a short run always sees faults): after a faulty period
# the next is calm with probability 1/3, so a quarter of all periods are calm in the long run.
FAULT_FREE_AFTER_FAULTY = 1 / 3
ROLES = ("any", "controller", "active-controller", "broker", "leader")
SINGLE_ROLES = ("active-controller", "leader")  # one node by nature
COUNTS = ("one", "minority", "majority", "all")
COUNT_WEIGHTS = (4, 3, 2, 1)  # mostly survivable faults, sometimes all
PARTITIONS = ("isolate", "halves", "ring", "brokers-controllers", "active-controller")


@dataclasses.dataclass(frozen=True)
class Fault:
    nemesis: str  # one of NEMESES
    kind: str  # partition: one of PARTITIONS; clock: bump | strobe; else ""
    role: str  # whose nodes: one of ROLES ("any" for partitions that cut by shape)
    count: str  # one of COUNTS
    start_s: float  # from the start of the workload
    end_s: float

    @property
    def name(self) -> str:
        """The `nemesis` field of faults.jsonl: kill, pause, partition-ring, ..."""
        return f"{self.nemesis}-{self.kind}" if self.kind else self.nemesis

    def describe(self) -> str:
        noun = "node" if self.role == "any" else self.role
        aim = {"one": f"one {noun}", "all": f"all {noun}s"}.get(
            self.count, f"{self.count} of {noun}s"
        )
        return f"{self.name} ({aim}) {self.start_s:.1f}s-{self.end_s:.1f}s"


@dataclasses.dataclass(frozen=True)
class Period:
    start_s: float
    end_s: float
    enabled: tuple[str, ...]  # () for a fault-free period


def schedule(
    seed: int, duration_s: float, interval_s: float, nemeses: Sequence[str] = NEMESES
) -> list[Fault]:
    """The same seed, duration, interval and nemeses always give the same faults."""
    return plan(seed, duration_s, interval_s, nemeses)[1]


def plan(
    seed: int, duration_s: float, interval_s: float, nemeses: Sequence[str] = NEMESES
) -> tuple[list[Period], list[Fault]]:
    """The periods and the faults. A fault starts inside a period that enables its nemesis (it
    may run past the period's end); the next fault starts after it ended."""
    unknown = [n for n in nemeses if n not in NEMESES]
    if unknown or not nemeses:
        raise ValueError(
            f"nemesis {', '.join(unknown) or '(none)'}: choose from {', '.join(NEMESES)}"
        )
    if interval_s <= 0:
        raise ValueError("the interval must be positive")
    rng = random.Random(seed)
    chosen = list(dict.fromkeys(nemeses))
    periods, faults, t = [], [], 0.0
    while t < duration_s:
        end = min(duration_s, t + rng.uniform(*PERIOD_INTERVALS) * interval_s)
        calm = rng.random() < (
            0.25
            if not periods
            # the first: a quarter
            else 0.0
            if not periods[-1].enabled
            else FAULT_FREE_AFTER_FAULTY
        )
        enabled = () if calm else tuple(rng.sample(chosen, rng.randint(1, len(chosen))))
        begun = t
        while enabled:
            start = t + rng.uniform(0.5, 1.0) * interval_s
            stop = min(start + rng.uniform(0.5, 1.5) * interval_s, duration_s)
            if start >= end or stop - start < min(1.0, interval_s / 2):
                break
            faults.append(_pick(rng, rng.choice(enabled), round(start, 3), round(stop, 3)))
            t = stop
        t = max(t, end)  # a fault that outlasts its period stretches it
        periods.append(Period(round(begun, 3), round(t, 3), enabled))
    return periods, faults


def _pick(rng: random.Random, nemesis: str, start: float, end: float) -> Fault:
    if nemesis == "corrupt":
        # Partition logs live on brokers; one broker at a time, so the rest of each ISR still
        # holds every acknowledged write the damaged replica must refetch.
        return Fault(nemesis, "", rng.choice(("broker", "leader")), "one", start, end)
    if nemesis == "power":
        # One node at a time, of any role: an acks=all write the cut drops is on the rest of its
        # ISR, a committed metadata record on the other voters (a quorum fsynced it).
        return Fault(nemesis, "", rng.choice(ROLES), "one", start, end)
    if nemesis == "clock":
        return Fault(
            nemesis, rng.choice(("bump", "strobe")), rng.choice(ROLES), _count(rng), start, end
        )
    if nemesis == "partition":
        kind = rng.choice(PARTITIONS)
        if kind == "isolate":
            return Fault(nemesis, kind, rng.choice(ROLES), "one", start, end)
        if kind == "brokers-controllers":
            return Fault(nemesis, kind, "broker", _count(rng), start, end)
        if kind == "active-controller":
            return Fault(nemesis, kind, "active-controller", "one", start, end)
        return Fault(nemesis, kind, "any", "all", start, end)
    role = rng.choice(ROLES)
    return Fault(nemesis, "", role, "one" if role in SINGLE_ROLES else _count(rng), start, end)


def _count(rng: random.Random) -> str:
    return rng.choices(COUNTS, weights=COUNT_WEIGHTS)[0]


# --- resolving roles to node ids (pure) -----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ClusterView:
    controllers: tuple[int, ...]
    brokers: tuple[int, ...]
    active_controller: int | None = None  # None: no controller named a leader in time
    leaders: dict[int, int] = dataclasses.field(default_factory=dict)  # partition -> broker


def members(role: str, view: ClusterView, rng: random.Random) -> list[int]:
    """The nodes that hold `role` now. An unknown active controller or leader falls back to a
    random controller or broker, so a fault still lands on a node of that kind."""
    if role == "controller":
        return list(view.controllers)
    if role == "broker":
        return list(view.brokers)
    if role == "active-controller":
        known = view.active_controller in view.controllers
        return [view.active_controller if known else rng.choice(view.controllers)]
    if role == "leader":
        leaders = sorted(b for b in set(view.leaders.values()) if b in view.brokers)
        return [rng.choice(leaders or list(view.brokers))]
    return sorted(view.controllers + view.brokers)


def how_many(count: str, group: int) -> int:
    """one: 1; minority: the largest minority (at least 1); majority: the smallest; all: all."""
    return {
        "one": 1,
        "minority": max(1, (group - 1) // 2),
        "majority": group // 2 + 1,
        "all": group,
    }[count]


def targets(fault: Fault, view: ClusterView, rng: random.Random) -> list[int]:
    group = members(fault.role, view, rng)
    return sorted(rng.sample(group, min(len(group), how_many(fault.count, len(group)))))


def grudge(fault: Fault, view: ClusterView, rng: random.Random) -> dict[int, set[int]]:
    """A partition as {node: nodes whose packets it drops}. Two-sided cuts list both sides so
    both namespaces drop; the ring's grudges are one-way, as in Jepsen."""
    everyone = sorted(view.controllers + view.brokers)
    if fault.kind == "isolate":
        return _split(targets(fault, view, rng), everyone)
    if fault.kind == "halves":
        # The controllers split minority/majority, the brokers are dealt to both sides at random:
        # the quorum keeps a majority on one side, partitions' replicas straddle the cut.
        side = targets(Fault("", "", "controller", "minority", 0, 0), view, rng)
        side += [b for b in view.brokers if rng.random() < 0.5]
        return _split(sorted(side), everyone)
    if fault.kind == "ring":
        # Majorities ring: in a random ring each node hears the majority nearest to it (itself
        # included) and drops the rest; every node sees a majority, no two see the same one.
        ring = rng.sample(everyone, len(everyone))
        majority, n = len(ring) // 2 + 1, len(ring)
        return {
            node: set(ring)
            - {ring[(i + k) % n] for k in range(-(majority // 2), majority - majority // 2)}
            for i, node in enumerate(ring)
        }
    if fault.kind == "brokers-controllers":
        cut = targets(fault, view, rng)
        return _cut(cut, list(view.controllers))
    if fault.kind == "active-controller":
        (active,) = members("active-controller", view, rng)
        return _cut([active], [c for c in view.controllers if c != active])
    raise ValueError(f"unknown partition {fault.kind!r}")


def _split(side: list[int], everyone: list[int]) -> dict[int, set[int]]:
    return _cut(side, [n for n in everyone if n not in side])


def _cut(a: list[int], b: list[int]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for x in a:
        out.setdefault(x, set()).update(b)
    for y in b:
        out.setdefault(y, set()).update(a)
    return {k: v for k, v in out.items() if v}


# --- the executor -----------------------------------------------------------------------------


class Cluster(Protocol):
    def kill(self, node_id: int) -> None: ...
    def start(self, node_id: int, why: str = ...) -> int: ...
    def pause(self, node_id: int) -> None: ...
    def resume(self, node_id: int) -> None: ...
    def alive(self, node_id: int) -> bool: ...


class Network(Protocol):
    def apply(self, grudge: dict[int, set[int]]) -> None: ...
    def heal(self) -> None: ...


class Injector(Protocol):
    """One nemesis beyond kill, pause and partition (chaos/nemeses/): `begin` does the fault to
    the nodes hit and says what it did, for the log; `end` undoes it."""

    def begin(self, fault: Fault, hit: list[int], rng: random.Random) -> str: ...
    def end(self, fault: Fault, hit: list[int]) -> None: ...


class Executor:
    """Runs a schedule against a cluster, a network and the `injectors` of the other nemeses;
    writes a FaultWindow per fault when it ends (`end` is when the heal finished) and a line per
    action to `log`."""

    def __init__(
        self,
        cluster: Cluster,
        network: Network,
        view: Callable[[], ClusterView],
        clock_ns: Callable[[], int],
        write: Callable[[FaultWindow], None],
        log: Callable[[str], None],
        seed: int,
        injectors: dict[str, Injector] | None = None,
    ) -> None:
        self.cluster, self.network, self.view = cluster, network, view
        self.clock_ns, self.write, self.log, self.seed = clock_ns, write, log, seed
        self.injectors = dict(injectors or {})
        self.windows: list[FaultWindow] = []
        self._open: tuple[Fault, list[int], int] | None = None

    def run(self, faults: list[Fault], should_stop: Callable[[], bool] = lambda: False) -> None:
        for index, fault in enumerate(faults):
            if not self._sleep_until(fault.start_s, should_stop):
                return
            self.begin(fault, random.Random(f"{self.seed}:{index}"))
            self._sleep_until(fault.end_s, should_stop)
            self.end()

    def _sleep_until(self, at_s: float, should_stop: Callable[[], bool]) -> bool:
        while self.clock_ns() < at_s * 1e9:
            if should_stop():
                return False
            time.sleep(min(0.1, max(0.0, at_s - self.clock_ns() / 1e9)))
        return True

    def begin(self, fault: Fault, rng: random.Random) -> None:
        view = self.view()
        if fault.nemesis == "partition":
            cut = grudge(fault, view, rng)
            hit = sorted(cut)
            start = self.clock_ns()
            self.network.apply(cut)
            detail = "; ".join(f"{n} drops {sorted(p)}" for n, p in sorted(cut.items()))
        elif fault.nemesis in ("kill", "pause"):
            hit = targets(fault, view, rng)
            start = self.clock_ns()
            for node_id in hit:
                (self.cluster.kill if fault.nemesis == "kill" else self.cluster.pause)(node_id)
            detail = f"nodes {hit}"
        elif fault.nemesis in self.injectors:
            hit = targets(fault, view, rng)
            start = self.clock_ns()
            detail = f"nodes {hit}: " + self.injectors[fault.nemesis].begin(fault, hit, rng)
        else:
            raise ValueError(f"nemesis {fault.nemesis!r} has no injector in this run")
        self._open = (fault, hit, start)
        self.log(
            f"{start / 1e9:7.2f}s start {fault.name} ({fault.role}, {fault.count}): {detail}"
            f" [active controller {view.active_controller}, leaders {view.leaders}]"
        )

    def end(self) -> None:
        if self._open is None:
            return
        fault, hit, start = self._open
        self._open = None
        if fault.nemesis == "partition":
            self.network.heal()
        elif fault.nemesis in ("kill", "pause"):
            for node_id in hit:
                if fault.nemesis == "kill":
                    self.cluster.start(node_id, "restart after kill -9 of")
                else:
                    self.cluster.resume(node_id)
        else:
            self.injectors[fault.nemesis].end(fault, hit)
        window = FaultWindow(fault.name, tuple(hit), start, self.clock_ns())
        self.windows.append(window)
        self.write(window)
        self.log(f"{window.end / 1e9:7.2f}s end   {fault.name}: nodes {list(hit)}")
