"""Checks of the metadata logs (small: run on the driver over rows Spark read): controllers agree on
the committed prefix, one leader per epoch, and which leader epochs each partition was given.

Raft keeps no high watermark on disk, so "committed" is judged from the logs as they end: an
offset is committed when a majority of the voters hold the same entry there. This assumes the run
healed and the quorum committed after the last fault (chaos/run.sh drains before auditing)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import msgpack

from chaos.audit.checks import Violation

PARTITION = "__cluster_metadata-0"
# Compacted whatever the metadata log says: the group coordinator's offsets topic
# (broker/group/records.py's OFFSETS_TOPIC; not imported, the audit needs no broker code).
COMPACTED_BY_NAME = frozenset({"__consumer_offsets"})


@dataclass(frozen=True)
class MetaEntry:
    epoch: int
    control: bool
    payload: bytes

    def describe(self) -> str:
        try:
            kind = msgpack.unpackb(self.payload, raw=False).get("type", "?")
        except Exception:  # noqa: BLE001 - msgpack raises many types; any of them means unreadable
            kind = "unreadable"
        return f"{kind}@epoch {self.epoch}"


@dataclass
class MetadataFacts:
    """What the data checks need from the metadata: per (topic, partition) the lowest and highest
    leader epoch ever assigned (replay bumps by exactly one, so every epoch between was given),
    and the topics whose cleanup.policy ever included compact."""

    epochs: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    compacted: set[str] = field(default_factory=set)
    found: bool = False

    def compacted_topics(self) -> list[str]:
        """Topics compaction may have thinned: their offsets may have gaps, their producer
        sequences holes, and replicas compacted at different times hold different bytes."""
        return sorted(self.compacted | COMPACTED_BY_NAME)


def logs_by_node(rows) -> dict[int, dict[int, MetaEntry]]:
    logs: dict[int, dict[int, MetaEntry]] = defaultdict(dict)
    for row in rows:
        logs[row["replica"]][row["offset"]] = MetaEntry(
            row["epoch"], row["control"], bytes(row["payload"] or b"")
        )
    return dict(logs)


def _voters(nodes, logs) -> set[int]:
    configured = {v for n in nodes if n.quorum_state for v in n.quorum_state["voters"]}
    return configured or set(logs)


def _pair_divergence(la: dict, lb: dict) -> tuple[int, int] | None:
    """Log Matching: two logs holding an entry with the same offset and epoch are identical up to
    it. Returns (first differing offset, last matching offset) when two logs break that."""
    common = sorted(set(la) & set(lb))
    matched = [o for o in common if la[o].epoch == lb[o].epoch]
    if not matched:
        return None
    for o in common:
        if o > matched[-1]:
            break
        if la[o] != lb[o]:
            return o, matched[-1]
    return None


def _log_matching(logs) -> list[Violation]:
    """One violation per offset where some pairs of logs break Log Matching, naming every node
    involved and what each holds there."""
    found: dict[int, tuple[set[int], int]] = {}
    for a in sorted(logs):
        for b in sorted(logs):
            if a < b:
                hit = _pair_divergence(logs[a], logs[b])
                if hit:
                    nodes, anchor = found.get(hit[0], (set(), hit[1]))
                    found[hit[0]] = (nodes | {a, b}, max(anchor, hit[1]))
    out = []
    for o, (nodes, anchor) in sorted(found.items()):
        held = {str(n): logs[n][o].describe() for n in sorted(nodes)}
        out.append(
            Violation(
                "metadata-divergence",
                PARTITION,
                (o,),
                tuple(sorted(nodes)),
                {"entries": held, "matching_offset": anchor},
                f"nodes hold different entries at offset {o} ("
                + ", ".join(f"node {n}: {e}" for n, e in held.items())
                + f") though they agree on the epoch of offset {anchor}",
            )
        )
    return out


def _committed_divergence(voters, logs, seen) -> list[Violation]:
    """A voter whose entry at a committed offset differs from the majority's, where its own entry
    is newer and no later majority entry supersedes it: a leader overwrote committed data."""
    present = {v: logs[v] for v in voters if v in logs}
    majority = len(voters) // 2 + 1
    held: dict[int, MetaEntry] = {}
    for o in sorted({o for log in present.values() for o in log}):
        counts = defaultdict(list)
        for v, log in present.items():
            if o in log:
                counts[log[o]].append(v)
        winner = max(counts.items(), key=lambda kv: len(kv[1]))
        if len(winner[1]) >= majority:
            held[o] = winner[0]
    if not held:
        return []
    out = []
    for v, log in sorted(present.items()):
        for o in sorted(o for o in log if o in held):
            mine, theirs = log[o], held[o]
            if mine == theirs or (v, o) in seen:
                continue
            superseded = any(e.epoch > mine.epoch for p, e in held.items() if p >= o)
            if mine.epoch >= theirs.epoch and not superseded:
                holders = sorted(w for w, other in present.items() if other.get(o) == theirs)
                out.append(
                    Violation(
                        "metadata-divergence",
                        PARTITION,
                        (o,),
                        tuple(sorted([v] + holders)),
                        {
                            str(v): mine.describe(),
                            "majority": theirs.describe(),
                            "majority_nodes": holders,
                        },
                        f"node {v} holds {mine.describe()} at offset {o}, committed on a majority "
                        f"(nodes {','.join(map(str, holders))}) as {theirs.describe()}",
                    )
                )
                break  # the first is the cause; the rest of that log follows from it
            if mine.epoch < theirs.epoch:
                break  # an older, uncommitted suffix this voter never truncated: Raft allows it
    return out


def _leaders(nodes, logs) -> list[Violation]:
    claims: dict[int, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    out = []
    for node, log in sorted(logs.items()):
        for o, e in sorted(log.items()):
            if not e.control:
                continue
            try:
                doc = msgpack.unpackb(e.payload, raw=False)
            except Exception:  # noqa: BLE001 - see MetaEntry.describe
                continue
            if not isinstance(doc, dict) or doc.get("type") != "LeaderChange":
                continue
            if doc.get("leader_epoch") != e.epoch:
                out.append(
                    Violation(
                        "multiple-leaders",
                        PARTITION,
                        (o,),
                        (node,),
                        {"record_epoch": doc.get("leader_epoch"), "batch_epoch": e.epoch},
                        f"LeaderChange for epoch {doc.get('leader_epoch')} sits in a "
                        f"batch of epoch {e.epoch} on node {node}",
                    )
                )
            claims[e.epoch][doc.get("leader_id")].append(
                f"LeaderChange at offset {o} on node {node}"
            )
    for n in nodes:
        qs = n.quorum_state
        if qs and qs["leader"] >= 0:
            claims[qs["epoch"]][qs["leader"]].append(f"quorum-state of node {n.node_id}")
    for epoch, leaders in sorted(claims.items()):
        if len(leaders) > 1:
            ids = tuple(sorted(leaders))
            said = "; ".join(
                f"leader {lid} per {', '.join(sorted(set(src)))}"
                for lid, src in sorted(leaders.items())
            )
            out.append(
                Violation(
                    "multiple-leaders",
                    PARTITION,
                    (),
                    ids,
                    {
                        "epoch": epoch,
                        "leaders": {str(k): sorted(set(v)) for k, v in leaders.items()},
                    },
                    f"epoch {epoch} has {len(leaders)} leaders: {said}",
                )
            )
    return out


def check_metadata(rows, nodes) -> list[Violation]:
    logs = logs_by_node(rows)
    out = _log_matching(logs)
    seen = {(n, v.offsets[0]) for v in out for n in v.replicas}
    out += _committed_divergence(_voters(nodes, logs), logs, seen)
    return out + _leaders(nodes, logs)


def _replay_node(log: dict[int, MetaEntry], snapshot, facts: MetadataFacts, notices) -> None:
    """Adds what one node's snapshot plus log assigned; records it cannot decode become notices."""
    from kraft.metadata import records as r

    names: dict[str, str] = {}
    current: dict[tuple[str, int], int] = {}

    def give(topic_id: str, p: int, epoch: int) -> None:
        current[(topic_id, p)] = epoch
        key = (names.get(topic_id, topic_id), p)
        lo, hi = facts.epochs.get(key, (epoch, epoch))
        facts.epochs[key] = (min(lo, epoch), max(hi, epoch))

    start = 0
    if snapshot is not None:
        start, image = snapshot
        for name, topic in image.topics_by_name.items():
            names[topic.topic_id] = name
            for p, reg in topic.partitions.items():
                give(topic.topic_id, p, 0)
                give(topic.topic_id, p, reg.leader_epoch)
        for (kind, name), values in image.configs.items():
            if kind == "topic" and "compact" in values.get("cleanup.policy", ""):
                facts.compacted.add(name)
    for o in sorted(o for o in log if o >= start):
        entry = log[o]
        if entry.control:
            continue
        try:
            rec = r.decode(entry.payload)
        except r.MetadataRecordError as exc:
            notices.append(f"metadata offset {o}: {exc}")
            continue
        if isinstance(rec, r.TopicRecord):
            names[rec.topic_id] = rec.name
        elif isinstance(rec, r.PartitionRecord):
            give(rec.topic_id, rec.partition, rec.leader_epoch)
        elif isinstance(rec, r.PartitionChangeRecord) and rec.leader is not None:
            if (rec.topic_id, rec.partition) in current:
                give(rec.topic_id, rec.partition, current[(rec.topic_id, rec.partition)] + 1)
        elif (
            isinstance(rec, r.ConfigRecord)
            and rec.resource_type == "topic"
            and rec.name == "cleanup.policy"
            and rec.value
            and "compact" in rec.value
        ):
            facts.compacted.add(rec.resource_name)


def metadata_facts(rows, nodes, notices: list[str]) -> MetadataFacts:
    from kraft.metadata.records import MetadataRecordError
    from kraft.metadata.snapshot import snapshot_from_bytes
    from kraft.raft.snapshot_files import CorruptSnapshotError, decode_snapshot

    facts = MetadataFacts()
    logs = logs_by_node(rows)
    for n in nodes:
        snapshot = None
        for end, epoch, path in sorted(n.snapshots, reverse=True):
            try:
                snapshot = (
                    end,
                    snapshot_from_bytes(decode_snapshot(path.read_bytes(), path), end, epoch),
                )
                break
            except (OSError, CorruptSnapshotError, MetadataRecordError) as exc:
                notices.append(f"{path}: {exc}; an older snapshot or the log is used instead")
        if snapshot is not None or n.node_id in logs:
            facts.found = True
            _replay_node(logs.get(n.node_id, {}), snapshot, facts, notices)
    return facts
