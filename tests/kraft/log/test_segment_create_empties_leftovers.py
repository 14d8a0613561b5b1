"""A segment created over leftover files of the same base offset starts with empty log and
index files: stale index entries would point into bytes that no longer exist."""

from kraft.log.segment import LogSegment


def test_create_over_leftovers_empties_the_log_and_both_indexes(tmp_path):
    base = 100
    for suffix, junk in (
        (".log", b"x" * 64),
        (".index", b"\x00" * 16),
        (".timeindex", b"\x00" * 24),
    ):
        (tmp_path / f"{base:020d}{suffix}").write_bytes(junk)

    seg = LogSegment.create(tmp_path, base, 4096, 10 * 1024 * 1024)

    assert seg.size == 0
    assert (tmp_path / f"{base:020d}.log").stat().st_size == 0
    assert (tmp_path / f"{base:020d}.index").stat().st_size == 0
    assert (tmp_path / f"{base:020d}.timeindex").stat().st_size == 0
