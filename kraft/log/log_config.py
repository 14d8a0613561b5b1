"""Per-topic log configuration under Kafka's key names: parsing and validation with errors that
name the key and what is valid, and the frozen LogConfig the log engine reads."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigError(ValueError):
    """A bad topic config; the message names the key and says what is valid."""


@dataclass(frozen=True)
class ConfigDef:
    name: str  # Kafka's key, e.g. "retention.ms"
    field: str  # LogConfig attribute
    type: str  # "int", "long", "double", "boolean", "string", "list"
    default: object
    doc: str
    valid: str  # what is valid, in words (shown in errors)
    validator: Callable[[object], bool] = lambda value: True


def _range(lo=None, hi=None):
    return lambda v: (lo is None or v >= lo) and (hi is None or v <= hi)


def _one_of(*choices):
    return lambda v: v in choices


def _policy(v) -> bool:
    parts = v.split(",")
    return (
        bool(v) and all(p in ("delete", "compact") for p in parts) and len(set(parts)) == len(parts)
    )


_DEFS = [
    ConfigDef(
        "segment.bytes",
        "segment_bytes",
        "int",
        1073741824,
        "Size of one segment file; a new segment is rolled when the next append would exceed it.",
        "an int in bytes, at least 14",
        _range(14, INT_MAX),
    ),
    ConfigDef(
        "segment.ms",
        "segment_ms",
        "long",
        604800000,
        "Roll a new segment once the active one is this old, even if not full.",
        "a long in ms, at least 1",
        _range(1, LONG_MAX),
    ),
    # Kafka's keys kraft does not implement take only the value that describes what kraft does,
    # so a setting is never accepted and then silently ignored.
    ConfigDef(
        "segment.jitter.ms",
        "segment_jitter_ms",
        "long",
        0,
        "Maximum random jitter subtracted from segment.ms; kraft applies none.",
        "only 0: kraft applies no jitter to segment.ms",
        _one_of(0),
    ),
    ConfigDef(
        "segment.index.bytes",
        "segment_index_bytes",
        "int",
        10485760,
        "Maximum size of a segment's offset index; a full index rolls the segment.",
        "an int in bytes, at least 4",
        _range(4, INT_MAX),
    ),
    ConfigDef(
        "index.interval.bytes",
        "index_interval_bytes",
        "int",
        4096,
        "Log bytes between two offset (and time) index entries.",
        "an int in bytes, at least 0",
        _range(0, INT_MAX),
    ),
    ConfigDef(
        "retention.ms",
        "retention_ms",
        "long",
        604800000,
        "Delete a segment once its newest timestamp is older than this.",
        "a long in ms, -1 for unlimited",
        _range(-1, LONG_MAX),
    ),
    ConfigDef(
        "retention.bytes",
        "retention_bytes",
        "long",
        -1,
        "Delete the oldest segments while the log is larger than this.",
        "a long in bytes, -1 for unlimited",
        _range(-1, LONG_MAX),
    ),
    ConfigDef(
        "max.message.bytes",
        "max_message_bytes",
        "int",
        1048588,
        "Largest record batch the log accepts.",
        "an int in bytes, at least 0",
        _range(0, INT_MAX),
    ),
    ConfigDef(
        "flush.messages",
        "flush_messages",
        "long",
        LONG_MAX,
        "fsync the log after this many messages.",
        "a long, at least 1",
        _range(1, LONG_MAX),
    ),
    ConfigDef(
        "flush.ms",
        "flush_ms",
        "long",
        LONG_MAX,
        "fsync the log when this long has passed since the last fsync.",
        "a long in ms, at least 0",
        _range(0, LONG_MAX),
    ),
    ConfigDef(
        "cleanup.policy",
        "cleanup_policy",
        "list",
        "delete",
        "'delete' removes old segments, 'compact' keeps the latest value per key.",
        "'delete', 'compact' or 'compact,delete'",
        _policy,
    ),
    ConfigDef(
        "message.timestamp.type",
        "message_timestamp_type",
        "string",
        "CreateTime",
        "Whether batches keep the producer's timestamp or get the broker's append time.",
        "'CreateTime' or 'LogAppendTime'",
        _one_of("CreateTime", "LogAppendTime"),
    ),
    ConfigDef(
        "message.timestamp.before.max.ms",
        "message_timestamp_before_max_ms",
        "long",
        LONG_MAX,
        "How far in the past a CreateTime timestamp may be.",
        "a long in ms, at least 0",
        _range(0, LONG_MAX),
    ),
    ConfigDef(
        "message.timestamp.after.max.ms",
        "message_timestamp_after_max_ms",
        "long",
        LONG_MAX,
        "How far in the future a CreateTime timestamp may be.",
        "a long in ms, at least 0",
        _range(0, LONG_MAX),
    ),
    ConfigDef(
        "min.insync.replicas",
        "min_insync_replicas",
        "int",
        1,
        "acks=all needs at least this many in-sync replicas.",
        "an int, at least 1",
        _range(1, INT_MAX),
    ),
    ConfigDef(
        "unclean.leader.election.enable",
        "unclean_leader_election_enable",
        "boolean",
        False,
        "Allow an out-of-sync replica to become leader (may lose data).",
        "true or false",
    ),
    ConfigDef(
        "delete.retention.ms",
        "delete_retention_ms",
        "long",
        86400000,
        "How long compaction keeps tombstones.",
        "a long in ms, at least 0",
        _range(0, LONG_MAX),
    ),
    ConfigDef(
        "min.compaction.lag.ms",
        "min_compaction_lag_ms",
        "long",
        0,
        "A record stays uncompacted at least this long.",
        "a long in ms, at least 0",
        _range(0, LONG_MAX),
    ),
    ConfigDef(
        "max.compaction.lag.ms",
        "max_compaction_lag_ms",
        "long",
        LONG_MAX,
        "A record becomes eligible for compaction at most this long after it was written.",
        "a long in ms, at least 1",
        _range(1, LONG_MAX),
    ),
    ConfigDef(
        "min.cleanable.dirty.ratio",
        "min_cleanable_dirty_ratio",
        "double",
        0.5,
        "Compact when this fraction of the log is uncompacted.",
        "a number between 0 and 1",
        _range(0.0, 1.0),
    ),
    ConfigDef(
        "compression.type",
        "compression_type",
        "string",
        "producer",
        "Final compression of the topic: the leader recompresses batches in another codec; "
        "'producer' keeps the producer's batches as they are.",
        "'producer', 'uncompressed', 'gzip', 'snappy', 'lz4' or 'zstd'",
        _one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
    ),
    ConfigDef(
        "file.delete.delay.ms",
        "file_delete_delay_ms",
        "long",
        0,
        "Delay before a deleted segment's files are removed; kraft removes them at once.",
        "only 0: kraft deletes segment files at once",
        _one_of(0),
    ),
    ConfigDef(
        "preallocate",
        "preallocate",
        "boolean",
        False,
        "Preallocate segment files; kraft never does.",
        "only false: kraft does not preallocate segment files",
        _one_of(False),
    ),
]
TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _DEFS}


def _parse(d: ConfigDef, raw) -> object:
    text = str(raw).strip()
    if d.type in ("int", "long"):
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"{d.name}: {raw!r} is not a number ({d.valid})") from None
    elif d.type == "double":
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{d.name}: {raw!r} is not a number ({d.valid})") from None
    elif d.type == "boolean":
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"{d.name}: {raw!r} is not a boolean ({d.valid})")
        value = text.lower() == "true"
    elif d.type == "list":
        value = ",".join(part.strip() for part in text.split(","))
    else:
        value = text
    if not d.validator(value):
        raise ConfigError(f"{d.name}: {raw!r} is not valid ({d.valid})")
    return value


def _format(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000
    retention_bytes: int = -1
    max_message_bytes: int = 1048588
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    cleanup_policy: str = "delete"
    message_timestamp_type: str = "CreateTime"
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    compression_type: str = "producer"
    segment_jitter_ms: int = 0
    file_delete_delay_ms: int = 0
    preallocate: bool = False
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX

    @classmethod
    def from_props(cls, props: Mapping[str, str], defaults: LogConfig | None = None) -> LogConfig:
        """Overlay Kafka-named `props` on `defaults` (or Kafka's defaults)."""
        changes = {}
        for key, raw in props.items():
            d = TOPIC_CONFIGS.get(key)
            if d is None:
                close = difflib.get_close_matches(key, TOPIC_CONFIGS, n=1)
                hint = (
                    f"; did you mean '{close[0]}'?"
                    if close
                    else f"; valid keys: {', '.join(sorted(TOPIC_CONFIGS))}"
                )
                raise ConfigError(f"{key}: unknown topic config{hint}")
            changes[d.field] = _parse(d, raw)
        return dataclasses.replace(defaults or cls(), **changes)

    def to_props(self) -> dict[str, str]:
        return {d.name: _format(getattr(self, d.field)) for d in _DEFS}

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"
