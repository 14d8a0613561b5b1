"""ProducerStateManager as plain data: duplicates of each of the last five batches, gaps, fenced
epochs, new epochs from 0, sequence wrap-around, rebuild from batches = incremental state, and the
snapshot file (round trip; a torn one is ignored and the state rebuilt from the log)."""

from __future__ import annotations

import pytest

from broker.idempotence import producer_state_file as psf
from broker.idempotence.producer_state import (
    APPEND,
    DUPLICATE,
    REJECT,
    SEQUENCE_LIMIT,
    BatchMetadata,
    ProducerEntry,
    ProducerStateManager,
    check_request,
    record_request,
    request_headers,
)
from clients.errors import ErrorCode
from clients.record.batch_header import parse_header
from clients.record.codec import encode_batch
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

PID = 7


def header(pid: int, epoch: int, seq: int, n: int, base_offset: int = 0, ts: int = 1000):
    records = [(None, b"v%d" % i, (), ts + i) for i in range(n)]
    return parse_header(
        encode_batch(
            records,
            base_offset=base_offset,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
        )
    )


def appended(state: ProducerStateManager, pid: int, epoch: int, seq: int, n: int):
    """Check-and-update one batch of `n` records at the state's end; returns the decision."""
    last = (seq + n - 1) % SEQUENCE_LIMIT
    return state.check_and_update(pid, epoch, seq, last, state.end_offset)


def five_batches() -> ProducerStateManager:
    state = ProducerStateManager("t-0")
    for i in range(6):  # six: the first falls out of the window of five
        assert appended(state, PID, 0, i * 10, 10).is_append
    return state


@pytest.mark.parametrize("k", range(1, 6))
def test_duplicate_of_each_of_the_last_five_gets_its_original_offsets(k):
    state = five_batches()
    before = dict(state.producers)
    d = state.check(PID, 0, k * 10, k * 10 + 9)
    assert (d.action, d.first_offset, d.last_offset) == (DUPLICATE, k * 10, k * 10 + 9)
    assert state.producers == before and state.end_offset == 60


def test_a_batch_older_than_the_last_five_is_out_of_order_not_a_duplicate():
    d = five_batches().check(PID, 0, 0, 9)
    assert (d.action, d.error_code) == (REJECT, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)


