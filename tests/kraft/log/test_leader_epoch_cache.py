from kraft_log_helpers import make_batch

from kraft.log.leader_epoch_cache import LeaderEpochCache
from kraft.log.log import Log
from kraft.log.log_config import LogConfig


def test_assign_end_offset_for_and_truncation(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochCache(path)
    cache.assign(1, 0)
    cache.assign(1, 5)  # same epoch later: no change
    cache.assign(3, 10)
    cache.assign(4, 20)
    assert cache.entries == [(1, 0), (3, 10), (4, 20)]
    assert path.read_text() == "0\n3\n1 0\n3 10\n4 20\n"
    assert cache.end_offset_for(4, 33) == (4, 33)  # latest epoch: the log end
    assert cache.end_offset_for(3, 33) == (3, 20)
    assert cache.end_offset_for(2, 33) == (1, 10)  # unknown epoch: the largest below it
    assert cache.end_offset_for(0, 33) == (0, 0)  # below everything
    assert cache.end_offset_for(5, 33) == (-1, -1)
    assert cache.end_offset_for(-1, 33) == (-1, -1)
    assert cache.epoch_for_offset(15) == 3
    cache.truncate_from_end(20)
    assert cache.entries == [(1, 0), (3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(3, 12)]
    assert LeaderEpochCache.load(path).entries == [(3, 12)]
    cache.assign(2, 30)  # an older epoch removes contradicting entries
    assert cache.entries == [(2, 30)]


def test_log_tracks_epochs_and_answers_end_offset_for_epoch(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(), now_ms=0)
    for epoch, n in ((0, 3), (2, 4), (2, 1), (5, 2)):
        log.append_as_leader(make_batch(n), epoch, now_ms=0)
    assert log.leader_epoch_cache.entries == [(0, 0), (2, 3), (5, 8)]
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (0, 3)
    assert log.end_offset_for_epoch(2) == (2, 8)
    assert log.end_offset_for_epoch(5) == (5, 10)
    assert log.end_offset_for_epoch(6) == (-1, -1)
    # KIP-101: a follower truncates to the leader's answer, then appends the new epoch.
    log.truncate_to(log.end_offset_for_epoch(2)[1])
    assert log.leader_epoch_cache.entries == [(0, 0), (2, 3)]
    reopened = Log.open(tmp_path / "t-0", LogConfig(), now_ms=0, recovery_point=10**9)
    assert reopened.leader_epoch_cache.entries == [(0, 0), (2, 3)]
