"""The audit's checks by name, what each proves, and the Violation every check reports: one shape
(check, partition, offsets, replicas, values, message) for the JSON report, summary and HTML."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

# name -> what a violation means. Order is the report's order. Names of history anomalies are
# Jepsen's (jepsen/tests/kafka.clj), so its write-ups explain them too.
CHECKS: dict[str, str] = {
    # segment files, per replica
    "batch-integrity": "a batch with bad magic, length or CRC32C, or an index entry not at a batch start",
    "offset-order": "a replica's batch offsets overlap, go backwards, or skip offsets",
    "leader-epoch-order": "a replica's leader epochs decrease along its log",
    "epoch-checkpoint": "leader-epoch-checkpoint disagrees with the epochs of the replica's batches",
    "replica-divergence": "replicas hold different bytes at the same offset below the high watermark",
    "epoch-not-assigned": "a batch carries a leader epoch the metadata log never gave its partition",
    "producer-sequence": "a producer's sequence numbers repeat or skip within a partition",
    # metadata logs
    "metadata-divergence": "controllers disagree on the committed metadata log prefix",
    "multiple-leaders": "two nodes led the metadata quorum in the same epoch",
    # history (and the logs' values)
    "lost-write": "an acknowledged send is in no poll and not in the log, though its offset should be",
    "duplicate": "one sent value sits at more than one offset of a partition",
    "inconsistent-offsets": "one offset of a partition holds different values in sends, polls or logs",
    "aborted-read": "a poll saw a value whose send failed (Jepsen's G1a)",
    "nonmonotonic-send": "a process's sends to a partition got offsets that do not increase",
    "nonmonotonic-poll": "a process polled a partition at offsets that do not increase",
    "poll-skip": "an assign()ed consumer's next poll skipped offsets known to hold values",
    "unseen": "an acknowledged send that no poll saw, even after the final drain",
    "commit-backwards": "a group's committed offset for a partition went backwards",
    # the transactional history (consume-transform-produce, read_committed readers)
    "txn-aborted-read": "a read_committed read returned a write of an aborted transaction (G1a)",
    "txn-intermediate-read": "a read_committed read returned a write before its transaction "
    "asked to commit: a read past the last stable offset (G1b)",
    "txn-duplicate": "one input record is transformed in the committed output more than once",
    "txn-lost": "an input record below the group's committed offset is in no committed output",
    "txn-partial": "a transaction's writes to a partition are in the committed output in part, "
    "or an acknowledged commit's are missing",
}
TXN_CHECKS = tuple(name for name in CHECKS if name.startswith("txn-"))


@dataclass(frozen=True)
class Violation:
    check: str
    partition: str | None = None  # "topic-p"; "__cluster_metadata-0" for the metadata log
    offsets: tuple[int, ...] = ()  # the offsets involved (first and last of a range)
    replicas: tuple[int, ...] = ()  # node ids whose files or answers are involved
    values: dict = field(default_factory=dict)  # what was found, by name
    message: str = ""

    def to_json(self) -> dict:
        return {
            "check": self.check,
            "partition": self.partition,
            "offsets": list(self.offsets),
            "replicas": list(self.replicas),
            "values": self.values,
            "message": self.message,
        }

    def line(self) -> str:
        """One line for the summary: where, then what."""
        where = [self.partition or ""]
        if self.offsets:
            lo, hi = self.offsets[0], self.offsets[-1]
            where.append(f"offset {lo}" if lo == hi else f"offsets {lo}-{hi}")
        if self.replicas:
            where.append(
                "replica"
                + ("s " if len(self.replicas) > 1 else " ")
                + ",".join(map(str, self.replicas))
            )
        return f"{' '.join(w for w in where if w)}: {self.message}"


def violation_from_row(row) -> Violation:
    """A Spark row (check, partition, offset_lo, offset_hi, replicas, values_json, message)."""
    offsets = tuple(o for o in (row["offset_lo"], row["offset_hi"]) if o is not None)
    if len(offsets) == 2 and offsets[0] == offsets[1]:
        offsets = offsets[:1]
    return Violation(
        row["check"],
        row["partition"],
        offsets,
        tuple(sorted(set(row["replicas"] or ()))),
        json.loads(row["values_json"]) if row["values_json"] else {},
        row["message"],
    )


@dataclass
class AuditResult:
    violations: list[Violation] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)  # check -> violations found
    checks_run: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # per nemesis the run had: what it may cost and what it never may (chaos.audit.fault_costs)
    fault_costs: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    # (rate, latency, span_s, t0) of the history's ok operations, for report.html's charts
    timeline: tuple | None = None

    @property
    def ok(self) -> bool:
        return not self.violations
