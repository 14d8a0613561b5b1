"""The corrupt nemesis damages only what recovery scans: every damage it picks lies in a batch at
or past the partition's recovery point, and kraft's recovery of the damaged log (Log.open after
an unclean stop) cuts it at the damaged batch and keeps every batch before it intact, so a
replica refetches the rest and never serves the damage. Damage below the point is never chosen."""

from __future__ import annotations

import random

import pytest

from chaos.nemeses.corrupt import KINDS, batches, choose, damage_node
from clients.record.codec import encode_batch
from kraft.log.checkpoint import write_offset_checkpoint
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

CONFIG = LogConfig(segment_bytes=3000, index_interval_bytes=200)


def written_log(data_dir, recovery_point: int) -> tuple[int, dict[int, bytes]]:
    """A crashed node's data dir: partition chaos-0 with 60 batches over a few segments, a
    recovery-point checkpoint; returns (log end, {base offset: the batch's bytes})."""
    log = Log.open(data_dir / "chaos-0", CONFIG, now_ms=0)
    for i in range(60):
        log.append_as_leader(
            encode_batch([(None, str(i).encode() * 8, [], 1000 + i)]), leader_epoch=1, now_ms=0
        )
    log.flush()
    end = log.log_end_offset
    originals = {}
    for seg in sorted((data_dir / "chaos-0").glob("*.log")):
        data = seg.read_bytes()
        for b in batches(seg):
            originals[b.base_offset] = data[b.position : b.position + b.size]
    write_offset_checkpoint(
        data_dir / "recovery-point-offset-checkpoint", {("chaos", 0): recovery_point}
    )
    return end, originals  # no close: a kill -9


def recovered(data_dir, recovery_point: int) -> dict[int, bytes]:
    log = Log.open(data_dir / "chaos-0", CONFIG, recovery_point=recovery_point, now_ms=0)
    out = {}
    for seg in sorted((data_dir / "chaos-0").glob("*.log")):
        data = seg.read_bytes()
        for b in batches(seg):
            out[b.base_offset] = data[b.position : b.position + b.size]
    log.close()
    return out


@pytest.mark.parametrize("seed", range(24))
def test_recovery_cuts_the_damage_and_keeps_what_came_before(tmp_path, seed):
    point = 30
    _, originals = written_log(tmp_path, point)
    damage = damage_node(tmp_path, random.Random(seed))
    assert damage is not None
    if not damage.kind.startswith("index"):
        assert damage.base_offset >= point
    after = recovered(tmp_path, point)
    # Nothing damaged survives, nothing below the recovery point is lost.
    assert all(originals[o] == data for o, data in after.items()), damage.describe()
    assert all(o in after for o in originals if o < point), damage.describe()
    if damage.kind in ("bitflip", "truncate"):
        assert damage.base_offset not in after, damage.describe()
    else:  # a damaged index is rebuilt from an intact log: nothing is cut
        assert after == originals, damage.describe()


def test_every_kind_is_drawn_and_only_past_the_recovery_point(tmp_path):
    written_log(tmp_path, 45)
    drawn = [choose(tmp_path, random.Random(s)) for s in range(200)]
    assert {d.kind for d in drawn} == set(KINDS)
    assert all(d.recovery_point == 45 for d in drawn)
    assert all(d.base_offset >= 45 for d in drawn if not d.kind.startswith("index"))


def test_a_fully_flushed_log_offers_nothing_to_damage(tmp_path):
    written_log(tmp_path, 10**6)
    assert choose(tmp_path, random.Random(0)) is None
