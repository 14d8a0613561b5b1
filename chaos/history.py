"""The chaos history and fault log: JSON lines, one operation (or fault window) per line, with the
dataclasses, the writer the workload appends with, and the reader the audit checks.

History file (`history.jsonl`), in real-time order: a line is written when an operation is
invoked and again when it completes, like Jepsen's. Fields:

    process    int or str   the client that ran the op; one op at a time per process
    type       str          "invoke", then one of "ok" (it happened), "fail" (it certainly did
                            not happen) or "info" (unknown: timed out, crashed)
    f          str          "send", "poll", "commit", "assign" or "subscribe"
    time       int          nanoseconds since the run started (the faults log uses the same clock)
    partition  str          "topic-p" (a [topic, p] pair is accepted): the partition of a send
    value                   depends on f, below
    offset     int          send, type ok only: the offset the broker acknowledged
    group      str          commit only: the consumer group (optional, default "")
    rebalanced [str]        poll only (optional): partitions whose assignment changed during it

Values by f:
    send       an int, unique within its partition (the workload writes it as the record value,
               its decimal ASCII, e.g. b"42"); the same on the invoke and its completion
    poll       on ok: {"topic-p": [[offset, value], ...], ...}, in the order the consumer
               returned them; a bare [[offset, value], ...] with a top-level partition is accepted
    commit     {"topic-p": offset, ...}: the next offset to consume (Kafka's meaning)
    assign     ["topic-p", ...]: the partitions the consumer assigned itself (resets positions)
    subscribe  ["topic", ...]: the topics it subscribed to (resets positions)

Faults file (`faults.jsonl`), one line per fault window:
    {"nemesis": "kill", "targets": [2], "start": <ns>, "end": <ns or null while unhealed>}
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

TYPES = ("invoke", "ok", "fail", "info")
FUNCTIONS = ("send", "poll", "commit", "assign", "subscribe")


class HistoryError(ValueError):
    """A history or faults line that does not follow the schema; names the file and line."""


def partition_name(partition) -> str:
    """ "orders-3" from "orders-3" or ["orders", 3]."""
    if isinstance(partition, str) and partition.rpartition("-")[2].isdigit():
        return partition
    if (
        isinstance(partition, (list, tuple))
        and len(partition) == 2
        and isinstance(partition[1], int)
    ):
        return f"{partition[0]}-{partition[1]}"
    raise ValueError(f"partition {partition!r} is neither 'topic-p' nor [topic, p]")


@dataclass(frozen=True)
class Op:
    process: int | str
    type: str
    f: str
    time: int
    value: object = None
    partition: str | None = None
    offset: int | None = None
    group: str | None = None
    rebalanced: tuple[str, ...] = ()

    def reads(self) -> dict[str, list[tuple[int, int]]]:
        """A poll's value as {partition: [(offset, value), ...]}; {} for anything else."""
        if self.f != "poll" or self.value is None:
            return {}
        if isinstance(self.value, dict):
            return {
                partition_name(p): [(int(o), v) for o, v in pairs]
                for p, pairs in self.value.items()
            }
        if self.partition is None:
            raise ValueError("a poll value given as a list needs a top-level partition")
        return {self.partition: [(int(o), v) for o, v in self.value]}

    def commits(self) -> dict[str, int]:
        """A commit's value as {partition: offset}; {} for anything else."""
        if self.f != "commit" or not isinstance(self.value, dict):
            return {}
        return {partition_name(p): int(o) for p, o in self.value.items()}

    def to_json(self) -> dict:
        out = {
            "process": self.process,
            "type": self.type,
            "f": self.f,
            "time": self.time,
            "value": self.value,
        }
        for key in ("partition", "offset", "group"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.rebalanced:
            out["rebalanced"] = list(self.rebalanced)
        return out

    @classmethod
    def from_json(cls, doc: dict) -> Op:
        if not isinstance(doc, dict):
            raise ValueError(f"expected a JSON object, found {type(doc).__name__}")
        missing = [k for k in ("process", "type", "f", "time") if k not in doc]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        if doc["type"] not in TYPES:
            raise ValueError(f"type {doc['type']!r} is not one of {', '.join(TYPES)}")
        if doc["f"] not in FUNCTIONS:
            raise ValueError(f"f {doc['f']!r} is not one of {', '.join(FUNCTIONS)}")
        if not isinstance(doc["time"], (int, float)):
            raise ValueError(f"time {doc['time']!r} is not a number")
        partition = doc.get("partition")
        if doc.get("group") is not None and not isinstance(doc["group"], str):
            raise ValueError(f"group {doc['group']!r} is not a string")
        op = cls(
            process=doc["process"],
            type=doc["type"],
            f=doc["f"],
            time=int(doc["time"]),
            value=doc.get("value"),
            partition=None if partition is None else partition_name(partition),
            offset=None if doc.get("offset") is None else int(doc["offset"]),
            group=doc.get("group"),
            rebalanced=tuple(partition_name(p) for p in doc.get("rebalanced") or ()),
        )
        if op.f == "send" and op.partition is None:
            raise ValueError("a send needs a partition")
        op.reads()  # raises on a malformed poll value
        op.commits()
        return op


@dataclass(frozen=True)
class FaultWindow:
    nemesis: str
    targets: tuple = ()
    start: int = 0
    end: int | None = None

    def to_json(self) -> dict:
        return {
            "nemesis": self.nemesis,
            "targets": list(self.targets),
            "start": self.start,
            "end": self.end,
        }

    @classmethod
    def from_json(cls, doc: dict) -> FaultWindow:
        if not isinstance(doc, dict) or "nemesis" not in doc or "start" not in doc:
            raise ValueError('expected {"nemesis", "targets", "start", "end"}')
        end = doc.get("end")
        return cls(
            str(doc["nemesis"]),
            tuple(doc.get("targets") or ()),
            int(doc["start"]),
            None if end is None else int(end),
        )


class JsonLinesWriter:
    """Appends Ops or FaultWindows, one line each, flushed at once so a crash of the workload
    loses at most the line being written."""

    def __init__(self, path: Path | str | IO[str]) -> None:
        self._own = not hasattr(path, "write")
        self._file = open(path, "a", encoding="utf-8") if self._own else path

    def write(self, item: Op | FaultWindow) -> None:
        self.write_json(item.to_json())

    def write_json(self, doc: dict) -> None:
        self._file.write(json.dumps(doc, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._own:
            self._file.close()

    def __enter__(self) -> JsonLinesWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


HistoryWriter = JsonLinesWriter


def _lines(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HistoryError(f"cannot read {path}: {exc}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except ValueError as exc:
            # A torn last line is what a killed workload leaves: skip it, as Jepsen would.
            if n == len(text.splitlines()) and not text.endswith("\n"):
                return
            raise HistoryError(f"{path} line {n}: not JSON ({exc})") from None


def read_history(path: Path | str) -> list[Op]:
    """Every op in file order; raises HistoryError naming the first bad line."""
    ops = []
    for n, doc in _lines(Path(path)):
        try:
            ops.append(Op.from_json(doc))
        except (ValueError, TypeError) as exc:
            raise HistoryError(f"{path} line {n}: {exc}") from None
    return ops


def read_faults(path: Path | str) -> list[FaultWindow]:
    windows = []
    for n, doc in _lines(Path(path)):
        try:
            windows.append(FaultWindow.from_json(doc))
        except (ValueError, TypeError) as exc:
            raise HistoryError(f"{path} line {n}: {exc}") from None
    return windows
