"""The core over kraft.log.Log (real segment files, real batches) behind the ReplicaLog seam: the
KIP-101 scenario again, so the protocol's promises hold for the log the broker will use."""

from replication_helpers import CONFIG

from broker.replication import EpochEndOffset, FetchAnswer, PartitionState, Truncated
from broker.replication.disk_log import DiskReplicaLog
from clients.record.codec import decode_records, encode_batch
from kraft.log.log import Log
from kraft.log.log_config import LogConfig


def _replica(tmp_path, replica_id):
    log = DiskReplicaLog(Log.open(tmp_path / f"r{replica_id}" / "t-0", LogConfig(), now_ms=0))
    return log, PartitionState(replica_id, log, CONFIG, broker_epoch=1)


def _fetch(follower, leader, now_ms, max_bytes=1 << 20):
    (_, fstate), (llog, lstate) = follower, leader
    req = fstate.fetch_request()
    d = lstate.handle_follower_fetch(
        req.replica_id,
        req.fetch_offset,
        req.last_fetched_epoch,
        req.current_leader_epoch,
        now_ms,
        req.broker_epoch,
    )
    records = llog.log.read(d.read_from, max_bytes).records if d.read_from is not None else b""
    return d, fstate.handle_fetch_response(req, FetchAnswer.of(d, records), now_ms)


def _values(replica):
    log = replica[0].log
    return (
        [r.value for r in decode_records(log.read(0, 1 << 20).records)]
        if log.log_end_offset
        else []
    )


def _batch(value):
    return encode_batch([(None, value, (), 1_000)])


def test_kip101_truncation_on_the_segment_log(tmp_path):
    r1, r2, r3 = (_replica(tmp_path, i) for i in (1, 2, 3))
    r1[1].become_leader(1, 0, (1, 2, 3), (1, 2, 3), now_ms=0)
    for r in (r2, r3):
        r[1].become_follower(1, 1, 0, now_ms=0)
    for v in (b"a", b"b", b"c", b"d", b"e"):
        r1[1].append_as_leader(_batch(v), acks=-1, now_ms=0)
    size = len(_batch(b"a"))
    _fetch(r2, r1, 1)  # r2 takes all five
    _fetch(r3, r1, 1, max_bytes=3 * size)  # r3 takes a, b, c
    _fetch(r2, r1, 2)  # r2 acknowledges five; its answer says HW 0
    _fetch(r3, r1, 3, max_bytes=0)  # r3 acknowledges three (HW 3), gets d (a whole batch)
    assert (r1[1].high_watermark, r2[1].high_watermark) == (3, 0)

    # r1 dies; r3 leads epoch 2 from offset 4 and appends f; e (epoch 1) was never committed.
    r3[1].become_leader(2, 1, (2, 3), (1, 2, 3), now_ms=10)
    r3[1].append_as_leader(_batch(b"f"), acks=1, now_ms=10)
    r2[1].become_follower(3, 2, 1, now_ms=10)
    d, effects = _fetch(r2, r3, 11)
    assert d.diverging_epoch == EpochEndOffset(1, 4) and effects == (Truncated(4),)
    _fetch(r2, r3, 12)  # cut at 4, not at its HW of 0
    assert _values(r2) == _values(r3) == [b"a", b"b", b"c", b"d", b"f"]
    assert r2[0].log.leader_epoch_cache.entries == [(1, 0), (2, 4)]


def test_a_deposed_leaders_empty_epoch_is_dropped_from_the_checkpoint(tmp_path):
    r1, r2 = _replica(tmp_path, 1), _replica(tmp_path, 2)
    r1[1].become_leader(1, 0, (1, 2), (1, 2), now_ms=0)
    r2[1].become_follower(1, 1, 0, now_ms=0)
    r1[1].append_as_leader(_batch(b"a"), acks=1, now_ms=0)
    _fetch(r2, r1, 1)
    r1[1].become_leader(5, 1, (1, 2), (1, 2), now_ms=2)  # led epoch 5, appended nothing
    r2[1].become_leader(6, 2, (1, 2), (1, 2), now_ms=3)
    r2[1].append_as_leader(_batch(b"b"), acks=1, now_ms=3)
    r1[1].become_follower(2, 6, 2, now_ms=3)
    d, effects = _fetch(r1, r2, 4)
    assert d.diverging_epoch == EpochEndOffset(1, 1) and effects == (Truncated(1),)
    assert r1[0].log.leader_epoch_cache.entries == [(1, 0)]
    assert Log.open(r1[0].log.dir, LogConfig(), now_ms=5).leader_epoch_cache.entries == [(1, 0)]
    _fetch(r1, r2, 5)
    assert _values(r1) == [b"a", b"b"]
