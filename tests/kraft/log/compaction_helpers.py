"""Shared by the compaction tests: a compacted log filled from (key, value) pairs, one cleaning
pass, and the log read back as records and batch headers."""

from __future__ import annotations

from pathlib import Path

from kraft_log_helpers import headers, read_all

from clients.record.codec import decode_records, encode_batch
from kraft.log.cleaner import clean_log, plan_cleaning
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

BASE_TS = 1_000


def compact_config(**overrides) -> LogConfig:
    # segment.ms=1 lets roll() close the active segment on demand.
    settings = dict(
        cleanup_policy="compact", segment_bytes=600, segment_ms=1, index_interval_bytes=64
    )
    settings.update(overrides)
    return LogConfig(**settings)


def open_log(dir: Path, config: LogConfig | None = None) -> Log:
    return Log.open(dir, config or compact_config(), now_ms=0)


def append(
    log: Log,
    pairs,
    *,
    per_batch: int = 2,
    compression: int = 0,
    epoch: int = 0,
    producer_id: int = -1,
    ts: int | None = None,
) -> None:
    """Append (key, value) pairs as batches of `per_batch`; record i of the log gets timestamp
    BASE_TS + its offset unless `ts` is given."""
    pairs = list(pairs)
    for i in range(0, len(pairs), per_batch):
        chunk = pairs[i : i + per_batch]
        first = log.log_end_offset
        records = [
            (k, v, (), BASE_TS + first + j if ts is None else ts) for j, (k, v) in enumerate(chunk)
        ]
        sequence = first if producer_id >= 0 else -1
        log.append_as_leader(
            encode_batch(
                records,
                compression=compression,
                producer_id=producer_id,
                producer_epoch=0 if producer_id >= 0 else -1,
                base_sequence=sequence,
            ),
            epoch,
            now_ms=0,
        )
    log.high_watermark = log.log_end_offset


def roll(log: Log) -> None:
    """Close the active segment so everything so far becomes cleanable."""
    log.maybe_roll(10**13)


def compact(log: Log, now_ms: int = 10_000, checkpoint: int = 0, **kwargs):
    plan = plan_cleaning(log, checkpoint, now_ms)
    return None if plan is None else clean_log(log, plan, now_ms, **kwargs)


def records(log: Log):
    return decode_records(read_all(log))


def batch_headers(log: Log):
    data = read_all(log)
    return headers(data) if data else []


def latest_by_key(pairs) -> dict:
    """key -> (offset, value) of each key's last record; offsets count from 0."""
    return {k: (offset, v) for offset, (k, v) in enumerate(pairs)}


def live_map(recs) -> dict:
    """What a consumer reading the whole log ends up with: tombstones delete."""
    out = {}
    for r in recs:
        if r.value is None:
            out.pop(r.key, None)
        else:
            out[r.key] = r.value
    return out
