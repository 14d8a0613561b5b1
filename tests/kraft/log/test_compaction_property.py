"""Property: for any sequence of keyed writes and deletes, appended in any batch sizes and codecs
and compacted any number of times in between, a consumer reading the compacted log ends with the
same key -> value map as one reading the original, and every kept record is at its own offset."""

import tempfile
from pathlib import Path

import pytest
from compaction_helpers import (
    BASE_TS,
    append,
    compact,
    compact_config,
    live_map,
    open_log,
    records,
    roll,
)
from hypothesis import given, settings
from hypothesis import strategies as st

DAY = 86_400_000

ops = st.lists(
    st.tuples(
        st.integers(0, 7),  # key
        st.one_of(st.none(), st.binary(max_size=6)),
    ),  # None: a tombstone
    min_size=1,
    max_size=80,
)


@pytest.mark.slow  # 60 examples, each cleaning a log on disk
@settings(max_examples=60, deadline=None)
@given(
    rounds=st.lists(ops, min_size=1, max_size=3),
    per_batch=st.integers(1, 5),
    codec=st.sampled_from([0, 1, 2, 3, 4]),
    segment_bytes=st.integers(200, 1200),
    late=st.booleans(),
    max_map_entries=st.sampled_from([2, 1 << 20]),
)
def test_compaction_preserves_the_latest_value_of_every_key_at_its_offset(
    rounds, per_batch, codec, segment_bytes, late, max_map_entries
):
    # `late` cleans after delete.retention.ms, so tombstones go as well.
    now = BASE_TS + 1_000 + (DAY if late else 0)
    with tempfile.TemporaryDirectory() as tmp:
        log = open_log(Path(tmp) / "t-0", compact_config(segment_bytes=segment_bytes))
        written, checkpoint = [], 0
        for round_ops in rounds:
            pairs = [(b"k%d" % k, v) for k, v in round_ops]
            append(log, pairs, per_batch=per_batch, compression=codec)
            written += pairs
            roll(log)
            result = compact(
                log, now_ms=now, checkpoint=checkpoint, max_map_entries=max_map_entries
            )
            checkpoint = result.end_offset if result else checkpoint
        got = records(log)
        expected = {}
        for k, v in written:
            if v is None:
                expected.pop(k, None)
            else:
                expected[k] = v
        assert live_map(got) == expected
        for r in got:  # each record at its original offset
            assert written[r.offset] == (r.key, r.value)
        offsets = [r.offset for r in got]
        assert offsets == sorted(set(offsets))
        last = {k: i for i, (k, _) in enumerate(written)}
        if max_map_entries > 8 and not late:  # one full pass: exactly the last records
            assert offsets == sorted(last.values())
        assert log.log_end_offset == len(written)
        log.close()
