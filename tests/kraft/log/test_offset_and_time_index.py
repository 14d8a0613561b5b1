import struct

from kraft_log_helpers import make_batch

from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.log.offset_index import OffsetIndex
from kraft.log.time_index import TimeIndex


def test_offset_index_lookup_and_file_format(tmp_path):
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 1000)
    index.append([(105, 300), (110, 700), (120, 1500)])
    assert index.lookup(99) == (100, 0)
    assert index.lookup(105) == (105, 300)
    assert index.lookup(119) == (110, 700)
    assert index.lookup(10**9) == (120, 1500)
    assert not index.path.exists()  # entries reach the file at flush or close
    index.flush()
    raw = index.path.read_bytes()
    assert raw == struct.pack(">iiiiii", 5, 300, 10, 700, 20, 1500)
    index.truncate_to_position(700)
    assert index.path.read_bytes() == struct.pack(">ii", 5, 300)
    index.close()
    assert OffsetIndex.load(index.path, 100, 1000, log_size=800).lookup(200) == (105, 300)


def test_time_index_lookup_and_file_format(tmp_path):
    index = TimeIndex(tmp_path / "00000000000000000100.timeindex", 100, 1000)
    index.append([(1000, 104), (2000, 110)])
    assert index.lookup(999) == (-1, 100)
    assert index.lookup(1500) == (1000, 104)
    assert index.lookup(2000) == (2000, 110)
    index.close()
    assert index.path.read_bytes() == struct.pack(">qiqi", 1000, 4, 2000, 10)


def test_log_writes_an_index_entry_every_interval(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=250), now_ms=0)
    size = len(make_batch(2))
    for i in range(20):
        log.append_as_leader(make_batch(2, base_ts=1000 + 10 * i), 0, now_ms=0)
    seg = log.segments[0]
    # Kafka's rule: an entry (batch last offset -> batch position) once more than the interval
    # has been written since the last entry.
    expected, since = [], 0
    for i in range(20):
        if since > 250:
            expected.append((2 * i + 1, i * size))
            since = 0
        since += size
    assert len(expected) >= 4
    assert list(zip(seg.offset_index.offsets, seg.offset_index.positions)) == expected
    assert list(seg.time_index.timestamps) == sorted(set(seg.time_index.timestamps))


def test_offset_for_timestamp(tmp_path):
    log = Log.open(
        tmp_path / "t-0", LogConfig(segment_bytes=500, index_interval_bytes=100), now_ms=0
    )
    for i in range(30):  # batch i holds offsets 2i, 2i+1 with timestamps 1000+100i, +1
        log.append_as_leader(make_batch(2, base_ts=1000 + 100 * i), 0, now_ms=0)
    assert log.segment_count > 2
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (1, 1001)
    assert log.offset_for_timestamp(1002) == (2, 1100)
    assert log.offset_for_timestamp(2550) == (32, 2600)
    assert log.offset_for_timestamp(3901) == (59, 3901)
    assert log.offset_for_timestamp(3902) is None
