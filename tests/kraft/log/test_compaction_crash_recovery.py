"""A crash at any point of compaction's swap (after each rename or unlink) reopens to a consistent
log: no record lost or duplicated, every record at its original offset, leftovers removed."""

import os

import pytest
from compaction_helpers import (
    append,
    batch_headers,
    compact,
    compact_config,
    open_log,
    records,
    roll,
)

from clients.record.batch_header import parse_header
from clients.record.codec import encode_batch
from clients.record.control import encode_marker_batch
from kraft.log import cleaner_swap
from kraft.log.log import Log
from kraft.log.transaction_index import AbortedTxn


class Crash(Exception):
    pass


def _rewrites(log):
    # Keys rewritten across segments, a tombstone, and segments that empty completely.
    pairs = [(b"k%d" % (i % 6), b"v%d" % i) for i in range(36)]
    pairs += [(b"k1", None)] + [(b"k%d" % (i % 6), b"w%d" % i) for i in range(12)]
    append(log, pairs, per_batch=3)


def _emptied_tail(log):
    # Segments A and B merge into one group; every key of B is rewritten in C, outside the group,
    # so the swap segment ends before B does and a crash can leave B behind.
    append(log, [(b"a%d" % i, b"1") for i in range(4)])
    roll(log)
    append(log, [(b"b%d" % i, b"1") for i in range(4)])
    roll(log)
    append(log, [(b"b%d" % i, b"2") for i in range(4)] + [(b"c%d" % i, b"2") for i in range(6)])


SCENARIOS = {"rewrites": _rewrites, "emptied_tail": _emptied_tail}


def _build(dir, scenario="rewrites"):
    log = open_log(dir, compact_config(segment_bytes=450))
    SCENARIOS[scenario](log)
    roll(log)
    append(log, [(b"k0", b"active")])
    return log


def _mutations(monkeypatch, crash_at):
    """Count os.replace / os.unlink calls; the crash_at-th one raises before it happens."""
    calls = []
    real_replace, real_unlink = os.replace, os.unlink

    def counted(real):
        def call(*args, **kwargs):
            if len(calls) == crash_at:
                raise Crash(f"crash before {real.__name__}{args}")
            calls.append(args)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(os, "replace", counted(real_replace))
    monkeypatch.setattr(os, "unlink", counted(real_unlink))
    return calls


def _abandon(log: Log) -> None:
    """What a crash leaves: open fds die with the process, nothing else is tidied."""
    for seg in log.segments:
        try:
            seg.close()
        except OSError:
            pass


