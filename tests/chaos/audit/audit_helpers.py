"""Builds synthetic clusters on disk with the project's own writers (record codec, log engine,
Raft disk log, checkpoints) and matching histories; each test plants one anomaly in its topic."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from chaos.history import FaultWindow, JsonLinesWriter, Op
from clients.record.codec import encode_batch
from kraft.log import file_names as fn
from kraft.log.checkpoint import write_offset_checkpoint
from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import write_meta_properties
from kraft.metadata import records as r
from kraft.raft.disk import FileRaftLog, metadata_log_dir, quorum_state_path
from kraft.raft.log import ElectionState, Entry
from kraft.raft.quorum_state import encode_quorum_state

CONTROLLERS = (1, 2, 3)
BROKERS = (4, 5, 6)
# Small segments and a dense index: a few dozen records span several files and index entries.
CONFIG = LogConfig(segment_bytes=1024, index_interval_bytes=200)
MS = 1_000_000  # history times are nanoseconds


def data_dir(root: Path, node: int) -> Path:
    d = root / f"node-{node}" / "data"
    d.mkdir(parents=True, exist_ok=True)
    return d


def batch(values, *, producer_id=-1, base_sequence=-1, base_offset=0, epoch=-1, ts=1_000) -> bytes:
    return encode_batch(
        [(None, str(v).encode(), (), ts + i) for i, v in enumerate(values)],
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=base_sequence,
        base_offset=base_offset,
        partition_leader_epoch=epoch,
    )


def append_raw(log: Log, data: bytes) -> None:
    """Bytes straight onto the active segment file, past the log engine's checks."""
    with open(log.segments[-1].log_path, "ab") as f:
        f.write(data)


class Cluster:
    """Controllers 1-3 share one metadata log; brokers 4-6 hold every partition. Topics are
    filled with batches of 5 values from one producer, epochs rising over the log."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # topic -> [partition -> [(epoch, values, producer id, first sequence)]]
        self.appends: dict[str, list[list[tuple]]] = {}
        self.mutations: dict[str, list] = defaultdict(list)  # topic -> [fn(node, log)]
        self.assigned: dict[str, int] = {}  # topic -> highest leader epoch the metadata gives
        self.configs: dict[str, dict[str, str]] = {}  # topic -> config overrides
        self.controller_extra: dict[int, list] = {}  # node -> records appended
        self.quorum: dict[int, tuple[int, int]] = {}  # node -> (epoch, leader)
        self.next_value = 0

    def topic(self, name: str, partitions: int = 1, batches: int = 12, epochs: int = 2) -> str:
        self.appends[name] = []
        for _ in range(partitions):
            plan = []
            for i in range(batches):
                values = list(range(self.next_value, self.next_value + 5))
                self.next_value += 5
                plan.append((i * epochs // batches, values, 1000, 5 * i))
            self.appends[name].append(plan)
        return name

    def mutate(self, topic: str, fn) -> None:
        """fn(node, log) runs on every broker's open log of `topic`, before its HW is taken."""
        self.mutations[topic].append(fn)

    # -- writing the files
    def write(self, *, metadata: bool = True) -> Path:
        for node in BROKERS:
            d = data_dir(self.root, node)
            write_meta_properties(d, "cluster", node)
            hws = {}
            for topic, plans in self.appends.items():
                for p, plan in enumerate(plans):
                    log = Log.open(d / fn.partition_dir_name(topic, p), CONFIG, now_ms=0)
                    for epoch, values, pid, seq in plan:
                        log.append_as_leader(
                            batch(values, producer_id=pid, base_sequence=seq), epoch, now_ms=0
                        )
                    hws[(topic, p)] = log.log_end_offset
                    for fn_ in self.mutations[topic]:
                        fn_(node, log)
                    log.close()
            write_offset_checkpoint(d / fn.REPLICATION_OFFSET_CHECKPOINT, hws)
        if metadata:
            entries = self.metadata_entries()
            for node in CONTROLLERS:
                extra = [
                    Entry(len(entries) + i, 1, r.encode(x))
                    for i, x in enumerate(self.controller_extra.get(node, []))
                ]
                self.write_controller(node, entries + extra, *self.quorum.get(node, (1, 1)))
        return self.root

    def metadata_entries(self) -> list[Entry]:
        """LeaderChange (epoch 1, node 1), then each topic and its partitions, led by node 4,
        with PartitionChange records bumping the epoch up to what its batches use."""
        recs = []
        for topic, plans in self.appends.items():
            top = self.assigned.get(topic, max(e for plan in plans for e, *_ in plan))
            recs.append(r.TopicRecord(topic, f"id-{topic}"))
            recs += [
                r.ConfigRecord("topic", topic, k, v) for k, v in self.configs.get(topic, {}).items()
            ]
            for p in range(len(plans)):
                recs.append(r.PartitionRecord(f"id-{topic}", p, BROKERS, BROKERS, 4, 0, 0))
                recs += [r.PartitionChangeRecord(f"id-{topic}", p, leader=4)] * top
        change = r.encode(r.LeaderChangeRecord(1, 1, CONTROLLERS))
        return [Entry(0, 1, change, control=True)] + [
            Entry(i + 1, 1, r.encode(x)) for i, x in enumerate(recs)
        ]

    def write_controller(self, node: int, entries: list[Entry], epoch: int, leader: int) -> None:
        d = data_dir(self.root, node)
        write_meta_properties(d, "cluster", node)
        log = FileRaftLog(metadata_log_dir(d), now_ms=0)
        log.append(entries)
        log.close()
        quorum_state_path(d).write_text(
            encode_quorum_state(
                ElectionState(epoch=epoch, voted_for=leader, leader_id=leader), CONTROLLERS
            )
        )

    # -- the history that matches the logs
    def history(self, topics=None) -> list[Op]:
        """Per partition: process "<p>-w" sends every value and gets its offset, then "<p>-r"
        assigns the partition and drains it in polls of 7 records."""
        ops = []
        for topic in topics or self.appends:
            for p, plan in enumerate(self.appends[topic]):
                values = [v for _, vs, _, _ in plan for v in vs]
                ops += clean_history(f"{topic}-{p}", values, t=len(ops) * MS)
        return ops


