"""The source's pure core: Spark Kafka-source options (startingOffsets, endingOffsets, assign,
maxOffsetsPerTrigger) parsed and checked, and offset ranges planned and split into tasks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

EARLIEST, LATEST = -2, -1  # Spark's Kafka source spells them so in per-partition JSON

Partition = tuple[str, int]  # (topic, partition)


class Options(dict):
    """Spark hands options over with lower-cased keys; look them up by their Spark names."""

    def __init__(self, options=()) -> None:
        super().__init__({str(k).lower(): v for k, v in dict(options).items()})

    def get(self, key, default=None):
        return super().get(key.lower(), default)

    def __getitem__(self, key):
        return super().__getitem__(key.lower())

    def __contains__(self, key) -> bool:
        return super().__contains__(str(key).lower())


class SourceOptionError(ValueError):
    """An option the kraft source cannot use; the message names it and says what to write."""


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int  # first offset read
    end: int  # first offset not read

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def topics_option(options: dict) -> tuple[str, object]:
    """Exactly one of subscribe, subscribePattern, assign, as Spark's Kafka source asks:
    ("subscribe", [topics]) | ("subscribePattern", re.Pattern) | ("assign", [(topic, p)])."""
    given = [k for k in ("subscribe", "subscribePattern", "assign") if options.get(k)]
    if len(given) != 1:
        raise SourceOptionError(
            "give exactly one of the options subscribe (topics, comma-separated), "
            'subscribePattern (a regex) or assign (JSON {"topic": [0, 1]}); '
            f"found {', '.join(given) or 'none'}"
        )
    kind, text = given[0], options[given[0]]
    if kind == "subscribe":
        topics = [t.strip() for t in text.split(",") if t.strip()]
        if not topics:
            raise SourceOptionError(f"subscribe={text!r} names no topic")
        return kind, topics
    if kind == "subscribePattern":
        try:
            return kind, re.compile(text)
        except re.error as exc:
            raise SourceOptionError(f"subscribePattern={text!r} is not a regex: {exc}") from None
    doc = _json(kind, text)
    if not isinstance(doc, dict) or not all(
        isinstance(ps, list) and all(isinstance(p, int) for p in ps) for ps in doc.values()
    ):
        raise SourceOptionError(f'assign={text!r}: expected JSON like {{"orders": [0, 1]}}')
    return kind, sorted((t, p) for t, ps in doc.items() for p in ps)


def _json(name: str, text: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise SourceOptionError(f"{name}={text!r} is not JSON ({exc})") from None


def offsets_option(options: dict, name: str, default: str, *, ending: bool = False):
    """ "earliest" | "latest" | {(topic, p): offset or EARLIEST/LATEST}. endingOffsets may not
    say earliest (Spark's rule: a batch ending at earliest reads nothing by mistake)."""
    text = (options.get(name) or default).strip()
    allowed = ("latest",) if ending else ("earliest", "latest")
    if text.lower() in allowed:
        return text.lower()
    if not text.startswith("{"):
        raise SourceOptionError(
            f"{name}={text!r}: use {' or '.join(allowed)}, or JSON like "
            f'{{"orders": {{"0": 23, "1": -2}}}} (-2 earliest, -1 latest)'
        )
    doc = _json(name, text)
    out = {}
    try:
        for topic, parts in doc.items():
            for p, offset in parts.items():
                offset = int(offset)
                if offset < EARLIEST or (ending and offset == EARLIEST):
                    raise ValueError(f"offset {offset} of {topic}-{p}")
                out[(topic, int(p))] = offset
    except (AttributeError, TypeError, ValueError) as exc:
        raise SourceOptionError(
            f'{name}={text!r}: {exc}; expected {{"topic": {{"0": offset}}}}'
            f" with offsets >= 0, -2 (earliest) or -1 (latest)"
        ) from None
    return out


def int_option(options: dict, name: str) -> int | None:
    text = options.get(name)
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise SourceOptionError(f"{name}={text!r}: expected a positive integer")
    return value


ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def isolation_option(options: dict) -> str:
    """isolation.level (or Spark's kafka.isolation.level): read_uncommitted, the default as in
    Kafka, or read_committed (committed transactions only, read up to the last stable offset)."""
    names = [n for n in ("isolation.level", "kafka.isolation.level") if options.get(n)]
    if not names:
        return "read_uncommitted"
    text = str(options[names[0]]).strip().lower()
    if text not in ISOLATION_LEVELS:
        raise SourceOptionError(
            f"{names[0]}={options[names[0]]!r}: expected read_committed or read_uncommitted"
        )
    return text


def bool_option(options: dict, name: str, default: bool) -> bool:
    text = str(options.get(name, default)).strip().lower()
    if text not in ("true", "false"):
        raise SourceOptionError(f"{name}={text!r}: expected true or false")
    return text == "true"


def resolve(spec, partitions, earliest: dict, latest: dict, name: str) -> dict[Partition, int]:
    """The offset each partition starts (or ends) at. A partition the JSON leaves out starts at
    earliest when starting (as Spark's source does for new partitions) or ends at latest."""
    out = {}
    for tp in partitions:
        if spec == "earliest":
            out[tp] = earliest[tp]
        elif spec == "latest":
            out[tp] = latest[tp]
        else:
            v = spec.get(tp, EARLIEST if name.startswith("starting") else LATEST)
            out[tp] = earliest[tp] if v == EARLIEST else latest[tp] if v == LATEST else v
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(partitions))
        if unknown:
            raise SourceOptionError(
                f"{name} names {', '.join(f'{t}-{p}' for t, p in unknown)}, "
                f"which the topics read do not have"
            )
    return out