def _check_consistent(dir, original, cleaned):
    log = Log.open(dir, compact_config(segment_bytes=450), now_ms=0)
    got = [(r.offset, r.key, r.value) for r in records(log)]
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(set(offsets))  # none duplicated
    assert set(got) <= set(original)  # each at its own offset
    assert set(cleaned) <= set(got)  # nothing kept by cleaning lost
    assert log.log_end_offset == original[-1][0] + 1
    leftovers = [n for n in os.listdir(dir) if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert leftovers == []
    return log


def _count_mutations(tmp_path, scenario):
    log = _build(tmp_path / "count" / "t-0", scenario)
    original = [(r.offset, r.key, r.value) for r in records(log)]
    calls = []
    real_replace, real_unlink = os.replace, os.unlink
    try:
        os.replace = lambda *a, **k: (calls.append(a), real_replace(*a, **k))[1]
        os.unlink = lambda *a, **k: (calls.append(a), real_unlink(*a, **k))[1]
        compact(log)
    finally:
        os.replace, os.unlink = real_replace, real_unlink
    cleaned = [(r.offset, r.key, r.value) for r in records(log)]
    return len(calls), original, cleaned


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_crash_at_every_step_of_the_swap_recovers_consistently(tmp_path, monkeypatch, scenario):
    # The crash is the process's (the page cache survives), so fsync only costs time here.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    total, original, cleaned = _count_mutations(tmp_path, scenario)
    assert total >= 9 and len(cleaned) < len(original)
    for crash_at in range(total):
        dir = tmp_path / f"crash{crash_at}" / "t-0"
        log = _build(dir, scenario)
        with monkeypatch.context() as patch:
            _mutations(patch, crash_at)
            with pytest.raises(Crash):
                compact(log)
        _abandon(log)
        reopened = _check_consistent(dir, original, cleaned)
        # Cleaning again from scratch reaches the same log as an uninterrupted cleaning.
        reopened.high_watermark = reopened.log_end_offset
        compact(reopened)
        assert [(r.offset, r.key, r.value) for r in records(reopened)] == cleaned, crash_at
        reopened.close()


def test_leftover_cleaned_files_are_discarded_at_open(tmp_path):
    dir = tmp_path / "t-0"
    log = _build(dir)
    original = [(r.offset, r.key, r.value) for r in records(log)]
    log.close()
    base = f"{0:020d}"
    for suffix in (".log.cleaned", ".index.cleaned", ".timeindex.cleaned"):
        (dir / (base + suffix)).write_bytes(b"half-written garbage")
    (dir / (base + ".index.swap")).write_bytes(b"")  # an index renamed before its log
    reopened = _check_consistent(dir, original, original)
    assert [(r.offset, r.key, r.value) for r in records(reopened)] == original
    reopened.close()


def test_a_committed_swap_replaces_exactly_the_segments_it_covers(tmp_path):
    dir = tmp_path / "t-0"
    log = _build(dir)
    original = [(r.offset, r.key, r.value) for r in records(log)]
    second = log.segments[1]
    end = second.next_offset
    # Stage a committed swap of the first two segments by hand: it keeps only the last batch of
    # the second one, and nothing old has been deleted yet.
    last_pos = list(second.headers())[-1][0]
    last_batch = os.pread(second.fd, second.size - last_pos, last_pos)
    log.close()
    (dir / f"{0:020d}.log.swap").write_bytes(last_batch)
    (dir / f"{0:020d}.index.swap").write_bytes(b"")
    assert cleaner_swap.complete_interrupted_swaps(dir) == 1
    assert sorted(os.listdir(dir))[:2] == [f"{0:020d}.log", f"{end:020d}.index"]
    reopened = Log.open(dir, compact_config(segment_bytes=450), now_ms=0)
    got = [(r.offset, r.key, r.value) for r in records(reopened)]
    kept = [r for r in original if r[0] >= parse_header(last_batch).base_offset]
    assert got == kept
    assert reopened.segments[0].base_offset == 0 and reopened.segments[1].base_offset == end
    reopened.close()


def _with_aborted_txn(dir, *, then_committed=False):
    """A compacted log whose producer 7 aborted a transaction (and, with `then_committed`, went
    on with a committed one, so that the abort marker is not its last batch and may go)."""
    log = open_log(dir, compact_config(segment_bytes=450))
    _rewrites(log)
    first = log.log_end_offset
    _txn_batch(log, b"k2", b"aborted", sequence=0)
    marker = log.log_end_offset
    log.append_as_leader(encode_marker_batch(7, 0, False, 0, 1), 0, now_ms=0, from_coordinator=True)
    entry = AbortedTxn(7, first, marker, marker + 1)
    log.append_aborted_txn(entry)
    if then_committed:
        _txn_batch(log, b"k3", b"committed", sequence=1)
        log.append_as_leader(
            encode_marker_batch(7, 0, True, 0, 1), 0, now_ms=0, from_coordinator=True
        )
        log.high_watermark = log.log_end_offset
    roll(log)
    append(log, [(b"k0", b"active")])
    return log, entry


def _txn_batch(log, key, value, sequence):
    log.append_as_leader(
        encode_batch(
            [(key, value, (), 1)],
            producer_id=7,
            producer_epoch=0,
            base_sequence=sequence,
            is_transactional=True,
        ),
        0,
        now_ms=0,
    )


def _reopened_after_each_crash(tmp_path, monkeypatch, build, now_ms):
    """For every os.replace / os.unlink of one cleaning pass at `now_ms`: build a log, crash
    the pass there, reopen; yields (crash step, what build returned, the reopened log)."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    log, _ = build(tmp_path / "count" / "t-0")
    with monkeypatch.context() as patch:
        calls = _mutations(patch, 10**6)
        compact(log, now_ms=now_ms)
    log.close()
    assert calls
    for crash_at in range(len(calls)):
        dir = tmp_path / f"crash{crash_at}" / "t-0"
        log, built = build(dir)
        with monkeypatch.context() as patch:
            _mutations(patch, crash_at)
            with pytest.raises(Crash):
                compact(log, now_ms=now_ms)
        _abandon(log)
        reopened = Log.open(dir, compact_config(segment_bytes=450), now_ms=0)
        yield crash_at, built, reopened
        reopened.close()


def test_a_crash_at_every_step_keeps_the_aborted_transactions_index(tmp_path, monkeypatch):
    """The cleaned segment's .txnindex swaps in with it: whichever side of the commit point a
    crash falls, the reopened log lists the aborted transaction (its marker stays this pass)."""
    log, entry = _with_aborted_txn(tmp_path / "whole" / "t-0")
    compact(log)
    assert log.collect_aborted_txns(0, log.log_end_offset) == [entry]
    log.close()
    for crash_at, entry, reopened in _reopened_after_each_crash(
        tmp_path, monkeypatch, _with_aborted_txn, now_ms=10_000
    ):
        assert reopened.collect_aborted_txns(0, reopened.log_end_offset) == [entry], crash_at


def test_a_crash_in_the_pass_that_drops_an_abort_marker_drops_its_txnindex_entry(
    tmp_path, monkeypatch
):
    """The pass after the one that removed an aborted transaction's data removes its marker and
    its .txnindex entry. A crash at any step of that swap must not bring the old segment's entry
    back without the marker: a read_committed consumer would take the producer's next,
    committed, transaction for aborted data and skip it."""
    late = 10**12  # past delete.retention.ms: the marker may go

    def data_cleaned(dir):
        log, entry = _with_aborted_txn(dir, then_committed=True)
        compact(log)  # the aborted data goes; marker and entry stay
        assert log.collect_aborted_txns(0, log.log_end_offset) == [entry]
        return log, entry

    def markers(log):
        return [h.base_offset for h in batch_headers(log) if h.is_control]

    log, entry = data_cleaned(tmp_path / "whole" / "t-0")
    compact(log, now_ms=late)
    assert entry.last_offset not in markers(log)
    assert log.collect_aborted_txns(0, log.log_end_offset) == []
    log.close()
    for crash_at, entry, reopened in _reopened_after_each_crash(
        tmp_path, monkeypatch, data_cleaned, now_ms=late
    ):
        listed = reopened.collect_aborted_txns(0, reopened.log_end_offset)
        assert bool(listed) == (entry.last_offset in markers(reopened)), (crash_at, listed)