def clean_history(partition: str, values: list[int], t: int = 0, reader: str = "r") -> list[Op]:
    """`values` sent one at a time to offsets 0.., then drained by an assign()ed reader."""
    ops = []
    for offset, v in enumerate(values):
        ops.append(Op(f"{partition}-w", "invoke", "send", t, v, partition))
        ops.append(Op(f"{partition}-w", "ok", "send", t + MS, v, partition, offset))
        t += 2 * MS
    return ops + drain(partition, list(enumerate(values)), t, f"{partition}-{reader}")


def drain(
    partition: str, pairs, t: int, process: str, mode: str = "assign", chunk: int = 7
) -> list[Op]:
    """One consumer: assign (or subscribe), then polls of `chunk` (offset, value) pairs."""
    target = [partition] if mode == "assign" else [partition.rpartition("-")[0]]
    ops = [Op(process, "invoke", mode, t, target), Op(process, "ok", mode, t + MS, target)]
    for i in range(0, len(pairs), chunk):
        t += 2 * MS
        ops.append(Op(process, "invoke", "poll", t))
        ops.append(
            Op(process, "ok", "poll", t + MS, {partition: [list(x) for x in pairs[i : i + chunk]]})
        )
    return ops


def write_history(path: Path, ops) -> Path:
    with JsonLinesWriter(path) as w:
        for op in ops:
            w.write(op)
    return path


def write_faults(
    path: Path, windows=(("kill", (5,), 10, 30), ("partition", (4, 5), 60, None))
) -> Path:
    with JsonLinesWriter(path) as w:
        for nemesis, targets, start_ms, end_ms in windows:
            w.write(
                FaultWindow(
                    nemesis, targets, start_ms * MS, None if end_ms is None else end_ms * MS
                )
            )
    return path


def by_partition(result) -> dict[str, list[tuple]]:
    """{partition: [(check, replicas, offsets), ...]} of an audit's violations."""
    out: dict[str, list[tuple]] = defaultdict(list)
    for v in result.violations:
        out[v.partition].append((v.check, v.replicas, v.offsets))
    return dict(out)