@pytest.mark.parametrize(
    "seq, last, code",
    [
        (61, 70, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # a gap of one
        (55, 64, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # overlaps the last batch
        (50, 58, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # same start, different end
    ],
)
def test_gaps_and_overlaps_are_rejected_and_change_nothing(seq, last, code):
    state = five_batches()
    before = dict(state.producers)
    d = state.check_and_update(PID, 0, seq, last, 60)
    assert (d.action, d.error_code) == (REJECT, code) and "expected 60" in d.message
    assert state.producers == before and state.end_offset == 60


def test_next_in_sequence_is_appended():
    state = five_batches()
    assert appended(state, PID, 0, 60, 5).is_append
    assert state.entry(PID).last_seq == 64 and state.end_offset == 65


def test_a_stale_epoch_is_fenced():
    state = five_batches()
    assert appended(state, PID, 1, 0, 3).is_append
    d = state.check(PID, 0, 60, 69)
    assert (d.action, d.error_code) == (REJECT, ErrorCode.INVALID_PRODUCER_EPOCH)
    assert "fenced" in d.message
    # even a duplicate of the old epoch's batch is fenced, not answered
    assert state.check(PID, 0, 50, 59).error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_a_new_epoch_must_start_at_zero_and_forgets_the_old_batches():
    state = five_batches()
    d = state.check(PID, 1, 60, 69)
    assert (d.action, d.error_code) == (REJECT, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert "must start at 0" in d.message
    assert appended(state, PID, 1, 0, 4).is_append
    entry = state.entry(PID)
    assert entry.epoch == 1 and [b.first_seq for b in entry.batches] == [0]


def test_an_unknown_producer_is_accepted_at_any_sequence_then_checked():
    # Kafka since KIP-360: its batches left the log (retention) or its state expired; nothing
    # to check the sequence against. From then on it is known and checked as any other.
    state = ProducerStateManager("t-0")
    assert state.check(99, 0, 5, 9).action == APPEND
    assert state.check(99, 3, 0, 9).action == APPEND
    assert appended(state, 99, 0, 5, 9).is_append
    assert state.check(99, 0, 12, 13).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


@pytest.mark.parametrize("epoch, seq", [(-1, 0), (0, -1)])
def test_an_idempotent_batch_without_epoch_or_sequence_is_invalid(epoch, seq):
    assert ProducerStateManager().check(PID, epoch, seq, 0).error_code == ErrorCode.INVALID_RECORD


def test_sequences_wrap_around_at_2_31_minus_1():
    state = ProducerStateManager()
    top = SEQUENCE_LIMIT - 1
    state.load([ProducerEntry(PID, 0, (BatchMetadata(top - 9, top - 5, 0, 4),))], 5)
    assert appended(state, PID, 0, top - 4, 10).is_append  # top-4 .. top, then 0 .. 4
    assert state.entry(PID).last_seq == 4
    d = state.check_batches([header(PID, 0, top - 4, 10)], state.end_offset)[0]
    assert (d.action, d.first_offset, d.last_offset) == (DUPLICATE, 5, 14)
    assert state.check(PID, 0, 5, 9).is_append
    assert state.check(PID, 0, 0, 4).action == REJECT  # not a duplicate: the range differs
    wrapped = ProducerStateManager()
    wrapped.load([ProducerEntry(PID, 0, (BatchMetadata(top - 1, top, 0, 1),))], 2)
    assert wrapped.check(PID, 0, 0, 0).is_append and wrapped.check(PID, 0, 1, 1).action == REJECT


def test_non_idempotent_batches_are_not_checked():
    state = ProducerStateManager()
    h = header(-1, -1, -1, 3)
    assert state.check_batches([h], 0) == [None]
    assert request_headers(encode_batch([(None, b"x", (), 1)])) is None


def test_one_request_may_carry_several_batches_of_a_producer():
    state = ProducerStateManager("t-0")
    hs = [header(PID, 0, 0, 3), header(PID, 0, 3, 2), header(-1, -1, -1, 4), header(PID, 0, 5, 1)]
    assert [d and d.action for d in state.check_batches(hs, 0)] == [APPEND, APPEND, None, APPEND]
    assert state.producers == {}  # checking changes nothing
    record_request(state, hs, 0, 10)
    assert [(b.first_offset, b.last_offset) for b in state.entry(PID).batches] == [
        (0, 2),
        (3, 4),
        (9, 9),
    ]
    assert check_request(state, hs[:2], 10).first_offset == 0  # both again: a duplicate
    mixed = check_request(state, [hs[3], header(PID, 0, 6, 1)], 10)
    assert mixed.error_code == ErrorCode.INVALID_REQUEST and "own" in mixed.message


def test_rebuild_from_batches_equals_incremental_state():
    incremental = ProducerStateManager("t-0")
    log = []
    offset = 0
    script = [
        (1, 0, 0, 3),
        (2, 0, 0, 2),
        (1, 0, 3, 5),
        (-1, -1, -1, 4),
        (1, 0, 8, 1),
        (2, 1, 0, 2),
        (1, 0, 9, 2),
        (1, 0, 11, 1),
        (1, 0, 12, 1),
        (1, 0, 13, 2),
        (3, 0, 0, 1),
    ]
    for pid, epoch, seq, n in script:
        h = header(pid, epoch, seq, n, base_offset=offset)
        if pid >= 0:
            assert check_request(incremental, [h], offset) is None
        record_request(incremental, [h], offset, offset + n)
        log.append(h)
        offset += n
    rebuilt = ProducerStateManager("t-0")
    rebuilt.rebuild_from_batches(log)
    assert rebuilt == incremental and rebuilt.end_offset == offset
    assert len(rebuilt.entry(1).batches) == 5 and rebuilt.entry(2).epoch == 1


def test_snapshot_round_trip(tmp_path):
    state = five_batches()
    assert appended(state, 8, 3, 0, 2).is_append
    path = psf.write_snapshot(tmp_path, state)
    assert path.name == "00000000000000000062.snapshot" and state.snapshot_offset == 62
    loaded = ProducerStateManager("t-0")
    loaded.load(psf.read_snapshot(path), 62)
    assert loaded == state


def test_old_snapshots_are_pruned(tmp_path):
    state = ProducerStateManager()
    for i in range(4):
        appended(state, PID, 0, i, 1)
        psf.write_snapshot(tmp_path, state)
    assert psf.list_snapshots(tmp_path) == [3, 4]


@pytest.mark.parametrize("damage", ["torn", "flipped", "empty", "version"])
def test_a_damaged_snapshot_is_refused(tmp_path, damage):
    path = psf.write_snapshot(tmp_path, five_batches())
    data = bytearray(path.read_bytes())
    if damage == "torn":
        data = data[: len(data) - 7]
    elif damage == "flipped":
        data[-3] ^= 0x40
    elif damage == "empty":
        data = b""
    else:
        data[1] = 9
    path.write_bytes(bytes(data))
    with pytest.raises(psf.CorruptSnapshot):
        psf.read_snapshot(path)


def _log_with_batches(dir, script):
    log = Log.open(dir, LogConfig(segment_bytes=400), now_ms=0)
    for pid, epoch, seq, n in script:
        records = [(None, b"v%d" % i, (), 1000 + i) for i in range(n)]
        log.append_as_leader(
            encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq), 0, 0
        )
    return log


SCRIPT = [(1, 0, 0, 3), (2, 0, 0, 2), (1, 0, 3, 5), (-1, -1, -1, 4), (1, 0, 8, 1), (2, 0, 2, 2)]


def test_load_from_snapshot_then_the_log_after_it_equals_a_full_rebuild(tmp_path):
    log = _log_with_batches(tmp_path / "t-0", SCRIPT[:3])
    psf.write_snapshot(log.dir, psf.load_producer_state(log))
    for pid, epoch, seq, n in SCRIPT[3:]:
        records = [(None, b"x", (), 5)] * n
        log.append_as_leader(
            encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq), 0, 0
        )
    assert log.segment_count > 1
    loaded = psf.load_producer_state(log)
    assert loaded.snapshot_offset == 10
    full = ProducerStateManager("t-0")
    full.rebuild_from_batches(psf.iter_log_headers(log, 0))
    assert loaded == full and loaded.end_offset == log.log_end_offset == 17
    assert [b.first_seq for b in loaded.entry(1).batches] == [0, 3, 8]


def test_a_torn_snapshot_is_ignored_and_the_state_rebuilt_from_the_log(tmp_path):
    log = _log_with_batches(tmp_path / "t-0", SCRIPT)
    expected = psf.load_producer_state(log)
    path = psf.write_snapshot(log.dir, expected)
    path.write_bytes(path.read_bytes()[:-5])  # a write cut short by a crash
    loaded = psf.load_producer_state(log)
    assert loaded == expected and loaded.snapshot_offset == -1
    assert not path.exists()


def test_a_snapshot_past_the_log_end_is_dropped_after_truncation(tmp_path):
    log = _log_with_batches(tmp_path / "t-0", SCRIPT)
    state = psf.load_producer_state(log)
    psf.write_snapshot(log.dir, state)
    log.truncate_to(10)  # drops the batches from offset 10 on
    psf.catch_up(state, log)
    assert psf.list_snapshots(log.dir) == [] and state.end_offset == 10
    assert state.entry(1).last_seq == 7 and state.entry(2).last_seq == 1