def check_data_loss(
    start: dict[Partition, int], earliest: dict, latest: dict, fail_on_data_loss: bool
) -> dict[Partition, int]:
    """Starts below the log start offset (deleted by retention) or past the end. Spark's
    failOnDataLoss=true refuses; false carries on from the log start (or end)."""
    out = {}
    for tp, offset in start.items():
        lo, hi = earliest[tp], latest[tp]
        if lo <= offset <= hi:
            out[tp] = offset
            continue
        if fail_on_data_loss:
            raise SourceOptionError(
                f"{tp[0]}-{tp[1]}: offset {offset} is no longer in the log (it holds {lo}-{hi}): "
                f"records were deleted or the topic was recreated. Set failOnDataLoss=false to "
                f"carry on from the nearest offset the log holds"
            )
        out[tp] = min(max(offset, lo), hi)
    return out


def cap(
    start: dict[Partition, int], end: dict[Partition, int], limit: int | None
) -> dict[Partition, int]:
    """Ends that hold at most `limit` offsets in all, shared in proportion to what each
    partition has waiting (Spark's maxOffsetsPerTrigger rule), never moving an end backwards."""
    waiting = {tp: max(0, end[tp] - start.get(tp, end[tp])) for tp in end}
    total = sum(waiting.values())
    if limit is None or total <= limit:
        return dict(end)
    out, given = {}, 0
    for tp in sorted(end):
        share = waiting[tp] * limit // total
        out[tp] = start.get(tp, end[tp]) + share
        given += share
    for tp in sorted(end, key=lambda tp: -(waiting[tp] - (out[tp] - start.get(tp, end[tp])))):
        if given >= limit:  # hand out what rounding down left over, largest first
            break
        if out[tp] < end[tp]:
            out[tp] += 1
            given += 1
    return out


def split(
    start: dict[Partition, int], end: dict[Partition, int], min_partitions: int | None = None
) -> list[OffsetRange]:
    """One range per partition with something to read; with minPartitions, big ranges are cut
    so there are about that many tasks (Spark's Kafka source rule)."""
    ranges = [
        OffsetRange(t, p, start[(t, p)], end[(t, p)])
        for t, p in sorted(end)
        if (t, p) in start and end[(t, p)] > start[(t, p)]
    ]
    total = sum(r.size for r in ranges)
    if not min_partitions or len(ranges) >= min_partitions or total == 0:
        return ranges
    out = []
    for r in ranges:
        pieces = max(1, round(r.size * min_partitions / total))
        step = -(-r.size // pieces)
        out += [
            OffsetRange(r.topic, r.partition, lo, min(lo + step, r.end))
            for lo in range(r.start, r.end, step)
        ]
    return out


def to_json(offsets: dict[Partition, int]) -> dict[str, dict[str, int]]:
    """Spark's Kafka offset form {"topic": {"0": offset}}, as stored in the checkpoint."""
    out: dict[str, dict[str, int]] = {}
    for (topic, p), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(p)] = offset
    return out


def from_json(doc: dict) -> dict[Partition, int]:
    return {(topic, int(p)): int(o) for topic, parts in doc.items() for p, o in parts.items()}
