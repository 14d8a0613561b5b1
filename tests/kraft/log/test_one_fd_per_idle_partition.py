"""A partition's segment holds one file descriptor (its .log): the indexes open their file only
for each write, so the open-file limit allows three times the partitions it did."""

import os

from kraft_log_helpers import make_batch

from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_each_partition_holds_one_fd_after_creation_and_appends(tmp_path):
    manager = LogManager([tmp_path], LogConfig(index_interval_bytes=100), now_ms=0)
    before = _open_fds()
    logs = [manager.get_or_create_log("t", p, topic_id="ab" * 16) for p in range(50)]
    for log in logs:
        for i in range(5):  # enough bytes for offset and time index entries
            log.append_as_leader(make_batch(3, base_ts=1000 + i), leader_epoch=1, now_ms=0)
        assert len(log.segments[0].offset_index) > 0
    assert _open_fds() - before == 50
    manager.flush_due(10**12)
    manager.close()
    assert _open_fds() <= before
